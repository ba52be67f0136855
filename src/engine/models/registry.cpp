#include "models/registry.h"

#include "gpubench/core/check.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "checkpoint.h"
#include "fused/fused_ops.h"
#include "models/bert.h"
#include "models/decoder.h"
#include "models/resnet.h"
#include "models/unet.h"

namespace gpubench::engine {

namespace {

/// ImageNet-style classification: random normal images, uniform labels, cross-entropy.
class ImageClassification final : public Workload {
 public:
  ImageClassification(models::ResNet model, models::ResNetOptions options, int64_t image_size)
      : model_(std::move(model)), options_(options), image_size_(image_size) {}

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    Batch b;
    b.inputs.push_back(at::randn({batch_size, 3, image_size_, image_size_}, gen, options.dtype(torch::kFloat)));
    b.target = at::randint(0, options_.num_classes, {batch_size}, gen, options.dtype(torch::kLong));
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model_->forward(batch.inputs[0]), batch.target);
  }
  torch::Tensor infer(const Batch& batch) override { return model_->forward(batch.inputs[0]); }

  double train_flops_per_sample() const override {
    return 3.0 * 2.0 * static_cast<double>(models::resnet_forward_macs(options_, image_size_));
  }

  int64_t image_size() const override { return image_size_; }
  int64_t num_classes() const override { return options_.num_classes; }
  std::vector<std::string> fusions() const override {
    if (!options_.fused) return {};
    return {"batch_norm_relu", "batch_norm_add_relu", "batch_norm", "max_pool"};
  }

 private:
  models::ResNet model_;
  models::ResNetOptions options_;
  int64_t image_size_;
};

/// Fine-tuning a sequence classifier: random token ids (no padding), uniform labels, cross-entropy.
class SequenceClassification final : public Workload {
 public:
  SequenceClassification(const models::BertOptions& o, int64_t seq_len, bool checkpointing)
      : model_(o), options_(o), seq_len_(seq_len) {
    if (checkpointing) {
      auto* m = model_.get();
      m->run_layer = [m](size_t i, const torch::Tensor& x, const torch::Tensor& keep) {
        return checkpoint([m, i, keep](const std::vector<at::Tensor>& in) { return m->layers[i]->forward(in[0], keep); },
                          {x});
      };
    }
  }

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    Batch b;
    // Ids from 1: id 0 is [PAD]. Full-length sequences, so no attention mask is needed (as transformers drops an
    // all-ones mask before its SDPA call).
    b.inputs.push_back(at::randint(1, options_.vocab_size, {batch_size, seq_len_}, gen, options.dtype(torch::kLong)));
    b.target = at::randint(0, options_.num_labels, {batch_size}, gen, options.dtype(torch::kLong));
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model_->forward(batch.inputs[0]), batch.target);
  }
  torch::Tensor infer(const Batch& batch) override { return model_->forward(batch.inputs[0]); }

  double train_flops_per_sample() const override { return models::bert_train_flops_per_sequence(options_, seq_len_); }
  double attention_train_flops_per_sample() const override {
    return models::bert_attention_train_flops_per_sequence(options_, seq_len_);
  }
  int64_t tokens_per_sample() const override { return seq_len_; }
  std::vector<std::string> fusions() const override {
    if (!options_.fused) return {};
    return {"linear_qkv", "linear_gelu", "linear_dropout_add_layer_norm"};
  }

 private:
  models::BertForSequenceClassification model_;
  models::BertOptions options_;
  int64_t seq_len_;
};

