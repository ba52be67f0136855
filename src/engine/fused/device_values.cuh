#pragma once
// What gpubench's CUDA kernels (fused_kernels.cu, decode_kernels.cu) share: loading and storing one element of any
// storage type as fp32, the type they all compute in.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace gpubench::engine::fused::device {

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

}  // namespace gpubench::engine::fused::device
