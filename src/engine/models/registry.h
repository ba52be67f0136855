#pragma once
// Workloads: a model plus its synthetic data and loss. The registry maps scenario names to factories.

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpubench/core/scenario/scenario.hpp"
#include "gpubench/core/scenario/model_catalog.hpp"

namespace gpubench::models {
struct GreedyStep;
}

namespace gpubench::engine {

/// One synthetic batch, already on the device.
struct Batch {
  std::vector<torch::Tensor> inputs;
  torch::Tensor target;
};

/// mode: generate: token-by-token decoding over a static KV cache (decoders only). The caller holds the module in
/// eval mode under inference mode and autocast.
class TextGenerator {
 public:
  virtual ~TextGenerator() = default;
  /// A cache for `batch` sequences of `positions` tokens in `options`' dtype and device (replacing any earlier one).
  virtual void allocate(int64_t batch, int64_t positions, const at::TensorOptions& options) = 0;
  /// The last prompt token's logits [batch, vocab] for prompt ids [batch, t], filling cache positions 0..t-1.
  virtual at::Tensor prefill(const at::Tensor& ids) = 0;
  /// The logits [batch, vocab] after `token` [batch, 1] at position `pos` (a one-element int64 tensor on the device,
  /// so a captured step replays for the next position), attending to the cache's first `window` positions.
  virtual at::Tensor decode(const at::Tensor& token, const at::Tensor& pos, int64_t window) = 0;
  /// A whole greedy step where the model has one (kernels: fused: the decode operations, the LM head's launch
  /// ending the step where it can, or with GPUBENCH_DECODE_STEP=1 one kernel): the next token of step.token into
  /// step.token and step.history, step.pos moved on (models::GreedyStep); false (nothing run) where it has none, and
  /// decode + argmax serve instead.
  virtual bool decode_greedy(const models::GreedyStep& step, int64_t window) {
    (void)step, (void)window;
    return false;
  }
  /// What decode_greedy runs, or why it does not where it was asked for (empty before the first step and when off).
  virtual std::string greedy_note() const { return ""; }
  virtual int64_t cache_bytes() const = 0;
  /// Whether decode attention runs FlashAttention's kernel (models::KvCache::flash) rather than masked SDPA.
  virtual bool flash_decode() const = 0;
  virtual int64_t vocab() const = 0;
  /// Forward FLOPs per generated token at context length `context`: 2 x the matmul weights + attention's QK^T and AV.
  virtual double flops_per_token(int64_t context) const = 0;
};

/// A trainable model with its data and objective. Implementations own their module.
class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
  /// Random inputs and targets for `batch_size` samples, generated with `options` (device) and `gen`.
  virtual Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) = 0;
  /// Forward pass and loss (called inside the autocast scope).
  virtual torch::Tensor loss(const Batch& batch) = 0;

  // Inference mode (the module in eval mode, under c10::InferenceMode, inside the autocast scope).
  /// The inputs of one inference step for `batch_size` samples (default: make_batch's).
  virtual Batch make_inference_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) {
    return make_batch(batch_size, options, gen);
  }
  /// One inference step: the model's output for `batch` (logits; the UNet's next latents).
  virtual torch::Tensor infer(const Batch& batch) = 0;
  /// What one inference step computes, for the record.
  virtual std::string inference_step() const {
    return "one forward pass per batch in eval mode under inference mode (no autograd, no optimizer)";
  }
  /// Analytic FLOPs per sample of one inference step (default: the forward, a third of training's) and their
  /// attention part.
  virtual double inference_flops_per_sample() const { return train_flops_per_sample() / 3.0; }
  virtual double attention_inference_flops_per_sample() const { return attention_train_flops_per_sample() / 3.0; }

  /// Analytic training FLOPs per sample (3 x forward: forward, input-gradient and weight-gradient passes).
  virtual double train_flops_per_sample() const = 0;
  /// The part of train_flops_per_sample in attention's score and context matmuls (QK^T, AV); 0 for models without.
  virtual double attention_train_flops_per_sample() const { return 0; }
  /// Image classifiers: the square input side and the class count (what `data: folder` feeds); 0 for other models.
  virtual int64_t image_size() const { return 0; }
  virtual int64_t num_classes() const { return 0; }
  /// Tokens per sample for sequence models (tokens/s); 0 otherwise.
  virtual int64_t tokens_per_sample() const { return 0; }
  /// With `kernels: fused`, the fused operations this workload's training step uses (fused/fused_ops.h names);
  /// empty: it has none yet, and runs ATen's operations.
  virtual std::vector<std::string> fusions() const { return {}; }
  /// mode: generate: the model's generator, or null when it does not generate.
  virtual TextGenerator* generator() { return nullptr; }
};

/// Samples [start, start + length) of every tensor in `b` (micro-batches for gradient accumulation).
Batch slice_batch(const Batch& b, int64_t start, int64_t length);

/// A registered model: what it declares (keys, defaults, recipe, rules: core's ModelInfo) and how to build it.
struct ModelEntry {
  ModelInfo info;
  /// Builds the workload. It sees the scenario with the model's keys filled (fill_model_options) and checked by
  /// `info.check`, also when tests and library callers call it directly.
  std::function<std::unique_ptr<Workload>(const Scenario&)> make;
};

/// All registered models.
const std::vector<ModelEntry>& model_registry();
/// The entry named `name`; throws std::invalid_argument listing the known names.
const ModelEntry& find_model(const std::string& name);

/// Number of trainable parameters (elements) of `m`.
int64_t count_parameters(const torch::nn::Module& m);

}  // namespace gpubench::engine
