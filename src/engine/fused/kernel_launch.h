#pragma once
// What the torch-side fused operations (fused_ops.cpp, decode_ops.cpp) share to launch gpubench's kernels: whether a
// tensor is served by them, its storage type, the current stream and the error check.

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#ifdef GPUBENCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "fused/fused_kernels.h"
#endif

namespace gpubench::engine::fused::launch {

/// Whether gpubench's kernels serve `t`: CUDA, in a build with them, in one of `allow_fp32` ? (bf16, fp16, fp32) :
/// (bf16, fp16).
inline bool on_kernels(const at::Tensor& t, bool allow_fp32 = true) {
#ifdef GPUBENCH_WITH_CUDA
  const at::ScalarType s = t.scalar_type();
  return t.is_cuda() && (s == at::kBFloat16 || s == at::kHalf || (allow_fp32 && s == at::kFloat));
#else
  (void)t;
  (void)allow_fp32;
  return false;
#endif
}

#ifdef GPUBENCH_WITH_CUDA
inline DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kFloat16;
    default: return DType::kFloat32;
  }
}

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

inline cudaStream_t stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
#endif

}  // namespace gpubench::engine::fused::launch