/// The SD fine-tuning objective on precomputed latents: x_t = sqrt(a_t) x0 + sqrt(1 - a_t) eps with the
/// scaled-linear schedule, random t, a 77 x 768 text context, MSE between predicted and true noise.
class LatentDiffusion final : public Workload {
 public:
  LatentDiffusion(const models::UNetOptions& o, int64_t latent, bool checkpointing)
      : model_(o), options_(o), latent_(latent) {
    if (checkpointing) {
      model_->run_block = [](const models::UNet2DConditionImpl::Block& f, const std::vector<at::Tensor>& in) {
        return checkpoint(f, in);
      };
    }
  }

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    const auto f = options.dtype(torch::kFloat);
    const at::Tensor x0 = at::randn({batch_size, options_.in_channels, latent_, latent_}, gen, f);
    const at::Tensor noise = at::randn(x0.sizes(), gen, f);
    const at::Tensor context = at::randn({batch_size, 77, options_.cross_dim}, gen, f);
    const at::Tensor t = at::randint(0, 1000, {batch_size}, gen, options.dtype(torch::kLong));
    const at::Tensor betas = at::pow(at::linspace(std::sqrt(0.00085), std::sqrt(0.012), 1000, f), 2);
    const at::Tensor alpha_bar = at::cumprod(1 - betas, 0).index_select(0, t).view({batch_size, 1, 1, 1});
    Batch b;
    b.inputs = {at::sqrt(alpha_bar) * x0 + at::sqrt(1 - alpha_bar) * noise, t, context};
    b.target = noise;
    return b;
  }

  std::vector<std::string> fusions() const override {
    if (!options_.fused) return {};
    return {"linear_add_layer_norm", "geglu"};
  }

  torch::Tensor loss(const Batch& batch) override {
    const at::Tensor pred = model_->forward(batch.inputs[0], batch.inputs[1], batch.inputs[2]);
    return torch::nn::functional::mse_loss(pred.to(torch::kFloat), batch.target);  // in fp32, as diffusers does
  }

  /// A sampler's step: N latents at one timestep, and 2N timesteps and text contexts (the empty prompt's, then the
  /// prompt's), made once, as diffusers' pipelines concatenate negative and positive prompt embeddings before the loop.
  Batch make_inference_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    const auto f = options.dtype(torch::kFloat);
    Batch b;
    b.inputs = {at::randn({batch_size, options_.in_channels, latent_, latent_}, gen, f),
                at::full({2 * batch_size}, kTimestep, options.dtype(torch::kLong)),  // both halves' timestep
                at::randn({2 * batch_size, 77, options_.cross_dim}, gen, f)};
    b.target = at::zeros({batch_size}, f);  // unused; keeps slice_batch's contract
    return b;
  }

  /// One denoising step as diffusers' StableDiffusionPipeline takes it: the UNet on the latents twice (unconditional
  /// and conditional, one batch of 2N), guidance 7.5, then a DDIM update (eta 0) to the previous timestep.
  torch::Tensor infer(const Batch& batch) override {
    const at::Tensor& x = batch.inputs[0];
    const auto eps = model_->forward(at::cat({x, x}), batch.inputs[1], batch.inputs[2]).chunk(2);
    const at::Tensor guided = (eps[0] + kGuidance * (eps[1] - eps[0])).to(x.scalar_type());
    const at::Tensor x0 = (x - std::sqrt(1 - alpha_t_) * guided) / std::sqrt(alpha_t_);
    return std::sqrt(alpha_prev_) * x0 + std::sqrt(1 - alpha_prev_) * guided;
  }

  std::string inference_step() const override {
    return "one denoising step (the it/s of diffusion samplers): classifier-free guidance runs the UNet on 2 x batch "
           "latents (unconditional and conditional contexts), guidance scale 7.5, then a DDIM update from t=" +
           std::to_string(kTimestep) + " to t=" + std::to_string(kTimestep - kStride) +
           "; eval mode under inference mode; a sample is one latent image";
  }
  double inference_flops_per_sample() const override { return 2.0 * 2.0 * models::unet_forward_macs(options_, latent_).total(); }
  double attention_inference_flops_per_sample() const override {
    return 2.0 * 2.0 * models::unet_forward_macs(options_, latent_).attention;
  }

  double train_flops_per_sample() const override {
    return 3.0 * 2.0 * models::unet_forward_macs(options_, latent_).total();
  }
  double attention_train_flops_per_sample() const override {
    return 3.0 * 2.0 * models::unet_forward_macs(options_, latent_).attention;
  }

 private:
  static constexpr int64_t kTimestep = 500, kStride = 20;  ///< step 25 of a 50-step DDIM schedule
  static constexpr double kGuidance = 7.5;
  /// alpha_bar(t) of SD's scaled-linear schedule (betas from 0.00085 to 0.012 in sqrt space, 1000 steps).
  static double alpha_bar(int64_t t) {
    const double lo = std::sqrt(0.00085), hi = std::sqrt(0.012);
    double a = 1.0;
    for (int64_t i = 0; i <= t; ++i) {
      const double b = lo + (hi - lo) * static_cast<double>(i) / 999.0;
      a *= 1.0 - b * b;
    }
    return a;
  }

  models::UNet2DCondition model_;
  models::UNetOptions options_;
  int64_t latent_;
  double alpha_t_ = alpha_bar(kTimestep), alpha_prev_ = alpha_bar(kTimestep - kStride);
};

