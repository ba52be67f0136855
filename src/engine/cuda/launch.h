#pragma once
// What the CUDA module's torch-side calls (cuda/*_calls.cpp) share to launch its kernels: a tensor's storage type,
// the current stream and the error check.

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>
#include <string>

#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused::launch {

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

}  // namespace gpubench::engine::fused::launch
