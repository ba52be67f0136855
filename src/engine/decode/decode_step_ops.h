#pragma once
// `kernels: fused` in mode: generate at batch 1: the whole greedy decode step as one kernel (decode_step_kernel.h),
// for a model that describes its weights and cache once. Off by default: on the H200 it was slower than the decode
// operations' step (TinyLlama 733 tokens/s against 886, f77cd0e:results/2026-12-03-h200-decode-step-kernel), so it runs only
// when asked for (kernel_options.decode_one_kernel: true, or set_decode_step_enabled). Where it is off or does not serve (not CUDA
// sm_90 or later, not bf16/fp16, shapes it does not take), make() returns null and the model runs its step by the
// decode operations (decode_ops.h) instead.

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

namespace gpubench::engine::fused {

/// One layer's tensors as the step kernel reads them: every matrix [outputs, inputs] contiguous (GPT-2's Conv1D
/// weights transposed), undefined where the model has none (biases, LayerNorm's bias, the gate of a GELU MLP).
struct DecodeStepLayerWeights {
  at::Tensor attn_norm_w, attn_norm_b, wq, wk, wv, bq, bk, bv, wo, bo;
  at::Tensor mlp_norm_w, mlp_norm_b, w_gate, w_up, b_up, w_down, b_down;
};

/// The model and its cache ([1, positions, kv_heads, head_dim] per layer).
struct DecodeStepWeights {
  std::vector<DecodeStepLayerWeights> layers;
  std::vector<at::Tensor> k_cache, v_cache;
  at::Tensor embed, pos_embed, rope_cos, rope_sin, final_norm_w, final_norm_b, lm_head;
  int64_t q_heads = 0, kv_heads = 0;
  bool rms = true;
  double eps = 1e-5;
};

class DecodeStep {
 public:
  /// The kernel's plan for these weights (it keeps them), or null where it is off or does not serve; `why` says why
  /// it does not serve (left empty when it is off).
  static std::unique_ptr<DecodeStep> make(const DecodeStepWeights& w, std::string* why = nullptr);
  ~DecodeStep();
  DecodeStep(const DecodeStep&) = delete;
  DecodeStep& operator=(const DecodeStep&) = delete;
  /// One step: the token in `token` (int64 [1, 1]) at device position `pos` (int64, one element), attending to the
  /// first `window` positions; the greedy next token goes to `token` itself; returns the logits [1, vocab].
  at::Tensor step(at::Tensor& token, const at::Tensor& pos, int64_t window);
  /// The last step's logits [1, vocab].
  const at::Tensor& logits() const;

 private:
  DecodeStep() = default;
  struct State;
  std::unique_ptr<State> state_;
};

/// Whether models make the step kernel (kernel_options.decode_one_kernel; the engine sets it for each run, tests too).
bool decode_step_enabled();
void set_decode_step_enabled(bool on);

}  // namespace gpubench::engine::fused