/// A decoder's generation over its own KV cache (models::KvCache): the model's make_cache and logits_cached.
class CachedGenerator final : public TextGenerator {
 public:
  using MakeCache = std::function<models::KvCache(int64_t, int64_t, const at::TensorOptions&)>;
  using Logits = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, int64_t, models::KvCache&)>;
  using Greedy = std::function<bool(const models::GreedyStep&, int64_t, models::KvCache&)>;
  CachedGenerator(MakeCache make, Logits logits, Greedy greedy, int64_t vocab, double weight_flops_per_token,
                  double attention_flops_per_context)
      : make_(std::move(make)),
        logits_(std::move(logits)),
        greedy_(std::move(greedy)),
        vocab_(vocab),
        weight_flops_(weight_flops_per_token),
        attention_flops_(attention_flops_per_context) {}
  void allocate(int64_t batch, int64_t positions, const at::TensorOptions& options) override {
    cache_ = models::KvCache{};
    cache_ = make_(batch, positions, options);
  }
  at::Tensor prefill(const at::Tensor& ids) override { return logits_(ids, {}, ids.size(1), cache_); }
  at::Tensor decode(const at::Tensor& token, const at::Tensor& pos, int64_t window) override {
    return logits_(token, pos, window, cache_);
  }
  bool decode_greedy(const models::GreedyStep& step, int64_t window) override { return greedy_(step, window, cache_); }
  std::string greedy_note() const override {
    if (!cache_.step_kernel_checked || (!cache_.step_kernel && cache_.step_kernel_why.empty())) return "";  // off
    return cache_.step_kernel ? "one kernel for the whole step (gpubench's step kernel, GPUBENCH_DECODE_STEP=1)"
                              : "not one kernel (" + cache_.step_kernel_why + ")";
  }
  int64_t cache_bytes() const override { return cache_.bytes(); }
  bool flash_decode() const override { return cache_.flash; }
  int64_t vocab() const override { return vocab_; }
  double flops_per_token(int64_t context) const override {
    return weight_flops_ + attention_flops_ * static_cast<double>(context);
  }

 private:
  MakeCache make_;
  Logits logits_;
  Greedy greedy_;
  models::KvCache cache_;
  int64_t vocab_;
  double weight_flops_, attention_flops_;
};

/// Causal language modelling (pre-training or fine-tuning a decoder): random token ids, the next token as the label
/// of each position, cross-entropy over the vocabulary in fp32, as transformers' ForCausalLMLoss computes it.
class CausalLanguageModel final : public Workload {
 public:
  using Forward = std::function<torch::Tensor(const torch::Tensor&)>;
  /// `hidden` gives what the LM head reads and `head_weight` its weight: with `fused`, the training loss is the LM
  /// head and its cross-entropy in one (fused::linear_cross_entropy) instead of logits then the loss.
  CausalLanguageModel(std::shared_ptr<torch::nn::Module> module, Forward forward, Forward hidden,
                      std::function<torch::Tensor()> head_weight, int64_t vocab, int64_t seq_len, double train_flops,
                      double attention_flops, std::vector<std::string> fusions)
      : module_(std::move(module)),
        forward_(std::move(forward)),
        hidden_(std::move(hidden)),
        head_weight_(std::move(head_weight)),
        vocab_(vocab),
        seq_len_(seq_len),
        train_flops_(train_flops),
        attention_flops_(attention_flops),
        fusions_(std::move(fusions)) {}

  std::shared_ptr<torch::nn::Module> module() override { return module_; }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    Batch b;
    const at::Tensor ids = at::randint(0, vocab_, {batch_size, seq_len_}, gen, options.dtype(torch::kLong));
    b.inputs.push_back(ids);
    // labels = input_ids, shifted inside the loss as transformers does: position i predicts token i+1; the last
    // position has no label (-100, ignored).
    b.target = at::cat({ids.narrow(1, 1, seq_len_ - 1), at::full({batch_size, 1}, -100, ids.options())}, 1);
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    if (fused_loss()) return fused::linear_cross_entropy(hidden_(batch.inputs[0]), head_weight_(), batch.target);
    const at::Tensor logits = forward_(batch.inputs[0]).to(torch::kFloat);
    return at::cross_entropy_loss(logits.view({-1, vocab_}), batch.target.reshape({-1}), {}, at::Reduction::Mean,
                                  /*ignore_index=*/-100);
  }
  std::vector<std::string> fusions() const override { return fusions_; }
  TextGenerator* generator() override { return generator_.get(); }
  void set_generator(std::unique_ptr<TextGenerator> g) { generator_ = std::move(g); }
  torch::Tensor infer(const Batch& batch) override { return forward_(batch.inputs[0]); }
  std::string inference_step() const override {
    return "one forward pass over whole sequences (a prefill: logits at every position, no KV-cache decoding), "
           "eval mode under inference mode";
  }

  double train_flops_per_sample() const override { return train_flops_; }
  double attention_train_flops_per_sample() const override { return attention_flops_; }
  int64_t tokens_per_sample() const override { return seq_len_; }

 private:
  bool fused_loss() const {
    return std::find(fusions_.begin(), fusions_.end(), "linear_cross_entropy") != fusions_.end();
  }
  std::shared_ptr<torch::nn::Module> module_;
  Forward forward_, hidden_;
  std::function<torch::Tensor()> head_weight_;
  int64_t vocab_, seq_len_;
  double train_flops_, attention_flops_;
  std::vector<std::string> fusions_;
  std::unique_ptr<TextGenerator> generator_;
};

