#pragma once
// What gpubench's CUDA kernels (fused_kernels.cu, decode_kernels.cu, fp8_kernels.cu) share: loading and storing one
// element, or eight from one 16-byte access, of any storage type as fp32, the type they all compute in; and the
// amax reduction (as bits) FP8's scaling reads.

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

/// v as the storage type keeps it (rounded to nearest), back in fp32.
__device__ __forceinline__ float stored(float v, const float*) { return v; }
__device__ __forceinline__ float stored(float v, const __nv_bfloat16*) { return __bfloat162float(__float2bfloat16(v)); }
__device__ __forceinline__ float stored(float v, const __half*) { return __half2float(__float2half(v)); }

/// Eight consecutive elements as fp32 from one 16-byte load (two for fp32); p 16-byte aligned.
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float v[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void load8(const __half* p, float v[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const __half2*>(&raw);
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void load8(const float* p, float v[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

/// Eight consecutive elements stored (rounded to nearest) with one 16-byte store (two for fp32); p 16-byte aligned.
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float v[8]) {
  uint4 raw;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&raw);
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}
__device__ __forceinline__ void store8(__half* p, const float v[8]) {
  uint4 raw;
  auto* h = reinterpret_cast<__half2*>(&raw);
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}
__device__ __forceinline__ void store8(float* p, const float v[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

/// |v| as its bit pattern: for non-negative floats the unsigned order is the numeric order, and a NaN (any payload,
/// sign cleared) orders above inf, so the maximum of the bits is the amax with NaN propagated.
__device__ __forceinline__ unsigned abs_bits(float v) { return __float_as_uint(fabsf(v)); }

/// The block's largest `m` (abs_bits values) into *out by one atomicMax; every thread of the block calls it (blockDim.x
/// a multiple of 32, at most 1,024). A kernel may call it more than once: the first barrier keeps a later call's
/// writes from the shared slots until warp 0 has read the earlier call's.
__device__ __forceinline__ void block_amax(unsigned m, unsigned* out) {
  __shared__ unsigned warps[32];
  __syncthreads();
  m = __reduce_max_sync(0xffffffffu, m);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warps[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < static_cast<int>(blockDim.x >> 5) ? warps[lane] : 0u;
    m = __reduce_max_sync(0xffffffffu, m);
    if (lane == 0) atomicMax(out, m);
  }
}

}  // namespace gpubench::engine::fused::device
