#pragma once
// ResNet's batch-norm with its ReLU, and with the residual add before that ReLU, and its max pool, as gpubench's own
// CUDA kernels for `kernels: fused` (issue #32), torch-free. Channels-last (NHWC) tensors viewed as [rows = N*H*W, C];
// each thread keeps 8 channels' constants in registers and walks rows with four in flight. Training's statistics in
// one read: per channel, sums of (x - k) and (x - k)^2 (k the channel's first value), fp32 in each thread and fp64
// across blocks by atomics, so no finalising launch; the next pass turns the sums into scale and shift itself. The
// output with the add and the ReLU in one more pass, which also writes the ReLU's mask as one byte per 8 elements.
// Backward, the two per-channel sums in one read of dy, x and the mask, and the input's (and the residual's)
// gradient in one more. torchvision's semantics: biased variance to normalise, unbiased into the running variance,
// running = (1 - momentum) running + momentum batch.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused {

/// Whether the kernels take a [rows, c] tensor: c a multiple of 8 (16-byte accesses), rows >= 1.
bool batch_norm_takes(int64_t rows, int64_t c);

/// The fp64 workspace (elements) each launch below needs for c channels; the launch zeroes it.
int64_t batch_norm_workspace(int64_t c);

/// y = relu?(x * scale + shift (+ z)) with scale = weight * invstd and shift = bias - mean * scale per channel, the
/// batch's mean and biased variance computed here; save_mean and save_invstd ([c], fp32) get them for the backward
/// pass, and running_mean / running_var (may be null) are updated. `mask` ([rows * c / 8] bytes) non-null: the ReLU,
/// its mask written there; null: no ReLU. x, z (may be null) and y of `dtype`, 16-byte aligned; weight and bias fp32
/// (may be null: 1 and 0).
cudaError_t launch_batch_norm_forward(const void* x, const void* z, void* y, uint8_t* mask, DType dtype, int64_t rows,
                                      int64_t c, const float* weight, const float* bias, float* running_mean,
                                      float* running_var, float momentum, float eps, float* save_mean,
                                      float* save_invstd, double* workspace, cudaStream_t stream);

/// Its gradient: g = dy masked by the forward's mask (where one was written); dz = g (may be null: no residual),
/// grad_bias = sum g, grad_weight = sum g (x - mean) invstd,
/// dx = weight invstd (g - mean(g) - (x - mean) invstd^2 mean(g (x - mean))).
cudaError_t launch_batch_norm_backward(const void* dy, const uint8_t* mask, const void* x, void* dx, void* dz,
                                       DType dtype, int64_t rows, int64_t c, const float* weight,
                                       const float* save_mean, const float* save_invstd, float* grad_weight,
                                       float* grad_bias, double* workspace, cudaStream_t stream);

/// A channels-last max pool: [n, h, w, c] in, [n, oh, ow, c] out, a k x k window at `stride` with `pad` (no
/// dilation; oh = (h + 2 pad - k) / stride + 1 as ATen's floor mode).
struct PoolShape {
  int64_t n, h, w, c, oh, ow;
  int k, stride, pad;
};

/// Whether the kernels take it: c a multiple of 8, k * k <= 256 (a window position fits a byte), pad <= k / 2.
bool max_pool_takes(const PoolShape& s);

/// y = the window maxima (the first in scan order; a NaN wins, as ATen's), and `where` (one byte per output element,
/// 8-byte aligned) their positions in the window for the backward pass.
cudaError_t launch_max_pool_forward(const void* x, void* y, uint8_t* where, DType dtype, const PoolShape& s,
                                    cudaStream_t stream);

/// dx: each input element's sum (fp32, ATen's order) of the gradients of the windows whose maximum it was.
cudaError_t launch_max_pool_backward(const void* dy, const uint8_t* where, void* dx, DType dtype, const PoolShape& s,
                                     cudaStream_t stream);

}  // namespace gpubench::engine::fused