/// The generator of a decoder `m` (Gpt2LMHeadModel, LlamaForCausalLM). Its forward FLOPs per token come from the
/// training count of a one-token sequence (3 x the forward: 6 x the weights plus attention's 12 x layers x hidden),
/// attention's part then growing with the context.
template <typename Model>
std::unique_ptr<TextGenerator> generator_of(Model m, int64_t vocab, double train_flops_per_token, int64_t layers,
                                            int64_t hidden) {
  const double attention_per_context = 4.0 * static_cast<double>(layers) * static_cast<double>(hidden);
  return std::make_unique<CachedGenerator>(
      [m](int64_t b, int64_t n, const at::TensorOptions& o) mutable { return m->make_cache(b, n, o); },
      [m](const at::Tensor& ids, const at::Tensor& pos, int64_t window, models::KvCache& c) mutable {
        return m->logits_cached(ids, pos, window, c);
      },
      [m](const models::GreedyStep& step, int64_t window, models::KvCache& c) mutable {
        return m->decode_greedy(step, window, c);
      },
      vocab, train_flops_per_token / 3.0 - attention_per_context, attention_per_context);
}

OptimizerSettings adamw(double lr, double weight_decay) {
  OptimizerSettings o;
  o.name = "adamw";
  o.lr = lr;
  o.weight_decay = weight_decay;
  return o;
}

// The models' own keys. Each declaration says the key's type, range, default and help; the loader validates files
// and flags by it, `--help` lists it under the model, and the engine fills in the default before the factory runs.
using Type = ModelOption::Type;

ModelOption int_option(std::string key, std::string flag, std::string help, int64_t lo, int64_t hi,
                       nlohmann::json def) {
  return ModelOption{std::move(key), std::move(flag), std::move(help), Type::kInt, static_cast<double>(lo),
                     static_cast<double>(hi), {}, std::move(def)};
}

// Keys bert-base and sd-unet share: reduced models for tests, the attention kernel, memory for time.
ModelOption attention_option() {
  return ModelOption{"attention", "--attention", "sdpa (fused kernels, default) | math (explicit softmax attention)",
                     Type::kChoice, 0, 0, {"sdpa", "math"}, "sdpa"};
}
ModelOption dropout_option() {
  return ModelOption{"dropout", "--dropout", "override the model's dropout probability, in [0, 0.999]",
                     Type::kFloat, 0, 0.999, {}, nullptr};
}
ModelOption checkpointing_option() {
  return ModelOption{"gradient_checkpointing", "--gradient-checkpointing",
                     "recompute each transformer layer / UNet block in backward to save memory (true/false)",
                     Type::kBool, 0, 0, {}, false};
}
/// BERT's and GPT-2's hidden size: `hidden`, as llama calls it; `width`, its name before 2026-12-04, still reads.
ModelOption hidden_option() {
  ModelOption o = int_option("hidden", "--hidden", "reduced model: hidden size (default 768)", 8, 1 << 16, nullptr);
  o.aliases = {"width"};
  return o;
}

ModelOption heads_option() {
  return int_option("heads", "--heads", "reduced model: attention heads", 1, 1024, nullptr);
}

/// A key the model declares with a default: always present once defaults are filled in.
template <typename T>
T required(const Scenario& s, const std::string& key) {
  const std::optional<T> v = s.option<T>(key);
  GPUBENCH_CHECK(v.has_value(), "model key '" + key + "' has no value although the model declares a default");
  return *v;
}

/// A transformer's hidden size must split into `heads` equal heads; the error names the model and its key.
void require_heads_divide(const std::string& model, const std::string& key, int64_t hidden, int64_t heads) {
  if (hidden % heads != 0) {
    throw std::invalid_argument(model + ": " + key + " " + std::to_string(hidden) + " is not divisible by " +
                                std::to_string(heads) + " heads");
  }
}

/// Gradient checkpointing as asked, in training only (inference keeps no activations for a backward).
bool checkpointing(const Scenario& s) {
  return run_mode(s) == RunMode::kTrain && required<bool>(s, "gradient_checkpointing");
}

bool fused_kernels(const Scenario& s) { return s.fused_kernels(); }
/// The LM head fused with its loss: training only (an inference step returns the logits).
bool fused_loss(const Scenario& s) { return fused_kernels(s) && run_mode(s) == RunMode::kTrain; }
/// `base` and, in mode: generate with kernels: fused, the decode step's operations (decode/decode_ops.h).
std::vector<std::string> with_decode_fusions(const Scenario& s, std::vector<std::string> base) {
  if (fused_kernels(s) && run_mode(s) == RunMode::kGenerate) {
    for (const char* n : {"decode_embed", "decode_gemv", "decode_norm", "decode_qkv_cache", "decode_attention",
                          "decode_argmax"}) {
      base.emplace_back(n);
    }
  }
  return base;
}

/// GPT-2's fusions outside generation (whose prefill and decode step run their own; with_decode_fusions adds those):
/// each sub-layer's output with its residual add and the next LayerNorm (the MLP whole, with cuBLASLt's GELU
/// epilogues), or with gradient checkpointing (one block at a time) the MLP's linear + GELU; in training the LM head
/// with its loss.
std::vector<std::string> gpt2_fusions(const Scenario& s, const models::Gpt2Options& o) {
  if (!o.fused || run_mode(s) == RunMode::kGenerate) return {};
  std::vector<std::string> out;
  if (fused_loss(s)) out.emplace_back("linear_cross_entropy");
  if (checkpointing(s)) {
    out.emplace_back("linear_gelu");
  } else {
    out.insert(out.end(), {"linear_add_layer_norm", "mlp_add_layer_norm"});
  }
  return out;
}

