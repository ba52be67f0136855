#pragma once
// gpubench's own CUDA kernels for `kernels: fused` (the transformer workloads), torch-free: nvcc compiles them and
// fused_ops.cpp launches them on LibTorch's current stream. Each does in one pass over memory what the ATen path does
// in several, and computes in fp32 whatever the storage type (bf16, fp16 or fp32, as `dtype` says).

#include <cstdint>

#include <cuda_runtime_api.h>

namespace gpubench::engine::fused {

/// Storage types the kernels read and write.
enum class DType : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };

/// Softmax cross-entropy of `rows` rows of `logits` (row stride `ld` elements, the first `vocab` columns real, the
/// rest padding), forward and gradient in one kernel: loss_rows[r] = logsumexp(x_r) - x_r[t_r], and x_r is
/// overwritten in place by (softmax(x_r) - onehot(t_r)) * inv_count[0] (zero in the padding columns). A row whose
/// target is `ignore_index` gets loss 0 and a zero gradient. `inv_count` is a device scalar (1 / the targets that
/// count), so no host synchronisation is needed.
cudaError_t launch_softmax_cross_entropy(void* logits, DType dtype, int64_t rows, int64_t ld, int64_t vocab,
                                         const int64_t* targets, int64_t ignore_index, const float* inv_count,
                                         float* loss_rows, cudaStream_t stream);

/// SwiGLU: out = silu(gate) * up, elementwise over n elements. With `amax` (an fp32 device value the caller set,
/// 0 for a fresh one) the largest |out| as stored is max-ed into it, as launch_fp8_amax would (FP8's scaling).
cudaError_t launch_swiglu_forward(const void* gate, const void* up, void* out, DType dtype, int64_t n,
                                  cudaStream_t stream, float* amax = nullptr);
/// Its gradient: d_gate = d_out * up * silu'(gate), d_up = d_out * silu(gate); `amax_gate` and `amax_up` as
/// `amax` above, for d_gate and d_up.
cudaError_t launch_swiglu_backward(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up,
                                   DType dtype, int64_t n, cudaStream_t stream, float* amax_gate = nullptr,
                                   float* amax_up = nullptr);

/// Rotary position embeddings applied to q and k in one launch. q is [tokens, q_heads, head_dim] and k [tokens,
/// k_heads, head_dim], contiguous, with tokens = batch x seq_len (row-major over batch then position); cos and sin
/// are [seq_len, head_dim] (the two halves equal, as transformers builds them). out = x * cos + rotate_half(x) * sin,
/// written to q_out and k_out. `inverse` applies the transpose instead (the backward pass: x * cos - rotate_half(x) *
/// sin with the halves' roles swapped). Eight elements an access where head_dim / 2 is a multiple of 8 and every
/// pointer 16-byte aligned. With `amax_q` / `amax_k` (fp32 slots holding a value, 0 for fresh ones), the largest
/// |q_out| and |k_out| as stored are maxed into them in the same pass (FP8's scaling).
cudaError_t launch_rotary(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                          DType dtype, int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads,
                          int64_t head_dim, bool inverse, cudaStream_t stream, float* amax_q = nullptr,
                          float* amax_k = nullptr);

// ---- BERT's sub-layer outputs (layer_norm_kernels.cu) --------------------------------------------------------------

/// The counter-based random stream of a dropout launch, as ATen's CUDA generator hands it out (PhiloxCudaState,
/// mirrored here so the kernels stay torch-free): the seed and offset as values, or, while a CUDA graph is being
/// captured, as device pointers read at replay plus the offset within the graph.
struct PhiloxArgs {
  uint64_t seed = 0;
  uint64_t offset = 0;
  const int64_t* seed_ptr = nullptr;
  const int64_t* offset_ptr = nullptr;
  uint64_t offset_intragraph = 0;
  bool captured = false;
};

/// Whether the row kernels below take rows of `n` elements: n <= 1,536 with n a multiple of 8 and every pointer
/// 16-byte aligned (eight elements a load), or n <= 1,024 otherwise (one a load). Elsewhere the ATen form runs.
bool layer_norm_kernels_support(int64_t n, bool aligned);

/// out = LayerNorm(dropout(y) + residual) over rows of n, in one pass: s = y * keep / keep_prob + residual is
/// rounded to the storage type and written to `sum` (the backward pass normalises it again), its mean and 1/std
/// (biased variance, fp32) to `mean` and `rstd`, and out = (s - mean) * rstd * gamma + beta. `residual` may be null
/// (no add). `keep` null: no dropout; else one byte per element, 1 where kept, drawn from `rng` by element index
/// (Philox 4x32-10; the same seed and offset give the same mask on any launch shape).
cudaError_t launch_dropout_add_layer_norm(const void* y, const void* residual, const float* gamma, const float* beta,
                                          void* sum, void* out, uint8_t* keep, float* mean, float* rstd, DType dtype,
                                          int64_t rows, int64_t n, float keep_prob, float eps, const PhiloxArgs& rng,
                                          cudaStream_t stream);

