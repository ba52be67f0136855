#pragma once
// What the decode kernels (decode_kernels.cu, decode_step_kernel.cu) share on the device: eight 16-bit values of one
// 16-byte word as floats, a warp's sum, and the two ways they read weights once (a 16-byte load that skips L1, an L2
// prefetch).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

namespace gpubench::engine::fused::device {

__device__ __forceinline__ float2 pair_to_float2(const __nv_bfloat162& v) { return __bfloat1622float2(v); }
__device__ __forceinline__ float2 pair_to_float2(const __half2& v) { return __half22float2(v); }
template <typename T>
struct PairOf;
template <>
struct PairOf<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
template <>
struct PairOf<__half> {
  using type = __half2;
};

/// Eight 16-bit values (one 16-byte load) as floats.
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const auto* p = reinterpret_cast<const typename PairOf<T>::type*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = pair_to_float2(p[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

/// A warp's softmax numerators over row[0, n) in place, exp(row[i] - max), and (max, their sum) in every lane
/// (-inf and 0 for an empty row).
__device__ __forceinline__ float2 softmax_numerators(float* row, int n, int lane) {
  float m = -INFINITY;
  for (int i = lane; i < n; i += 32) m = fmaxf(m, row[i]);
  m = warp_max(m);
  float l = 0.0f;
  for (int i = lane; i < n; i += 32) {
    const float e = __expf(row[i] - m);
    row[i] = e;
    l += e;
  }
  return make_float2(m, warp_sum(l));
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/// A 16-byte load of weights read once: not kept in L1, with the L2's next 256 bytes fetched beside it.
__device__ __forceinline__ uint4 load_once(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
#else
  return __ldcs(static_cast<const uint4*>(p));
#endif
}

/// An L2 eviction policy for a kernel's weight loads (createpolicy): evict_first where `first` (weights are read once
/// a step, and a step streams far more of them than L2 holds: first in line to go, they leave the KV cache, the
/// activations and the small per-step tables in L2), else evict_normal, the loads' default priority.
__device__ __forceinline__ uint64_t weight_policy(bool first) {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (first) {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  }
#else
  (void)first;
#endif
  return policy;
}

/// load_once with an L2 eviction policy (weight_policy).
__device__ __forceinline__ uint4 load_once(const void* p, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
#else
  (void)policy;
  return __ldcs(static_cast<const uint4*>(p));
#endif
}

/// 16 bytes copied from global to shared memory asynchronously (through L2, not L1), waited for by copies_wait.
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(smem))),
               "l"(gmem)
               : "memory");
}
/// Waits for every copy16_async this thread issued (their data is then visible to it; to the block after a barrier).
__device__ __forceinline__ void copies_wait() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");
}

}  // namespace gpubench::engine::fused::device