/// Llama's fusions outside generation: rotary and SwiGLU, each residual add with the RMSNorm after it (not with
/// gradient checkpointing, which runs one layer at a time), and in training the LM head with its loss.
std::vector<std::string> llama_fusions(const Scenario& s, const models::LlamaOptions& o) {
  if (!o.fused) return {};
  std::vector<std::string> out;
  if (fused_loss(s)) out.emplace_back("linear_cross_entropy");
  out.insert(out.end(), {"swiglu", "rotary"});
  if (!checkpointing(s) && run_mode(s) != RunMode::kGenerate) out.emplace_back("add_rms_norm");
  return out;
}

// Each model's options from its keys (defaults filled): what its rules check and its factory builds.
models::BertOptions bert_options(const Scenario& s) {
  models::BertOptions o;
  o.layers = s.option<int64_t>("layers").value_or(o.layers);
  o.hidden = s.option<int64_t>("hidden").value_or(o.hidden);
  o.intermediate = 4 * o.hidden;
  o.heads = s.option<int64_t>("heads").value_or(o.heads);
  o.num_labels = required<int64_t>(s, "num_labels");
  o.dropout = s.option<double>("dropout").value_or(o.dropout);
  o.math_attention = s.option<std::string>("attention") == "math";
  o.fused = fused_kernels(s);
  return o;
}

models::UNetOptions unet_options(const Scenario& s) {
  models::UNetOptions o;
  if (const auto w = s.option<int64_t>("width")) o.channels = {*w, 2 * *w, 4 * *w, 4 * *w};
  o.layers_per_block = s.option<int64_t>("layers").value_or(o.layers_per_block);
  o.heads = s.option<int64_t>("heads").value_or(o.heads);
  o.dropout = s.option<double>("dropout").value_or(o.dropout);
  o.math_attention = s.option<std::string>("attention") == "math";
  o.fused = fused_kernels(s);
  return o;
}

models::Gpt2Options gpt2_options(const Scenario& s) {
  models::Gpt2Options o;
  o.layers = s.option<int64_t>("layers").value_or(o.layers);
  o.hidden = s.option<int64_t>("hidden").value_or(o.hidden);
  o.heads = s.option<int64_t>("heads").value_or(o.heads);
  o.vocab_size = s.option<int64_t>("vocab").value_or(o.vocab_size);
  o.dropout = s.option<double>("dropout").value_or(o.dropout);
  o.math_attention = s.option<std::string>("attention") == "math";
  o.fused = fused_kernels(s);
  return o;
}

models::LlamaOptions llama_options(const Scenario& s) {
  models::LlamaOptions o;
  o.fused = fused_kernels(s);
  o.layers = required<int64_t>(s, "layers");
  o.hidden = required<int64_t>(s, "hidden");
  o.heads = required<int64_t>(s, "heads");
  o.kv_heads = required<int64_t>(s, "kv_heads");
  o.intermediate = required<int64_t>(s, "intermediate");
  o.vocab_size = required<int64_t>(s, "vocab");
  o.math_attention = s.option<std::string>("attention") == "math";
  return o;
}

// Each model's size from its keys, for the memory estimate before anything is built (ModelSize). Parameter counts
// are exact (ModelSizeTest checks them against the built models); activation bytes are per sample in 2-byte
// activations, set on the low side of the H200's committed peaks (peak allocated, bf16/fp16 autocast, fused AdamW
// or SGD): ResNet-50 45 MB per 224-px image at bs 64 and 256; BERT-base 52 MB per 128-token sequence (210 MB at
// 512); GPT-2 0.99 GB per 1024-token sequence with ATen's loss, 0.46 GB fused; TinyLlama 4.9 GB per 2048-token
// sequence; the SD UNet 1.26 GB per 64x64 latent; in inference GPT-2 0.20 GB, TinyLlama 0.16 GB, the UNet 0.15 GB.
ModelSize resnet50_size(const Scenario& s) {
  const auto classes = required<int64_t>(s, "num_classes");
  const double side = static_cast<double>(required<int64_t>(s, "image_size")) / 224.0;
  const double per_image = 40e6 * side * side;
  return {23508032 + 2049 * classes, per_image, per_image, per_image / 32};  // torchvision: 25,557,032 at 1,000 classes
}

/// A transformer stack's size: `per_token_layer` activation bytes per token and layer, `logits_per_token` for the
/// loss's logits (training) and `inference_logits_per_token` (the fp32 logits an inference step returns).
ModelSize stack_size(int64_t parameters, int64_t layers, int64_t seq_len, double per_token_layer,
                     double logits_per_token, double inference_logits_per_token) {
  const auto s = static_cast<double>(seq_len);
  const double full = s * (per_token_layer * static_cast<double>(layers) + logits_per_token);
  // Checkpointed: each layer's input (a 17th of the per-layer figure) plus one layer's activations, and the logits.
  const double checkpointed = s * (per_token_layer * (1.0 + static_cast<double>(layers) / 17.0) + logits_per_token);
  const double inference = inference_logits_per_token > 0 ? s * inference_logits_per_token : full / 32;
  return {parameters, full, checkpointed, inference};
}

