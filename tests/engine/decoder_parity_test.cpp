// GPT-2 and Llama against transformers' GPT2LMHeadModel and LlamaForCausalLM (exported by
// tests/reference/export_transformers_decoders.py): the full-size models' parameters in name, shape and order, their
// counts, and a reduced model's logits and causal-LM loss with transformers' weights.

#include <gtest/gtest.h>

#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>

#include "models/decoder.h"
#include "models/registry.h"
#include "reference_file.h"

namespace gpubench::engine {
namespace {

using Ref = c10::Dict<c10::IValue, c10::IValue>;

void expect_same_parameters(const torch::nn::Module& m, const Ref& ref) {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : m.named_parameters()) {
    names.push_back(p.key());
    shapes.push_back(p.value().sizes().vec());
  }
  EXPECT_EQ(names, reference_names(ref, "param_names"));
  EXPECT_EQ(shapes, reference_shapes(ref, "param_shapes"));
  EXPECT_EQ(count_parameters(m), ref.at("parameters").toInt());
}

/// The reduced model built through the registry (as a run builds it), with transformers' weights copied in (`state`:
/// the fixture's key of them).
std::unique_ptr<Workload> reduced(const std::string& model, const std::map<std::string, nlohmann::json>& keys,
                                  const Ref& ref, const std::string& kernels = "aten", const std::string& state_key = "state") {
  Scenario s;
  s.model = model;
  s.kernels = kernels;
  s.model_options = keys;
  s.model_options["seq_len"] = state_key == "state" ? 24 : 128;  // generation: a prompt of 8 and 64 new tokens
  auto w = find_model(model).make(s);
  const auto state = ref.at(state_key).toGenericDict();
  torch::NoGradGuard no_grad;
  std::vector<std::string> names;
  for (auto& p : w->module()->named_parameters()) {
    names.push_back(p.key());
    p.value().copy_(state.at(p.key()).toTensor());
  }
  EXPECT_EQ(names, reference_names(ref, "small_param_names"));
  w->module()->eval();
  return w;
}

void expect_reference_outputs(Workload& w, const Ref& ref) {
  Batch b;
  b.inputs.push_back(ref.at("input_ids").toTensor());
  torch::NoGradGuard no_grad;
  const at::Tensor logits = w.infer(b);
  const at::Tensor expected = ref.at("logits").toTensor();
  ASSERT_EQ(logits.sizes(), expected.sizes());
  EXPECT_LT((logits - expected).abs().max().item<double>(), 1e-4);
  // The workload's own labels (next token, last position ignored) give transformers' loss with labels = input_ids.
  torch::Generator gen = at::detail::getDefaultCPUGenerator();
  Batch mine = w.make_batch(2, torch::TensorOptions(), gen);
  const at::Tensor ids = ref.at("input_ids").toTensor();
  mine.inputs[0].copy_(ids);
  mine.target.narrow(1, 0, ids.size(1) - 1).copy_(ids.narrow(1, 1, ids.size(1) - 1));
  EXPECT_NEAR(w.loss(mine).item<double>(), ref.at("loss").toTensor().item<double>(), 1e-5);
}

/// Greedy decoding over the KV cache as mode: generate does it (prefill, then one token per step at a device
/// position, each step's attention window the first multiple of `window_step` above its position): the new tokens,
/// and each step's logits.
std::pair<at::Tensor, std::vector<at::Tensor>> greedy(Workload& w, const at::Tensor& prompt, int64_t fresh,
                                                      int64_t window_step) {
  TextGenerator* g = w.generator();
  EXPECT_NE(g, nullptr);
  c10::InferenceMode no_autograd;
  const int64_t b = prompt.size(0), p = prompt.size(1);
  g->allocate(b, p + fresh, at::TensorOptions().dtype(at::kFloat));
  std::vector<at::Tensor> logits{g->prefill(prompt)};
  at::Tensor token = logits.back().argmax(-1, true);
  std::vector<at::Tensor> out{token};
  at::Tensor pos = at::full({1}, p, at::kLong);
  for (int64_t i = 1; i < fresh; ++i) {
    const int64_t at_pos = p + i - 1;
    const int64_t window = std::min(p + fresh, (at_pos / window_step + 1) * window_step);
    logits.push_back(g->decode(token, pos, window));
    token = logits.back().argmax(-1, true);
    out.push_back(token);
    pos.add_(1);
  }
  return {at::cat(out, 1), logits};
}

/// The same generation by whole greedy steps (TextGenerator::decode_greedy, as mode: generate runs kernels: fused:
/// the token, the history and the position moved by the step itself): the new tokens, or undefined where the model
/// has no such step (kernels: aten).
at::Tensor greedy_by_steps(Workload& w, const at::Tensor& prompt, int64_t fresh, int64_t window_step) {
  TextGenerator* g = w.generator();
  c10::InferenceMode no_autograd;
  const int64_t b = prompt.size(0), p = prompt.size(1);
  g->allocate(b, p + fresh, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor token = g->prefill(prompt).argmax(-1, true);
  const at::Tensor history = at::zeros({b, fresh}, at::kLong), pos = at::full({1}, p, at::kLong);
  history.narrow(1, 0, 1).copy_(token);
  for (int64_t i = 1; i < fresh; ++i) {
    const int64_t window = std::min(p + fresh, ((p + i - 1) / window_step + 1) * window_step);
    if (!g->decode_greedy({token, pos, history, p - 1}, window)) return {};
  }
  return history;
}

void expect_transformers_generation(Workload& w, const Ref& ref) {
  const at::Tensor prompt = ref.at("generate_prompt").toTensor();
  const at::Tensor expected = ref.at("generate_tokens").toTensor();
  const at::Tensor full = ref.at("generate_logits").toTensor();  // [b, p + 64, vocab], one forward without a cache
  for (const int64_t window_step : {int64_t{16}, int64_t{64}, int64_t{1024}}) {  // windows crossed, one, the whole
    const auto [tokens, logits] = greedy(w, prompt, expected.size(1), window_step);
    EXPECT_TRUE(tokens.equal(expected)) << "window step " << window_step << "\n" << tokens << "\n" << expected;
    const at::Tensor stepped = greedy_by_steps(w, prompt, expected.size(1), window_step);
    if (stepped.defined()) EXPECT_TRUE(stepped.equal(expected)) << "window step " << window_step << ", whole steps";
    // Each step's logits are the full forward's at that position: the cache holds the right keys and values.
    double worst = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const int64_t at_pos = prompt.size(1) - 1 + static_cast<int64_t>(i);
      worst = std::max(worst, (logits[i] - full.select(1, at_pos)).abs().max().item<double>());
    }
    EXPECT_LT(worst, 1e-3) << "window step " << window_step;
  }
}

TEST(DecoderParityTest, Gpt2SmallHasTransformersParametersInNameShapeAndOrder) {
  const Ref ref = load_reference("gpt2_transformers.pt");
  models::Gpt2LMHeadModel gpt2;
  expect_same_parameters(*gpt2, ref);
  EXPECT_EQ(count_parameters(*gpt2), 124'439'808);
}

TEST(DecoderParityTest, Gpt2TransformersWeightsGiveTransformersLogitsAndLoss) {
  const Ref ref = load_reference("gpt2_transformers.pt");
  auto w = reduced("gpt2", {{"layers", 2}, {"width", 64}, {"heads", 4}, {"vocab", 500}}, ref);
  expect_reference_outputs(*w, ref);
  // mode: generate: greedy tokens over the KV cache equal transformers' generate(do_sample=False), token for token.
  auto g = reduced("gpt2", {{"layers", 2}, {"width", 64}, {"heads", 4}, {"vocab", 500}}, ref, "aten", "generate_state");
  expect_transformers_generation(*g, ref);
  // ... and with kernels: fused (the decode step by the decode operations; on the CPU their ATen forms)
  auto gf = reduced("gpt2", {{"layers", 2}, {"width", 64}, {"heads", 4}, {"vocab", 500}}, ref, "fused",
                    "generate_state");
  expect_transformers_generation(*gf, ref);
  // kernels: fused at fp32: the LM head and its loss in one, each sub-layer's output with its residual add and the
  // next LayerNorm (the MLP whole), give transformers' logits and loss too
  auto fused = reduced("gpt2", {{"layers", 2}, {"width", 64}, {"heads", 4}, {"vocab", 500}}, ref, "fused");
  EXPECT_EQ(fused->fusions(),
            (std::vector<std::string>{"linear_cross_entropy", "linear_add_layer_norm", "mlp_add_layer_norm"}));
  expect_reference_outputs(*fused, ref);
  // ... and with gradient checkpointing (one block at a time: the MLP's linear + GELU fused within each block)
  auto checkpointed = reduced("gpt2", {{"layers", 2}, {"width", 64}, {"heads", 4}, {"vocab", 500},
                                       {"gradient_checkpointing", true}}, ref, "fused");
  EXPECT_EQ(checkpointed->fusions(), (std::vector<std::string>{"linear_cross_entropy", "linear_gelu"}));
  expect_reference_outputs(*checkpointed, ref);
}

TEST(DecoderParityTest, TinyLlamaHasTransformersParametersInNameShapeAndOrder) {
  const Ref ref = load_reference("llama_transformers.pt");
  // The real 1.1B-parameter model (4.4 GB in fp32): what a run builds, not a count worked out on paper.
  models::LlamaForCausalLM llama;
  expect_same_parameters(*llama, ref);
  EXPECT_EQ(count_parameters(*llama), 1'100'048'384);
}

TEST(DecoderParityTest, LlamaTransformersWeightsGiveTransformersLogitsAndLoss) {
  const Ref ref = load_reference("llama_transformers.pt");
  const std::map<std::string, nlohmann::json> keys{{"layers", 2},       {"hidden", 64}, {"heads", 4},
                                                   {"kv_heads", 2},     {"intermediate", 128}, {"vocab", 500}};
  auto w = reduced("llama", keys, ref);
  expect_reference_outputs(*w, ref);
  // mode: generate with grouped-query attention (2 key-value heads for 4 query heads) and rotary positions.
  auto g = reduced("llama", keys, ref, "aten", "generate_state");
  expect_transformers_generation(*g, ref);
  // ... and with kernels: fused (rotary and SwiGLU in one operation each; on the CPU, ATen's in one node).
  auto gf = reduced("llama", keys, ref, "fused", "generate_state");
  expect_transformers_generation(*gf, ref);
  // kernels: fused at fp32 (rotary, SwiGLU, the residual adds with their RMSNorms, the head with its loss):
  // transformers' logits and loss still
  auto fused = reduced("llama", keys, ref, "fused");
  EXPECT_EQ(fused->fusions(), (std::vector<std::string>{"linear_cross_entropy", "swiglu", "rotary", "add_rms_norm"}));
  expect_reference_outputs(*fused, ref);
  // ... and with gradient checkpointing (one layer at a time: the norms as ATen's)
  auto with_checkpoints = keys;
  with_checkpoints["gradient_checkpointing"] = true;
  auto checkpointed = reduced("llama", with_checkpoints, ref, "fused");
  EXPECT_EQ(checkpointed->fusions(), (std::vector<std::string>{"linear_cross_entropy", "swiglu", "rotary"}));
  expect_reference_outputs(*checkpointed, ref);
}

/// Each step's largest logit error against transformers' full forward in fp32 (teacher forcing: fed the reference's
/// tokens), with the reduced llama on the GPU in bf16.
std::vector<double> gpu_decode_errors(const Ref& ref, bool flash, const std::string& kernels = "aten") {
  const std::map<std::string, nlohmann::json> keys{{"layers", 2},       {"hidden", 64}, {"heads", 4},
                                                   {"kv_heads", 2},     {"intermediate", 128}, {"vocab", 500}};
  models::set_flash_decode_allowed(flash);  // kernel_options.flash_decode, as the engine sets it for a run
  auto w = reduced("llama", keys, ref, kernels, "generate_state");
  w->module()->to(torch::Device(torch::kCUDA, 0), at::kBFloat16);
  TextGenerator* g = w->generator();
  c10::InferenceMode no_autograd;
  const auto cuda = at::TensorOptions().device(torch::kCUDA, 0);
  const at::Tensor prompt = ref.at("generate_prompt").toTensor().to(cuda.device());
  const at::Tensor tokens = ref.at("generate_tokens").toTensor().to(cuda.device());
  const at::Tensor full = ref.at("generate_logits").toTensor();
  const int64_t p = prompt.size(1), fresh = tokens.size(1);
  g->allocate(prompt.size(0), p + fresh, cuda.dtype(at::kBFloat16));
  EXPECT_EQ(g->flash_decode(), flash);
  std::vector<at::Tensor> logits{g->prefill(prompt)};
  at::Tensor pos = at::full({1}, p, cuda.dtype(at::kLong));
  for (int64_t i = 1; i < fresh; ++i) {
    logits.push_back(g->decode(tokens.narrow(1, i - 1, 1), pos, std::min(p + fresh, ((p + i - 1) / 16 + 1) * 16)));
    pos.add_(1);
  }
  models::set_flash_decode_allowed(true);
  std::vector<double> errors;
  for (size_t i = 0; i < logits.size(); ++i) {
    const at::Tensor expected = full.select(1, p - 1 + static_cast<int64_t>(i));
    errors.push_back((logits[i].to(at::kCPU, at::kFloat) - expected).abs().max().item<double>());
  }
  return errors;
}

/// On a CUDA device in bf16, decode attention by FlashAttention's variable-length kernel is as close to transformers'
/// fp32 logits as the masked SDPA path is, step for step (both carry bf16 rounding).
TEST(DecoderParityTest, FlashDecodeOnTheGpuIsAsCloseToTransformersAsMaskedSdpa_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Ref ref = load_reference("llama_transformers.pt");
  const std::vector<double> flash = gpu_decode_errors(ref, true), masked = gpu_decode_errors(ref, false);
  const double scale = ref.at("generate_logits").toTensor().abs().max().item<double>();
  ASSERT_EQ(flash.size(), masked.size());
  for (size_t i = 0; i < flash.size(); ++i) {
    EXPECT_LT(flash[i], std::max(2.0 * masked[i], 0.02 * scale)) << "step " << i << ": flash " << flash[i]
                                                                  << ", masked " << masked[i] << ", scale " << scale;
  }
}

/// kernels: fused on a CUDA device in bf16: the decode step by gpubench's decode kernels (GEMVs, norms, rotary and
/// the cache writes) is as close to transformers' fp32 logits as the ATen path, step for step.
TEST(DecoderParityTest, FusedDecodeKernelsAreAsCloseToTransformersAsTheAtenPath_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Ref ref = load_reference("llama_transformers.pt");
  const std::vector<double> fused = gpu_decode_errors(ref, true, "fused"), aten = gpu_decode_errors(ref, true, "aten");
  const double scale = ref.at("generate_logits").toTensor().abs().max().item<double>();
  ASSERT_EQ(fused.size(), aten.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_LT(fused[i], std::max(2.0 * aten[i], 0.02 * scale)) << "step " << i << ": fused " << fused[i]
                                                                << ", aten " << aten[i] << ", scale " << scale;
  }
}

}  // namespace
}  // namespace gpubench::engine