/// The fp32 scratch the backward pass below needs for its column sums: floats(rows, n) elements.
int64_t layer_norm_backward_scratch_floats(int64_t rows, int64_t n);

/// Its gradient in one pass over the rows: d_sum = LayerNorm's input gradient of d_out (+ d_extra where not null: a
/// gradient that reaches s by another path), d_y = d_sum * keep / keep_prob (d_sum where keep is null; d_y may be
/// null), and the column sums written to `col_sums` [3][n] fp32: d_gamma = sum(d_out * xhat), d_beta = sum(d_out),
/// d_bias = sum(d_y) (the bias gradient of the linear layer that produced y). `scratch` holds
/// layer_norm_backward_scratch_floats(rows, n) floats.
cudaError_t launch_dropout_add_layer_norm_backward(const void* d_out, const void* d_extra, const void* sum,
                                                   const float* gamma, const float* mean, const float* rstd,
                                                   const uint8_t* keep, float keep_prob, void* d_sum, void* d_y,
                                                   float* scratch, float* col_sums, DType dtype, int64_t rows,
                                                   int64_t n, cudaStream_t stream);

// ---- Llama's residual add + RMSNorm (layer_norm_kernels.cu) ---------------------------------------------------------

/// Whether the RMSNorm kernels take rows of `n`: n <= 8,192 a multiple of 8 with 16-byte aligned pointers, or n <=
/// 1,024 otherwise.
bool rms_norm_kernels_support(int64_t n, bool aligned);

/// s = y + residual (rounded to the storage type, written to `sum`) and out = s * rstd * gamma over rows of n, with
/// rstd = 1 / sqrt(mean(s^2) + eps) (fp32, written to `rstd`): one pass. With `amax` (an fp32 slot holding a value,
/// 0 for a fresh one) the largest |out| as stored is maxed into it in the same pass (FP8's scaling).
cudaError_t launch_add_rms_norm(const void* y, const void* residual, const float* gamma, void* sum, void* out,
                                float* rstd, DType dtype, int64_t rows, int64_t n, float eps, cudaStream_t stream,
                                float* amax = nullptr);

/// The fp32 scratch the backward pass below needs: floats(rows, n) elements.
int64_t rms_norm_backward_scratch_floats(int64_t rows, int64_t n);

/// Its gradient in one pass over the rows: d_sum = RMSNorm's input gradient of d_out (+ d_extra where not null: the
/// stream's own gradient), and d_gamma [n] (fp32) = the column sums of d_out * s * rstd. With `amax`, the largest
/// |d_sum| as stored is maxed into it, as launch_add_rms_norm's.
cudaError_t launch_add_rms_norm_backward(const void* d_out, const void* d_extra, const void* sum, const float* gamma,
                                         const float* rstd, void* d_sum, float* scratch, float* d_gamma, DType dtype,
                                         int64_t rows, int64_t n, cudaStream_t stream, float* amax = nullptr);

/// The fp32 scratch launch_gelu_backward_bias needs: floats(rows, n) elements.
int64_t gelu_backward_scratch_floats(int64_t rows, int64_t n);

/// GELU's gradient with the preceding linear layer's bias gradient: d_pre = d_act * gelu'(pre) (erf, or the tanh
/// approximation with `tanh_approx`) over rows x n, and bias_grad[n] (fp32) = the column sums of d_pre.
cudaError_t launch_gelu_backward_bias(const void* d_act, const void* pre, void* d_pre, float* scratch,
                                      float* bias_grad, DType dtype, int64_t rows, int64_t n, bool tanh_approx,
                                      cudaStream_t stream);

/// GEGLU over x [rows, 2m] = (a, g): out [rows, m] = a * gelu(g), the exact (erf) GELU.
cudaError_t launch_geglu(const void* x, void* out, DType dtype, int64_t rows, int64_t m, cudaStream_t stream);
/// Its gradient: d_x [rows, 2m] = (d_out * gelu(g), d_out * a * gelu'(g)).
cudaError_t launch_geglu_backward(const void* x, const void* d_out, void* d_x, DType dtype, int64_t rows, int64_t m,
                                  cudaStream_t stream);

/// out[n] (fp32) = the column sums of x [rows, n] (a bias gradient), with gelu_backward_scratch_floats(rows, n) floats
/// of scratch.
cudaError_t launch_column_sum(const void* x, float* scratch, float* out, DType dtype, int64_t rows, int64_t n,
                              cudaStream_t stream);

}  // namespace gpubench::engine::fused
