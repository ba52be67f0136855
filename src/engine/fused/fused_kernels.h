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

/// SwiGLU: out = silu(gate) * up, elementwise over n elements.
cudaError_t launch_swiglu_forward(const void* gate, const void* up, void* out, DType dtype, int64_t n,
                                  cudaStream_t stream);
/// Its gradient: d_gate = d_out * up * silu'(gate), d_up = d_out * silu(gate).
cudaError_t launch_swiglu_backward(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up,
                                   DType dtype, int64_t n, cudaStream_t stream);

/// Rotary position embeddings applied to q and k in one launch. q is [tokens, q_heads, head_dim] and k [tokens,
/// k_heads, head_dim], contiguous, with tokens = batch x seq_len (row-major over batch then position); cos and sin
/// are [seq_len, head_dim] (the two halves equal, as transformers builds them). out = x * cos + rotate_half(x) * sin,
/// written to q_out and k_out. `inverse` applies the transpose instead (the backward pass: x * cos - rotate_half(x) *
/// sin with the halves' roles swapped).
cudaError_t launch_rotary(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                          DType dtype, int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads,
                          int64_t head_dim, bool inverse, cudaStream_t stream);

}  // namespace gpubench::engine::fused
