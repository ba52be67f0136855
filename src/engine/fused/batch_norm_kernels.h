#pragma once
// ResNet's batch-norm with its ReLU, and with the residual add before that ReLU, as gpubench's own CUDA kernels for
// `kernels: fused` (issue #32), torch-free. Channels-last (NHWC) tensors viewed as [rows = N*H*W, C]: training's
// statistics in one read (Welford per thread, Chan's merge across threads and row splits, in fp32), the normalised
// output with the add and the ReLU in one more pass; backward, the two per-channel sums in one read and the input's
// (and the residual's) gradient in one more, the ReLU's mask taken from the output. torchvision's semantics: biased
// variance to normalise, unbiased into the running variance, running = (1 - momentum) running + momentum batch.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fused/fused_kernels.h"

namespace gpubench::engine::fused {

/// Whether the kernels take a [rows, c] tensor: c a multiple of 8 (16-byte accesses), rows >= 1.
bool batch_norm_takes(int64_t rows, int64_t c);

/// The fp32 workspace (elements) both launches below need for a [rows, c] tensor.
int64_t batch_norm_workspace(int64_t rows, int64_t c);

/// y = relu?(x * scale + shift (+ z)) with scale = weight * invstd and shift = bias - mean * scale per channel, the
/// batch's mean and biased variance computed here; save_mean and save_invstd ([c], fp32) get them for the backward
/// pass, and running_mean / running_var (may be null) are updated. x, z (may be null) and y of `dtype`, 16-byte
/// aligned; weight and bias fp32 (may be null: 1 and 0).
cudaError_t launch_batch_norm_forward(const void* x, const void* z, void* y, DType dtype, int64_t rows, int64_t c,
                                      bool relu, const float* weight, const float* bias, float* running_mean,
                                      float* running_var, float momentum, float eps, float* save_mean,
                                      float* save_invstd, float* workspace, cudaStream_t stream);

/// Its gradient: g = dy masked by y > 0 where `relu`; dz = g (may be null: no residual), grad_bias = sum g,
/// grad_weight = sum g (x - mean) invstd, dx = weight invstd (g - mean(g) - (x - mean) invstd^2 mean(g (x - mean))).
cudaError_t launch_batch_norm_backward(const void* dy, const void* y, const void* x, void* dx, void* dz, DType dtype,
                                       int64_t rows, int64_t c, bool relu, const float* weight,
                                       const float* save_mean, const float* save_invstd, float* grad_weight,
                                       float* grad_bias, float* workspace, cudaStream_t stream);

}  // namespace gpubench::engine::fused