/// The loss's logits per token: ATen's cross-entropy keeps fp32 logits, their log-softmax and its gradient; the
/// fused LM head + loss keeps one 2-byte copy.
double lm_logits_bytes(const Scenario& s, int64_t vocab) {
  return (s.fused_kernels() ? 2.0 : 12.0) * static_cast<double>(vocab);
}

ModelSize bert_size(const Scenario& s) {
  const models::BertOptions o = bert_options(s);
  const int64_t h = o.hidden;
  const int64_t params = (o.vocab_size + o.max_positions + o.type_vocab) * h + 2 * h +
                         o.layers * (4 * (h * h + h) + 2 * (h * o.intermediate) + o.intermediate + h + 4 * h) +
                         (h * h + h) + (h * o.num_labels + o.num_labels);
  return stack_size(params, o.layers, required<int64_t>(s, "seq_len"), 34.0 * static_cast<double>(h), 0, 0);
}

ModelSize gpt2_size(const Scenario& s) {
  const models::Gpt2Options o = gpt2_options(s);
  const int64_t h = o.hidden, ffn = o.intermediate();
  const int64_t params = (o.vocab_size + o.positions) * h +
                         o.layers * (4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * ffn + ffn) + (ffn * h + h)) + 2 * h;
  ModelSize size = stack_size(params, o.layers, required<int64_t>(s, "seq_len"), 34.0 * static_cast<double>(h),
                              lm_logits_bytes(s, o.vocab_size), 4.0 * static_cast<double>(o.vocab_size));
  size.kv_elements_per_token = 2.0 * static_cast<double>(o.layers * h);
  return size;
}

ModelSize llama_size(const Scenario& s) {
  const models::LlamaOptions o = llama_options(s);
  const int64_t h = o.hidden, kv = o.kv_heads * o.head_dim();
  const int64_t params = 2 * o.vocab_size * h + h + o.layers * (2 * h * h + 2 * h * kv + 3 * h * o.intermediate + 2 * h);
  // Kept per token and layer in 2 bytes: both norms' inputs, q, k, v, the attention output, gate, up, their product
  // and the activation.
  const double per_token = 2.0 * static_cast<double>(5 * h + 2 * kv + 4 * o.intermediate);
  ModelSize size = stack_size(params, o.layers, required<int64_t>(s, "seq_len"), per_token,
                              lm_logits_bytes(s, o.vocab_size), 4.0 * static_cast<double>(o.vocab_size));
  size.kv_elements_per_token = 2.0 * static_cast<double>(o.layers * kv);
  return size;
}

ModelSize unet_size(const Scenario& s) {
  const models::UNetOptions o = unet_options(s);
  // diffusers' SD v1.5 UNet: 859,520,964 parameters at width 320 and 2 resnets per block; reduced models scale with
  // width squared and roughly with the resnets per block (only the full size is exact; ModelSizeTest).
  const double w = static_cast<double>(o.channels[0]) / 320.0;
  const double layers = static_cast<double>(o.layers_per_block) / 2.0;
  const double params =
      o.channels[0] == 320 && o.layers_per_block == 2 ? 859520964.0 : 859520964.0 * w * w * (0.35 + 0.65 * layers);
  const double latent = static_cast<double>(required<int64_t>(s, "latent_size")) / 64.0;
  const double per_sample = 1.2e9 * latent * latent * w * layers;
  // Inference: the measured 150 MB per latent at bs 32 (and 200 at bs 1), taken on the low side.
  return {static_cast<int64_t>(params), per_sample, per_sample / 4, per_sample / 9};
}

using Factory = std::function<std::unique_ptr<Workload>(const Scenario&)>;

/// A registry entry: the declaration (with its recipe, traits and rules) and a factory that always sees the scenario
/// filled for its model and checked by its rules, also when tests and library callers call it directly.
struct Traits {
  bool channels_last = false;
  bool image_input = false;
  std::function<void(const Scenario&)> check;
  std::function<ModelSize(const Scenario&)> size;
  bool generates = false;  ///< mode: generate (a decoder with a KV cache)
};
ModelEntry entry(ModelInfo info, OptimizerSettings recipe, Traits traits, Factory make) {
  info.recipe = std::move(recipe);
  info.channels_last = traits.channels_last;
  info.image_input = traits.image_input;
  info.check = std::move(traits.check);
  info.size = std::move(traits.size);
  info.generates = traits.generates;
  ModelInfo described = info;
  return ModelEntry{std::move(described), [info = std::move(info), make = std::move(make)](const Scenario& s) {
                      Scenario filled = fill_model_options(info, s);
                      if (info.check) info.check(filled);
                      return make(filled);
                    }};
}

}  // namespace


