// mode: generate with `kernels: fused` at batch 1: the whole greedy step as one kernel (decode/decode_step_ops.h)
// against the decode operations' step (decode_ops.h, itself held to the ATen path and to transformers), on reduced
// Llama and GPT-2 models whose shapes it takes, over several steps and windows; and where it declines.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "decode/decode_step_ops.h"
#include "device.h"
#include "fused/fused_ops.h"
#include "gpubench/engine/engine.hpp"
#include "models/decoder.h"
#include "models/registry.h"

namespace gpubench::engine {
namespace {

bool sm90_here() {
  if (!torch::cuda::is_available() || !fused::cuda_kernels_compiled()) return false;
  return name_and_capability(resolve_device("cuda:0")).second >= 90;
}

/// The step kernel asked for within a scope (it is off by default); the setting before is restored.
class StepKernelOn {
 public:
  StepKernelOn() : before_(fused::decode_step_enabled()) { fused::set_decode_step_enabled(true); }
  ~StepKernelOn() { fused::set_decode_step_enabled(before_); }
  StepKernelOn(const StepKernelOn&) = delete;
  StepKernelOn& operator=(const StepKernelOn&) = delete;

 private:
  bool before_;
};

/// A reduced decoder the step kernel takes (hidden and MLP widths multiples of 256, head size 64), on the GPU in bf16.
std::unique_ptr<Workload> reduced(const std::string& model, const std::string& kernels) {
  Scenario s;
  s.model = model;
  s.kernels = kernels;
  s.mode = "generate";
  s.model_options = model == "llama" ? nlohmann::json{{"layers", 3}, {"hidden", 256}, {"heads", 4}, {"kv_heads", 2},
                                                      {"intermediate", 512}, {"vocab", 1000}, {"seq_len", 160}}
                                     : nlohmann::json{{"layers", 3}, {"width", 256}, {"heads", 4}, {"vocab", 1000},
                                                      {"seq_len", 160}};
  torch::manual_seed(21);
  auto w = find_model(model).make(s);
  w->module()->to(torch::Device(torch::kCUDA, 0), at::kBFloat16);
  w->module()->eval();
  return w;
}

/// At each of `steps` steps from a 40-token prompt: the decode operations' logits, then the step kernel's token from
/// the same token and position (its keys and values rewrite the same cache row). Its token must be the greedy one of
/// those logits, or one as large to within bf16's rounding of the logits (a near tie the two summation orders may
/// break apart).
TEST(DecodeStepTest, StepKernelPicksTheDecodeOperationsGreedyTokens_CUDA) {
  if (!sm90_here()) GTEST_SKIP() << "no sm_90 CUDA device or no kernels in this build";
  const StepKernelOn on;
  for (const std::string model : {"llama", "gpt2"}) {
    auto w = reduced(model, "fused");
    TextGenerator* g = w->generator();
    c10::InferenceMode no_autograd;
    const auto cuda = at::TensorOptions().device(torch::kCUDA, 0);
    torch::manual_seed(22);
    const at::Tensor prompt = torch::randint(0, 1000, {1, 40}, cuda.dtype(torch::kLong));
    g->allocate(1, 160, cuda.dtype(at::kBFloat16));
    at::Tensor token = g->prefill(prompt).argmax(-1, /*keepdim=*/true);
    at::Tensor pos = torch::full({1}, 40, cuda.dtype(torch::kLong));
    int served = 0;
    for (int i = 0; i < 70; ++i) {
      const int64_t window = (40 + i) / 64 * 64 + 64;  // generate's windows: 64, then 128
      const at::Tensor logits = g->decode(token, pos, window).to(at::kCPU, at::kFloat);
      at::Tensor next = token.clone(), step_pos = pos.clone(), history = torch::full({1, 80}, -1, pos.options());
      ASSERT_TRUE(g->decode_greedy({next, step_pos, history, 39}, window)) << model << ": " << g->greedy_note();
      ++served;
      const int64_t got = next.item<int64_t>(), want = logits.argmax(-1).item<int64_t>();
      EXPECT_EQ(step_pos.item<int64_t>(), pos.item<int64_t>() + 1) << "the position moves on";
      EXPECT_EQ(history[0][pos.item<int64_t>() - 39].item<int64_t>(), got) << "the history holds the token";
      const double top = logits[0][want].item<double>(), mine = logits[0][got].item<double>();
      EXPECT_LE(top - mine, 1.6e-2 * std::abs(top) + 1e-3) << model << " step " << i << ": token " << got << " against "
                                                           << want;
      token = next;
      pos.add_(1);
    }
    EXPECT_EQ(served, 70);
    EXPECT_NE(g->greedy_note().find("one kernel"), std::string::npos) << g->greedy_note();
  }
}

/// The step kernel's own logits against the decode operations' at one step (DecodeStep on the model's weights).
TEST(DecodeStepTest, StepKernelLogitsMatchTheDecodeOperations_CUDA) {
  if (!sm90_here()) GTEST_SKIP() << "no sm_90 CUDA device or no kernels in this build";
  const StepKernelOn on;
  auto w = reduced("llama", "fused");
  auto* m = dynamic_cast<models::LlamaForCausalLMImpl*>(w->module().get());
  ASSERT_NE(m, nullptr);
  c10::InferenceMode no_autograd;
  const auto cuda = at::TensorOptions().device(torch::kCUDA, 0);
  models::KvCache cache = m->make_cache(1, 160, cuda.dtype(at::kBFloat16));
  torch::manual_seed(23);
  const at::Tensor prompt = torch::randint(0, 1000, {1, 100}, cuda.dtype(torch::kLong));
  at::Tensor token = m->logits_cached(prompt, {}, 100, cache).argmax(-1, /*keepdim=*/true);
  const at::Tensor pos = torch::full({1}, 100, cuda.dtype(torch::kLong));
  const at::Tensor want = m->logits_cached(token, pos, 128, cache).to(at::kCPU, at::kFloat);
  const at::Tensor history = torch::zeros({1, 8}, pos.options());
  ASSERT_TRUE(m->decode_greedy({token, pos.clone(), history, 99}, 128, cache)) << cache.step_kernel_why;
  ASSERT_TRUE(cache.step_kernel);
  const at::Tensor got = cache.step_kernel->logits().to(at::kCPU, at::kFloat);
  const double scale = want.abs().max().item<double>();
  EXPECT_LT((got - want).abs().max().item<double>(), 2e-2 * scale);
  EXPECT_EQ(token.item<int64_t>(), got.argmax(-1).item<int64_t>()) << "the token is its own logits' greedy one";
}

/// Where the step kernel is off (the default) or does not serve, decode_greedy takes the decode operations' step (on
/// the CPU their ATen forms: the logits, their argmax, the token into the buffer and the history, the position on),
/// and where it was asked for it says why not: the CPU, more than one sequence. Without `kernels: fused` it runs
/// nothing.
TEST(DecodeStepTest, DecodeGreedyTakesTheDecodeOperationsWhereTheStepKernelDoesNotServe) {
  Scenario s;
  s.model = "gpt2";
  s.kernels = "fused";
  s.mode = "generate";
  s.model_options = nlohmann::json{{"layers", 1}, {"width", 64}, {"heads", 4}, {"vocab", 100}, {"seq_len", 32}};
  torch::manual_seed(24);
  auto w = find_model("gpt2").make(s);
  w->module()->eval();
  TextGenerator* g = w->generator();
  c10::InferenceMode no_autograd;
  auto greedy_step = [&](int64_t batch) {
    g->allocate(batch, 32, at::TensorOptions().dtype(at::kFloat));
    g->prefill(torch::randint(0, 100, {batch, 3}, torch::kLong));
    const at::Tensor token = torch::randint(0, 100, {batch, 1}, torch::kLong), pos = torch::full({1}, 3, torch::kLong);
    const at::Tensor want = g->decode(token, pos, 32).argmax(-1, /*keepdim=*/true);
    const at::Tensor history = torch::full({batch, 4}, -1, torch::kLong);
    EXPECT_TRUE(g->decode_greedy({token, pos, history, 2}, 32)) << "batch " << batch;
    EXPECT_TRUE(token.equal(want)) << "batch " << batch;
    EXPECT_TRUE(history.select(1, 1).equal(want.squeeze(1))) << "batch " << batch;
    EXPECT_EQ(pos.item<int64_t>(), 4) << "batch " << batch;
  };
  ASSERT_FALSE(fused::decode_step_enabled()) << "off unless asked for";
  greedy_step(1);
  EXPECT_EQ(g->greedy_note(), "") << "no note when off";
  {
    const StepKernelOn on;
    greedy_step(1);
    EXPECT_NE(g->greedy_note().find("not one kernel"), std::string::npos) << g->greedy_note();
    greedy_step(2);
    EXPECT_NE(g->greedy_note().find("more than one sequence"), std::string::npos) << g->greedy_note();
  }
  s.kernels = "aten";
  auto plain = find_model("gpt2").make(s);
  plain->module()->eval();
  TextGenerator* pg = plain->generator();
  pg->allocate(1, 32, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor token = torch::zeros({1, 1}, torch::kLong), pos = torch::full({1}, 3, torch::kLong);
  EXPECT_FALSE(pg->decode_greedy({token, pos, torch::zeros({1, 4}, torch::kLong), 2}, 32));
  EXPECT_EQ(pos.item<int64_t>(), 3) << "nothing ran";
}

}  // namespace
}  // namespace gpubench::engine
