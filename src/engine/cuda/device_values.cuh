#pragma once
// What gpubench's CUDA kernels (fused_kernels.cu, layer_norm_kernels.cu, decode_kernels.cu, fp8_kernels.cu) share:
// loading and storing one element, or a vector of them in 16-byte words, of any storage type as fp32, the type they
// all compute in; the amax reduction (as bits) FP8's scaling reads; and their launchers' alignment and SM-count
// questions.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpubench::engine::fused::device {

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

/// x as the storage type holds it.
template <typename T>
__device__ __forceinline__ float rounded(float x) {
  T t;
  store(&t, 0, x);
  return load(&t, 0);
}

/// V consecutive elements p[i..i+V) as fp32: whole 16-byte words for V > 1 (p + i 16-byte aligned).
template <typename T, int V>
__device__ __forceinline__ void load_v(const T* __restrict__ p, int64_t i, float (&f)[V]) {
  if constexpr (V == 1) {
    f[0] = load(p, i);
  } else {
    static_assert(V * sizeof(T) % 16 == 0, "whole 16-byte words");
    constexpr int kWords = V * static_cast<int>(sizeof(T)) / 16;
    uint4 w[kWords];
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = reinterpret_cast<const uint4*>(p + i)[k];
    const T* e = reinterpret_cast<const T*>(w);
#pragma unroll
    for (int k = 0; k < V; ++k) f[k] = load(e, k);
  }
}

/// f stored (rounded to nearest) to p[i..i+V), as load_v reads.
template <typename T, int V>
__device__ __forceinline__ void store_v(T* __restrict__ p, int64_t i, const float (&f)[V]) {
  if constexpr (V == 1) {
    store(p, i, f[0]);
  } else {
    constexpr int kWords = V * static_cast<int>(sizeof(T)) / 16;
    uint4 w[kWords];
    T* e = reinterpret_cast<T*>(w);
#pragma unroll
    for (int k = 0; k < V; ++k) store(e, k, f[k]);
#pragma unroll
    for (int k = 0; k < kWords; ++k) reinterpret_cast<uint4*>(p + i)[k] = w[k];
  }
}

/// |v| as its bit pattern: for non-negative floats the unsigned order is the numeric order, and a NaN (any payload,
/// sign cleared) orders above inf, so the maximum of the bits is the amax with NaN propagated.
__device__ __forceinline__ unsigned abs_bits(float v) { return __float_as_uint(fabsf(v)); }

/// m = max(m, |v| as the storage type T holds it): the amax of what a kernel writes, as FP8's scaling must see it.
template <typename T>
__device__ __forceinline__ void max_stored(unsigned& m, float v) {
  m = max(m, abs_bits(rounded<T>(v)));
}

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

/// Whether p (null counts) is aligned to `bytes`.
inline bool aligned(const void* p, size_t bytes) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0; }
inline bool aligned16(const void* p) { return aligned(p, 16); }

/// The current device's multiprocessor count (132 where it cannot be asked).
inline int multiprocessors() {
  int dev = 0, sms = 132;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

}  // namespace gpubench::engine::fused::device