Batch slice_batch(const Batch& b, int64_t start, int64_t length) {
  Batch out;
  for (const auto& t : b.inputs) out.inputs.push_back(t.narrow(0, start, length));
  out.target = b.target.narrow(0, start, length);
  return out;
}

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> entries{
      entry(ModelInfo{"resnet50", "ResNet-50 v1.5 as torchvision's resnet50 (25.6M parameters), ImageNet-style",
                 "images", 256, "sgd",
                 {int_option("image_size", "--image-size", "input side in pixels (default 224)", 32, 4096, 224),
                  int_option("num_classes", "--num-classes", "number of classes (default 1000)", 2, 1 << 24, 1000)}},
       OptimizerSettings{"sgd", 0.1, 0.9, 1e-4, false, std::nullopt, std::nullopt, std::nullopt, ""},
       Traits{true, true, {}, resnet50_size},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         models::ResNetOptions o;
         o.num_classes = required<int64_t>(s, "num_classes");
         o.fused = fused_kernels(s);
         return std::make_unique<ImageClassification>(models::ResNet(o), o, required<int64_t>(s, "image_size"));
       }),
      entry(ModelInfo{"bert-base", "BERT-base fine-tuning as transformers' BertForSequenceClassification (109.5M parameters)",
                 "sequences", 32, "adamw",
                 {int_option("seq_len", "--seq-len", "tokens per sequence (default 128; at most 512)", 1, 512, 128),
                  int_option("num_labels", "--num-labels", "number of labels (default 2)", 2, 1 << 20, 2),
                  int_option("layers", "--layers", "reduced model: transformer layers (default 12)", 1, 1024, nullptr),
                  hidden_option(),
                  heads_option(), dropout_option(), attention_option(), checkpointing_option()}},
       adamw(2e-5, 0.01),
       Traits{false, false,
              [](const Scenario& s) {
                const models::BertOptions o = bert_options(s);
                require_heads_divide("bert-base", "hidden", o.hidden, o.heads);
                const int64_t seq_len = required<int64_t>(s, "seq_len");
                if (seq_len > o.max_positions) {
                  throw std::invalid_argument("bert-base: seq_len " + std::to_string(seq_len) + " exceeds its " +
                                              std::to_string(o.max_positions) + " positions");
                }
              },
              bert_size},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         const models::BertOptions o = bert_options(s);
         const int64_t seq_len = required<int64_t>(s, "seq_len");
         return std::make_unique<SequenceClassification>(o, seq_len, checkpointing(s));
       }),
      entry(ModelInfo{"sd-unet", "Stable Diffusion v1.5 UNet as diffusers' UNet2DConditionModel (859.5M parameters), "
                            "latent-space fine-tuning",
                 "images", 16, "adamw",
                 {int_option("latent_size", "--latent-size",
                             "latent side, a multiple of 8; 64 for 512-px images (default 64)", 8, 1024, 64),
                  int_option("layers", "--layers", "reduced model: resnets per block (default 2)", 1, 1024, nullptr),
                  int_option("width", "--width", "reduced model: first block's channels (default 320)", 8, 1 << 16,
                             nullptr),
                  heads_option(), dropout_option(), attention_option(), checkpointing_option()}},
       adamw(1e-4, 1e-2),
       Traits{false, false,
              [](const Scenario& s) {
                const models::UNetOptions o = unet_options(s);
                if (o.channels[0] % o.groups != 0 || o.channels[0] % o.heads != 0) {
                  throw std::invalid_argument("sd-unet: width " + std::to_string(o.channels[0]) +
                                              " must be divisible by 32 (GroupNorm groups) and by heads " +
                                              std::to_string(o.heads));
                }
                if (required<int64_t>(s, "latent_size") % 8 != 0) {
                  throw std::invalid_argument("sd-unet: latent_size must be a multiple of 8 (three 2x downsamplings)");
                }
              },
              unet_size},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         const models::UNetOptions o = unet_options(s);
         const int64_t latent = required<int64_t>(s, "latent_size");
         return std::make_unique<LatentDiffusion>(o, latent, checkpointing(s));
       }),
      entry(ModelInfo{"gpt2", "GPT-2 small as transformers' GPT2LMHeadModel (124.4M parameters, tied embeddings), "
                              "causal language modelling",
                 "sequences", 8, "adamw",
                 {int_option("seq_len", "--seq-len", "tokens per sequence (default 1024, its context)", 2, 1024, 1024),
                  int_option("layers", "--layers", "reduced model: transformer blocks (default 12)", 1, 1024, nullptr),
                  hidden_option(),
                  heads_option(),
                  int_option("vocab", "--vocab", "reduced model: vocabulary size (default 50257)", 2, 1 << 24, nullptr),
                  dropout_option(), attention_option(), checkpointing_option()}},
       adamw(5e-5, 0.0),  // transformers' Trainer defaults for fine-tuning
       Traits{false, false,
              [](const Scenario& s) {
                const models::Gpt2Options o = gpt2_options(s);
                require_heads_divide("gpt2", "hidden", o.hidden, o.heads);
              },
              gpt2_size, /*generates=*/true},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         const models::Gpt2Options o = gpt2_options(s);
         const int64_t seq_len = required<int64_t>(s, "seq_len");
         models::Gpt2LMHeadModel m(o);
         if (checkpointing(s)) {
           auto* p = m.get();
           p->fuse_across_blocks = false;
           p->run_layer = [p](size_t i, const torch::Tensor& x) {
             return checkpoint([p, i](const std::vector<at::Tensor>& in) { return p->blocks[i]->forward(in[0]); }, {x});
           };
         }
         auto w = std::make_unique<CausalLanguageModel>(
             m.ptr(), [m](const torch::Tensor& ids) mutable { return m->forward(ids); },
             [m](const torch::Tensor& ids) mutable { return m->hidden(ids); }, [m] { return m->head_weight(); },
             o.vocab_size, seq_len, models::gpt2_train_flops_per_sequence(o, seq_len),
             models::decoder_attention_train_flops_per_sequence(o.layers, o.hidden, seq_len),
             with_decode_fusions(s, gpt2_fusions(s, o)));
         w->set_generator(generator_of(m, o.vocab_size, models::gpt2_train_flops_per_sequence(o, 1), o.layers, o.hidden));
         return w;
       }),
      entry(ModelInfo{"llama", "Llama decoder as transformers' LlamaForCausalLM (RMSNorm, rotary embeddings, SwiGLU, "
                               "grouped-query attention); default TinyLlama-1.1B (1,100.0M parameters)",
                 "sequences", 4, "adamw",
                 {int_option("seq_len", "--seq-len", "tokens per sequence (default 2048)", 2, 1 << 17, 2048),
                  int_option("layers", "--layers", "decoder layers (default 22)", 1, 1024, 22),
                  int_option("hidden", "--hidden", "hidden size (default 2048)", 8, 1 << 16, 2048),
                  int_option("heads", "--heads", "attention heads (default 32)", 1, 1024, 32),
                  int_option("kv_heads", "--kv-heads", "key/value heads, a divisor of heads (default 4)", 1, 1024, 4),
                  int_option("intermediate", "--intermediate", "SwiGLU width (default 5632)", 1, 1 << 20, 5632),
                  int_option("vocab", "--vocab", "vocabulary size (default 32000)", 2, 1 << 24, 32000),
                  attention_option(), checkpointing_option()}},
       adamw(2e-5, 0.0),
       Traits{false, false,
              [](const Scenario& s) {
                const models::LlamaOptions o = llama_options(s);
                require_heads_divide("llama", "hidden", o.hidden, o.heads);
                if (o.head_dim() % 2 != 0) {
                  throw std::invalid_argument("llama: the head size hidden/heads = " + std::to_string(o.head_dim()) +
                                              " must be even (rotary embeddings rotate pairs)");
                }
                if (o.heads % o.kv_heads != 0) {
                  throw std::invalid_argument("llama: heads " + std::to_string(o.heads) +
                                              " is not a multiple of kv_heads " + std::to_string(o.kv_heads));
                }
              },
              llama_size, /*generates=*/true},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         const models::LlamaOptions o = llama_options(s);
         const int64_t seq_len = required<int64_t>(s, "seq_len");
         models::LlamaForCausalLM m(o);
         if (checkpointing(s)) {
           auto* p = m.get();
           p->fuse_across_layers = false;
           p->run_layer = [p](size_t i, const torch::Tensor& x, const torch::Tensor& c, const torch::Tensor& sn) {
             return checkpoint([p, i, c, sn](const std::vector<at::Tensor>& in) { return p->layers[i]->forward(in[0], c, sn); },
                               {x});
           };
         }
         auto w = std::make_unique<CausalLanguageModel>(
             m.ptr(), [m](const torch::Tensor& ids) mutable { return m->forward(ids); },
             [m](const torch::Tensor& ids) mutable { return m->hidden(ids); }, [m] { return m->head_weight(); },
             o.vocab_size, seq_len, models::llama_train_flops_per_sequence(o, seq_len),
             models::decoder_attention_train_flops_per_sequence(o.layers, o.hidden, seq_len),
             with_decode_fusions(s, llama_fusions(s, o)));
         w->set_generator(generator_of(m, o.vocab_size, models::llama_train_flops_per_sequence(o, 1), o.layers, o.hidden));
         return w;
       }),
  };
  return entries;
}

const ModelEntry& find_model(const std::string& name) {
  std::string known;
  for (const auto& e : model_registry()) {
    if (e.info.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  throw std::invalid_argument("unknown model '" + name + "'; known models: " + known);
}

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) {
    if (p.requires_grad()) n += p.numel();
  }
  return n;
}

}  // namespace gpubench::engine
