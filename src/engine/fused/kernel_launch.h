#pragma once
// Whether gpubench's kernels (the CUDA module's, src/engine/cuda/kernel_calls.h) serve a tensor: what the torch-side
// fused operations (fused_ops.cpp, batch_norm_ops.cpp, decode_ops.cpp, fp8.cpp) ask before they hand it to them.

#include <ATen/ATen.h>

#include "fused/fused_ops.h"

namespace gpubench::engine::fused::launch {

/// Whether gpubench's kernels serve `t`: CUDA, in a build with them, in one of `allow_fp32` ? (bf16, fp16, fp32) :
/// (bf16, fp16).
inline bool on_kernels(const at::Tensor& t, bool allow_fp32 = true) {
  if (!t.is_cuda() || !cuda_kernels_compiled()) return false;
  const at::ScalarType s = t.scalar_type();
  return s == at::kBFloat16 || s == at::kHalf || (allow_fp32 && s == at::kFloat);
}

}  // namespace gpubench::engine::fused::launch
