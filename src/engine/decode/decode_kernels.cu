#include "decode/decode_kernels.h"

#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "decode/decode_device.cuh"
#include "fused/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::copies_wait;
using device::copy16_async;
using device::load;
using device::load_once;
using device::load_v;
using device::prefetch_l2;
using device::rounded;
using device::softmax_numerators;
using device::store;
using device::store_v;
using device::unpack8;
using device::warp_sum;
using device::weight_policy;


/// One or two 16-bit values from their bits (shared memory holds them as words).
template <typename T>
__device__ __forceinline__ float from_bits(uint16_t b);
template <>
__device__ __forceinline__ float from_bits<__nv_bfloat16>(uint16_t b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
template <>
__device__ __forceinline__ float from_bits<__half>(uint16_t b) { return __half2float(__ushort_as_half(b)); }
template <typename T>
__device__ __forceinline__ float2 pair_from_bits(uint32_t w) {
  return make_float2(from_bits<T>(static_cast<uint16_t>(w & 0xffffu)), from_bits<T>(static_cast<uint16_t>(w >> 16)));
}


// ---- programmatic dependent launch ------------------------------------------------------------------------------
//
// Every decode kernel is launched so that it may start while the kernel before it in the stream still runs (Hopper's
// programmatic dependent launch, also inside a CUDA graph): it first issues the loads that depend on nothing an earlier
// kernel of the step writes (weights, the cache's older positions), then waits for the previous kernel to finish,
// and only then lets the next one start. Before its wait a kernel reads nothing the step writes (only weights, and
// L2 prefetches of cache rows, which are hints); every other read and every write comes after it.

/// Waits until the previous kernel in the stream has finished and its writes are visible (a no-op before sm_90 and
/// when the launch was not programmatic).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next kernel's blocks start (and issue their weight loads) while this one runs.
__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}


/// The current device's attribute `kAttr` (0 where it cannot be asked or is not positive), asked once per device.
template <cudaDeviceAttr kAttr>
int device_attribute() {
  static std::atomic<int> value[64];  // 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  int v = value[device].load(std::memory_order_relaxed);
  if (v == 0) {
    if (cudaDeviceGetAttribute(&v, kAttr, device) != cudaSuccess || v <= 0) return 0;
    value[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

/// The current device's compute capability major.
int device_major() { return device_attribute<cudaDevAttrComputeCapabilityMajor>(); }

/// kernel_options.decode_pdl and decode_evict_first, as the engine set them for this run (on by default).
std::atomic<bool> g_pdl_allowed{true}, g_evict_first{true};

/// Whether this device takes programmatic launches (compute capability 9.0 and later) and the run allows them
/// (kernel_options.decode_pdl: false measures what they buy).
bool programmatic_launch() { return g_pdl_allowed.load(std::memory_order_relaxed) && device_major() >= 9; }

/// Whether the streamed and run GEMVs load their weights with L2's evict_first priority (weight_policy), unless the run
/// switched it off (kernel_options.decode_evict_first: false, for measuring what it buys).
bool weights_evict_first() {
  return g_evict_first.load(std::memory_order_relaxed);
}

/// Whether the streamed GEMV can run here: sm_90 and later (decode_ops decides which products it takes).
bool stream_available() { return device_major() >= 9; }

/// Launches a decode kernel with `smem` bytes of dynamic shared memory in clusters of `cluster_x` blocks along x (0:
/// no clusters), programmatically where the device allows.
template <typename... Params, typename... Args>
cudaError_t launch_kernel_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, unsigned cluster_x,
                                  cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[2];
  unsigned count = 0;
  if (programmatic_launch()) {
    attribute[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster_x > 0) {
    attribute[count].id = cudaLaunchAttributeClusterDimension;
    attribute[count].val.clusterDim.x = cluster_x;
    attribute[count].val.clusterDim.y = 1;
    attribute[count++].val.clusterDim.z = 1;
  }
  config.attrs = count > 0 ? attribute : nullptr;
  config.numAttrs = count;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  return e != cudaSuccess ? e : cudaGetLastError();
}

/// Launches a decode kernel with `smem` bytes of dynamic shared memory, programmatically where the device allows.
template <typename... Params, typename... Args>
cudaError_t launch_kernel_smem(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               Args... args) {
  return launch_kernel_cluster(kernel, grid, block, smem, 0, stream, args...);
}

/// Launches a decode kernel without dynamic shared memory.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
  return launch_kernel_smem(kernel, grid, block, 0, stream, args...);
}

// ---- GEMV: a few rows of x against every weight row, one warp per output column ----------------------------------

constexpr int kGemvWarps = 8;

/// What one warp sums and its split group adds up: the products (kOut x M), each input row's sum and sum of squares
/// (2 x M, with a norm) and, with a LayerNorm, W . gamma and W . beta per output (2 x kOut).
template <int M, int kOut>
struct GemvSums {
  static constexpr int kProducts = 0, kRowSum = kOut * M, kRowSquares = kRowSum + M, kGamma = kRowSquares + M,
                       kBeta = kGamma + kOut, kCount = kBeta + kOut;
};

/// The better of (v, i) and (v2, i2) into (v, i) for an argmax: NaN is the largest, as torch.argmax has it; ties go
/// to the first index.
__device__ __forceinline__ void better(float& v, int64_t& i, float v2, int64_t i2) {
  const bool nan2 = v2 != v2, nan1 = v != v;
  if ((nan2 && !nan1) || (nan2 == nan1 && (v2 > v || (v2 == v && i2 < i)))) {
    v = v2;
    i = i2;
  }
}

__device__ __forceinline__ void warp_best(float& v, int64_t& idx) {
  for (int off = 16; off > 0; off >>= 1) {
    const float v2 = __shfl_xor_sync(0xffffffffu, v, off);
    const int64_t i2 = __shfl_xor_sync(0xffffffffu, idx, off);
    better(v, idx, v2, i2);
  }
}

/// The output of row r for column j from its bias and residual values (0 where there is none; loaded early, off the
/// kernel's tail): act(dot + bias) (+ up for SwiGLU) + residual.
/// Returns the output as stored (rounded to T).
template <typename T, int ACT>
__device__ __forceinline__ float gemv_epilogue_values(float dot, float up, float bias, bool has_residual, float residual,
                                                      T* out, int64_t n, int64_t j, int r) {
  float v = dot + bias;
  if (ACT == static_cast<int>(DecodeActivation::kGeluTanh)) {
    v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  } else if (ACT == static_cast<int>(DecodeActivation::kSwiglu)) {
    v = v / (1.0f + __expf(-v)) * up;
  }
  if (has_residual) v += residual;
  store(out, r * n + j, v);
  return rounded<T>(v);
}

/// The output of row r for column j: act(dot + bias) (+ up for SwiGLU) + residual.
template <typename T, int ACT>
__device__ __forceinline__ float gemv_epilogue(float dot, float up, const T* bias, const T* residual, T* out, int64_t n,
                                               int64_t j, int r) {
  return gemv_epilogue_values<T, ACT>(dot, up, bias != nullptr ? load(bias, j) : 0.0f, residual != nullptr,
                                      residual != nullptr ? load(residual, r * n + j) : 0.0f, out, n, j, r);
}

/// norm(x_r) . W_j from the sums: with no norm the product itself; RMSNorm r (x.(gamma W_j)), r = 1/sqrt(mean x^2 +
/// eps); LayerNorm r (x.(gamma W_j) - mean (gamma . W_j)) + beta . W_j, r = 1/sqrt(var + eps).
__device__ __forceinline__ float normed_dot(float dot, int kind, float sum, float squares, float gamma_w, float beta_w,
                                            float inv_k, float eps) {
  if (kind == 0) return dot;
  if (kind == 1) return dot * rsqrtf(squares * inv_k + eps);
  const float mean = sum * inv_k;
  const float r = rsqrtf(fmaxf(squares * inv_k - mean * mean, 0.0f) + eps);
  return r * (dot - mean * gamma_w) + beta_w;
}

/// Each output column j is `split` warps' work (1, 2, 4 or 8; they share k and add up through shared memory), so
/// that a narrow matrix still has enough warps, and enough loads in flight, to keep the memory system busy. Every
/// lane keeps four chunks of 16 bytes in flight at a time (of gate and up both with SwiGLU: eight loads; with two
/// chunks of each, 69 registers instead of 96, TinyLlama's step was no faster on the H200); the first four, and L2
/// prefetches of the next twelve, are issued before the wait for the previous kernel. The input's norm is computed in the same pass: gamma (and
/// beta) multiply the weights, the row statistics are summed beside the product and applied at the end, so a norm
/// costs no pass over x of its own and no barrier before the weights stream.
template <typename T, int M, int ACT>
__global__ void __launch_bounds__(kGemvWarps * 32)
    decode_gemv(const T* __restrict__ x, int64_t ldx, DecodeWeights w, const T* __restrict__ bias,
                const T* __restrict__ residual, T* __restrict__ out, int64_t n, int64_t k, int split,
                DecodeInputNorm norm) {
  constexpr bool kGlu = ACT == static_cast<int>(DecodeActivation::kSwiglu);
  constexpr int kOut = kGlu ? 2 : 1;
  using S = GemvSums<M, kOut>;
  __shared__ float partial[kGemvWarps][S::kCount];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const T* nw = static_cast<const T*>(norm.weight);
  const T* nb = static_cast<const T*>(norm.bias);
  const int kind = nw == nullptr ? 0 : norm.rms ? 1 : 2;  // no norm, RMSNorm, LayerNorm (uniform over the grid)
  const int part = warp % split;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * (kGemvWarps / split) + warp / split;
  const bool valid = j < n;
  const T* rows[kOut];
  if (kGlu) {
    rows[0] = static_cast<const T*>(w.w[0]) + (valid ? j : 0) * k;
    rows[kOut - 1] = static_cast<const T*>(w.w[1]) + (valid ? j : 0) * k;
  } else {
    int64_t r = valid ? j : 0;  // which block holds row j (no indexing of the parameter by a variable: no stack copy)
    const void* base = w.w[0];
    if (w.count > 1 && r >= w.rows[0]) {
      r -= w.rows[0];
      base = w.w[1];
      if (w.count > 2 && r >= w.rows[1]) {
        r -= w.rows[1];
        base = w.w[2];
      }
    }
    rows[0] = static_cast<const T*>(base) + r * k;
  }
  const int64_t chunks = valid ? k / 8 : 0, step = 32 * static_cast<int64_t>(split);
  int64_t c = part * 32 + lane;
  uint4 first[4][kOut];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
      if (c + u * step < chunks) first[u][o] = __ldcs(reinterpret_cast<const uint4*>(rows[o]) + c + u * step);
    }
  }
  if ((lane & 7) == 0) {  // one prefetch per 128-byte line
    for (int64_t p = c + 4 * step; p < chunks && p < c + 16 * step; p += step) {
#pragma unroll
      for (int o = 0; o < kOut; ++o) prefetch_l2(reinterpret_cast<const uint4*>(rows[o]) + p);
    }
  }
  // Lane r < M of the warp that writes output j holds its bias (a weight: before the wait) and residual (after it,
  // loaded now rather than in the epilogue, where it would be one more round trip on the kernel's tail).
  const bool writes = valid && part == 0 && lane < M;
  const float bias_j = writes && bias != nullptr ? load(bias, j) : 0.0f;
  wait_for_previous_kernel();
  let_next_kernel_start();
  const float residual_j = writes && residual != nullptr ? load(residual, lane * n + j) : 0.0f;

  float v[S::kCount];
#pragma unroll
  for (int i = 0; i < S::kCount; ++i) v[i] = 0.0f;
  auto consume = [&](const uint4 (&wv)[kOut], int64_t cc) {
    float wf[kOut][8];
#pragma unroll
    for (int o = 0; o < kOut; ++o) unpack8<T>(wv[o], wf[o]);
    if (kind != 0) {
      float gf[8];
      unpack8<T>(__ldg(reinterpret_cast<const uint4*>(nw) + cc), gf);
      if (kind == 2) {
        float bf[8];
        if (nb != nullptr) {
          unpack8<T>(__ldg(reinterpret_cast<const uint4*>(nb) + cc), bf);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) bf[e] = 0.0f;
        }
#pragma unroll
        for (int o = 0; o < kOut; ++o) {
#pragma unroll
          for (int e = 0; e < 8; ++e) v[S::kBeta + o] = fmaf(wf[o][e], bf[e], v[S::kBeta + o]);
        }
      }
#pragma unroll
      for (int o = 0; o < kOut; ++o) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          wf[o][e] *= gf[e];
          if (kind == 2) v[S::kGamma + o] += wf[o][e];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float xf[8];
      unpack8<T>(__ldg(reinterpret_cast<const uint4*>(x + r * ldx) + cc), xf);
      if (kind != 0) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          v[S::kRowSum + r] += xf[e];
          v[S::kRowSquares + r] = fmaf(xf[e], xf[e], v[S::kRowSquares + r]);
        }
      }
#pragma unroll
      for (int o = 0; o < kOut; ++o) {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[S::kProducts + o * M + r] = fmaf(wf[o][e], xf[e], v[S::kProducts + o * M + r]);
      }
    }
  };
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    if (c + u * step < chunks) consume(first[u], c + u * step);
  }
  c += 4 * step;
  for (; c + 3 * step < chunks; c += 4 * step) {  // four loads issued before any is used
    uint4 wv[4][kOut];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int o = 0; o < kOut; ++o) wv[u][o] = __ldcs(reinterpret_cast<const uint4*>(rows[o]) + c + u * step);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) consume(wv[u], c + u * step);
  }
  for (; c < chunks; c += step) {
    uint4 wv[kOut];
#pragma unroll
    for (int o = 0; o < kOut; ++o) wv[o] = __ldcs(reinterpret_cast<const uint4*>(rows[o]) + c);
    consume(wv, c);
  }
  const int used = kind == 0 ? S::kRowSum : kind == 1 ? S::kGamma : S::kCount;  // the sums this launch needs
#pragma unroll
  for (int i = 0; i < S::kCount; ++i) {
    if (i < used) v[i] = warp_sum(v[i]);
  }
  if (split > 1) {
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < S::kCount; ++i) partial[warp][i] = v[i];
    }
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int i = 0; i < S::kCount; ++i) {
      float t = 0.0f;
      for (int s = 0; s < split; ++s) t += partial[warp + s][i];
      v[i] = t;
    }
  }
  if (!valid) return;
  const float inv_k = 1.0f / static_cast<float>(k);
#pragma unroll
  for (int r = 0; r < M; ++r) {
    if (lane != r) continue;
    float dot[kOut];
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
      dot[o] = normed_dot(v[S::kProducts + o * M + r], kind, v[S::kRowSum + r], v[S::kRowSquares + r],
                          v[S::kGamma + o], v[S::kBeta + o], inv_k, norm.eps);
    }
    gemv_epilogue_values<T, ACT>(dot[0], dot[kOut - 1], bias_j, residual != nullptr, residual_j, out, n, j, r);
  }
}

/// Warps per output column: at least 4,096 warps in all, while each lane keeps at least two 16-byte loads per row of
/// work (the best of 1, 2, 4, 8 on every TinyLlama and GPT-2 decode shape on the H200 but one, within 4 % there:
/// f77cd0e:results/2026-12-01-h200-fused-decode/gemv_bench.txt).
int auto_split(int64_t n, int64_t k) {
  const int64_t per_lane = k / 8 / 32;
  int split = 1;
  while (split < kGemvWarps && n * split < 4096 && per_lane / (2 * split) >= 2) split *= 2;
  return split;
}

template <typename T, int M>
cudaError_t gemv_rows(const void* x, int64_t ldx, const DecodeWeights& w, const void* bias, const void* residual,
                      void* out, int64_t n, int64_t k, DecodeActivation act, int split, const DecodeInputNorm& norm,
                      cudaStream_t stream) {
  if (split <= 0) split = auto_split(n, k);
  const int64_t per_block = kGemvWarps / split;
  const dim3 grid(static_cast<unsigned>((n + per_block - 1) / per_block));
  const auto* xs = static_cast<const T*>(x);
  const auto* b = static_cast<const T*>(bias);
  const auto* res = static_cast<const T*>(residual);
  auto* o = static_cast<T*>(out);
  const dim3 block(kGemvWarps * 32);
  switch (act) {
    case DecodeActivation::kNone: return launch_kernel(decode_gemv<T, M, 0>, grid, block, stream, xs, ldx, w, b, res, o, n, k, split, norm);
    case DecodeActivation::kGeluTanh: return launch_kernel(decode_gemv<T, M, 1>, grid, block, stream, xs, ldx, w, b, res, o, n, k, split, norm);
    case DecodeActivation::kSwiglu: return launch_kernel(decode_gemv<T, M, 2>, grid, block, stream, xs, ldx, w, b, res, o, n, k, split, norm);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t gemv_typed(const void* x, int64_t ldx, const DecodeWeights& w, const void* bias, const void* residual,
                       void* out, int64_t m, int64_t n, int64_t k, DecodeActivation act, int split,
                       const DecodeInputNorm& norm, cudaStream_t stream) {
  switch (m) {
    case 1: return gemv_rows<T, 1>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 2: return gemv_rows<T, 2>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 3: return gemv_rows<T, 3>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 4: return gemv_rows<T, 4>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 5: return gemv_rows<T, 5>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 6: return gemv_rows<T, 6>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 7: return gemv_rows<T, 7>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    case 8: return gemv_rows<T, 8>(x, ldx, w, bias, residual, out, n, k, act, split, norm, stream);
    default: return cudaErrorInvalidValue;
  }
}

// ---- the streamed GEMV (sm_90): one block an SM, its weight rows copied into shared memory by the copy engine ----
//
// A GEMV's blocks above each pull a few kilobytes of weights in two round trips and end; with PDL only their first
// loads overlap the previous kernel. Here the grid is one block per SM, each owning a contiguous run of outputs
// ("units": a weight row, or two rows for SwiGLU's gate and up or a rotary pair of q/k/v rows), and a ring of
// shared-memory slots fed by bulk asynchronous copies (cp.async.bulk, completed on an mbarrier per slot): before its
// wait for the previous kernel a block has requested up to ~100 KB of its weights (all of a q/k/v or output
// projection's share on TinyLlama), and afterwards every slot a warp has used is refilled at once, so each SM keeps
// its ring in flight until its run ends. Two such blocks fit an SM, so the next GEMV's block requests its weights
// while this one computes. x (normalized, as the storage type, which is what the norm's module returns) sits in
// shared memory beside the ring.

constexpr int kStreamWarps = 8;
constexpr int kStreamMaxSlots = 64;
constexpr int kStreamSmemBytes = 110 * 1024;  // two blocks an SM (228 KB on sm_90, 1 KB of it reserved per block)
constexpr int kStreamBarrierBytes = kStreamMaxSlots * 8;
constexpr int kStreamEpilogue = 128;  // outputs (x rows) whose bias and residual a block stages; rotary: head size

/// kStreamGreedy: a plain product (the run GEMV only) whose outputs also go through the greedy tail (DecodeGreedyTail).
enum StreamMode : int { kStreamPlain = 0, kStreamGelu = 1, kStreamSwiglu = 2, kStreamQkvCache = 3, kStreamGreedy = 4 };

/// What a streamed GEMV launch computes and where its outputs go (one struct: a kernel parameter).
struct StreamArgs {
  const void* x = nullptr;
  int64_t ldx = 0;
  DecodeWeights w;
  const void* bias = nullptr;
  const void* residual = nullptr;
  void* out = nullptr;  // [m, n] (not used by kStreamQkvCache)
  int64_t n = 0, k = 0;
  DecodeInputNorm norm;
  DecodeCacheWrite cache;  // kStreamQkvCache only
  int slots = 0;           // ring slots a block may use
  bool weights_first = false;  // weights loaded with L2's evict_first priority (weights_evict_first)
  DecodeGreedyTail greedy;     // kStreamGreedy only
};

__host__ __device__ constexpr int64_t stream_align(int64_t b) { return (b + 127) / 128 * 128; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void barrier_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void barrier_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/// `bytes` from global memory into shared memory at `dst` by the copy engine, completed on the mbarrier `bar`, with
/// the L2 eviction policy `policy` (weight_policy).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                          uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
      ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy) : "memory");
}
/// 16 bytes of shared memory (16-byte aligned) as one load: where the ring's rows were read through a uint4*, nvcc
/// emitted four 4-byte loads at a 16-byte lane stride (4-way bank conflicts); one load made TinyLlama's step 1.032x
/// as fast on the H200 (f77cd0e:results/2026-12-03-h200-decode-run-head, call 2).
__device__ __forceinline__ uint4 load_shared16(const uint4* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(smem_address(p)));
  return v;
}
__device__ __forceinline__ void barrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (done == 0);
}
#endif

/// Row j of the concatenated weight blocks.
template <typename T>
__device__ __forceinline__ const T* weight_row(const DecodeWeights& w, int64_t j, int64_t k) {
  const void* base = w.w[0];
  if (w.count > 1 && j >= w.rows[0]) {
    j -= w.rows[0];
    base = w.w[1];
    if (w.count > 2 && j >= w.rows[1]) {
      j -= w.rows[1];
      base = w.w[2];
    }
  }
  return static_cast<const T*>(base) + j * k;
}

/// The norm's gamma and beta for this thread's first chunk of x (zeros past k or without them): weights, so loaded
/// before the wait for the previous kernel, where stage_x would otherwise fetch them after x's statistics, a
/// dependent round trip on the kernel's critical path.
struct NormAhead {
  uint4 gamma = make_uint4(0, 0, 0, 0), beta = make_uint4(0, 0, 0, 0);
};
template <typename T>
__device__ __forceinline__ NormAhead norm_ahead(const StreamArgs& a) {
  NormAhead n;
  if (a.norm.weight != nullptr && threadIdx.x < a.k / 8) {
    n.gamma = __ldg(reinterpret_cast<const uint4*>(a.norm.weight) + threadIdx.x);
    if (a.norm.bias != nullptr) n.beta = __ldg(reinterpret_cast<const uint4*>(a.norm.bias) + threadIdx.x);
  }
  return n;
}

/// x's M rows (row stride a.ldx) into shared memory xs [M, k], normalized as the norm's module returns them (RMSNorm:
/// x r rounded to the storage type, then times gamma, rounded again; LayerNorm rounded once), by all kStreamWarps
/// warps of the block, after the wait for the previous kernel; ends with a barrier. `ahead`: norm_ahead's values.
template <typename T, int M>
__device__ __forceinline__ void stage_x(const StreamArgs& a, T* xs, const NormAhead& ahead) {
  const int64_t k = a.k, chunks = k / 8;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __shared__ float stats[kStreamWarps][M][2];
  const T* nw = static_cast<const T*>(a.norm.weight);
  const T* nb = static_cast<const T*>(a.norm.bias);
  float sum[M], squares[M];
#pragma unroll
  for (int r = 0; r < M; ++r) {
    sum[r] = 0.0f;
    squares[r] = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += kStreamWarps * 32) {
      // through L2 only: an earlier kernel of the step wrote it
      const uint4 v = __ldcg(reinterpret_cast<const uint4*>(static_cast<const T*>(a.x) + r * a.ldx) + c);
      reinterpret_cast<uint4*>(xs + r * k)[c] = v;
      if (nw == nullptr) continue;  // statistics only for a norm
      float f[8];
      unpack8<T>(v, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        sum[r] += f[e];
        squares[r] = fmaf(f[e], f[e], squares[r]);
      }
    }
  }
  if (nw != nullptr) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      sum[r] = warp_sum(sum[r]);
      squares[r] = warp_sum(squares[r]);
      if (lane == 0) {
        stats[warp][r][0] = sum[r];
        stats[warp][r][1] = squares[r];
      }
    }
    __syncthreads();
    const float inv_k = 1.0f / static_cast<float>(k);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float s = 0.0f, q = 0.0f;
#pragma unroll
      for (int i = 0; i < kStreamWarps; ++i) {
        s += stats[i][r][0];
        q += stats[i][r][1];
      }
      const bool rms = a.norm.rms;
      const float mean = rms ? 0.0f : s * inv_k;
      const float inv = rsqrtf((rms ? q * inv_k : fmaxf(q * inv_k - mean * mean, 0.0f)) + a.norm.eps);
      for (int64_t c = threadIdx.x; c < chunks; c += kStreamWarps * 32) {
        uint4* p = reinterpret_cast<uint4*>(xs + r * k) + c;
        float f[8], g[8], b[8];
        unpack8<T>(*p, f);
        const bool first = c == threadIdx.x;
        unpack8<T>(first ? ahead.gamma : __ldg(reinterpret_cast<const uint4*>(nw) + c), g);
        if (nb != nullptr) unpack8<T>(first ? ahead.beta : __ldg(reinterpret_cast<const uint4*>(nb) + c), b);
        T y[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float v =
              rms ? rounded<T>(f[e] * inv) * g[e] : (f[e] - mean) * inv * g[e] + (nb != nullptr ? b[e] : 0.0f);
          store(y, e, v);
        }
        *p = *reinterpret_cast<const uint4*>(y);
      }
    }
  }
  __syncthreads();
}

template <typename T, int M, int MODE>
__global__ void __launch_bounds__(kStreamWarps * 32, 2) decode_stream_gemv(const StreamArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kRows = MODE >= kStreamSwiglu ? 2 : 1;  // weight rows a unit reads
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t k = a.k, chunks = k / 8;
  const uint32_t row_bytes = static_cast<uint32_t>(k * sizeof(T)), unit_bytes = kRows * row_bytes;
  const uint32_t bars = smem_address(smem);
  T* xs = reinterpret_cast<T*>(smem + kStreamBarrierBytes);  // M x k
  unsigned char* ring = smem + kStreamBarrierBytes + stream_align(M * k * static_cast<int64_t>(sizeof(T)));
  const int64_t half = MODE == kStreamQkvCache ? a.cache.head_dim / 2 : 0;
  const int64_t units = MODE == kStreamQkvCache ? a.n / 2 : a.n;
  const int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const int count = static_cast<int>(u1 - u0), slots = a.slots < count ? a.slots : count;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Unit u's first weight row (its second: + half for a rotary pair, the same row of `up` for SwiGLU).
  auto unit_row = [&](int64_t u, int o) -> const T* {
    if constexpr (MODE == kStreamSwiglu) {
      return static_cast<const T*>(a.w.w[o]) + u * k;
    } else if constexpr (MODE == kStreamQkvCache) {
      return weight_row<T>(a.w, (u / half) * 2 * half + u % half + o * half, k);
    } else {
      return weight_row<T>(a.w, u, k);
    }
  };
  const uint64_t policy = weight_policy(a.weights_first);
  auto request = [&](int slot, int64_t u) {  // one thread: the unit's rows into the slot
    const uint32_t bar = bars + 8 * slot;
    barrier_expect(bar, unit_bytes);
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
      bulk_copy(smem_address(ring + static_cast<int64_t>(slot) * unit_bytes + o * row_bytes), unit_row(u, o),
                row_bytes, bar, policy);
    }
  };
  if (threadIdx.x == 0) {  // weights only before the wait: nothing an earlier kernel of the step writes
    for (int s = 0; s < slots; ++s) barrier_init(bars + 8 * s);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int s = 0; s < slots; ++s) request(s, u0 + s);
  }
  // What the epilogues add, staged once so that no unit's epilogue waits on a load of its own: the bias of the
  // block's outputs (a weight: before the wait) and their residual, or for the q/k/v product the rotary tables' row
  // at the position. Where it does not fit (more than kStreamEpilogue values), the epilogue loads them itself.
  __shared__ float epi[2][kStreamEpilogue];  // bias / cos, residual / sin
  const bool staged = MODE == kStreamQkvCache ? a.cache.cos != nullptr && a.cache.head_dim <= kStreamEpilogue
                                              : count * M <= kStreamEpilogue;
  if (MODE != kStreamQkvCache && staged && a.bias != nullptr) {
    for (int i = threadIdx.x; i < count * M; i += kStreamWarps * 32) {
      epi[0][i] = load(static_cast<const T*>(a.bias), u0 + i / M);
    }
  }
  const NormAhead ahead = norm_ahead<T>(a);
  wait_for_previous_kernel();
  let_next_kernel_start();

  int64_t pos = 0;
  if (MODE == kStreamQkvCache) {
    pos = *a.cache.pos;
    if (blockIdx.x == 0 && a.cache.used_k != nullptr && threadIdx.x < M) {
      a.cache.used_k[threadIdx.x] = static_cast<int>(pos + 1);
    }
    if (staged) {
      const int64_t d = a.cache.head_dim;
      for (int i = threadIdx.x; i < d; i += kStreamWarps * 32) {
        epi[0][i] = load(static_cast<const T*>(a.cache.cos) + pos * d, i);
        epi[1][i] = load(static_cast<const T*>(a.cache.sin) + pos * d, i);
      }
    }
  } else if (staged && a.residual != nullptr) {
    for (int i = threadIdx.x; i < count * M; i += kStreamWarps * 32) {
      epi[1][i] = load(static_cast<const T*>(a.residual), (i % M) * a.n + u0 + i / M);
    }
  }
  stage_x<T, M>(a, xs, ahead);  // ends with a barrier: epi is complete

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  // Each slot has one warp (slot mod 8), which consumes its units in order and refills it: a slot's fills then never
  // run ahead of its reads, and a wait for fill p (parity p mod 2) can never be met by fill p - 2. (With unit i on
  // warp i mod 8 and a slot count not a multiple of 8, a warp could reach a unit while the slot's previous fill was
  // still in flight, find that parity already complete, read stale rows and refill the slot out of turn: TinyLlama's
  // 12 gate/up slots failed so on the H200.)
  for (int i = 0; i < count; ++i) {
    const int slot = i % slots;
    if (slot % kStreamWarps != warp) continue;
    barrier_wait(bars + 8 * slot, static_cast<uint32_t>((i / slots) & 1));
    const uint4* wv = reinterpret_cast<const uint4*>(ring + static_cast<int64_t>(slot) * unit_bytes);
    float acc[kRows][M];
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
#pragma unroll
      for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
    }
#pragma unroll 4
    for (int64_t c = lane; c < chunks; c += 32) {
      float wf[kRows][8];
#pragma unroll
      for (int o = 0; o < kRows; ++o) unpack8<T>(load_shared16(wv + o * chunks + c), wf[o]);
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack8<T>(xv[r * chunks + c], xf);
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o][r] = fmaf(wf[o][e], xf[e], acc[o][r]);
        }
      }
    }
    __syncwarp();
    if (lane == 0 && i + slots < count) {  // the slot is read: its next unit on its way
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      request(slot, u0 + i + slots);
    }
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
#pragma unroll
      for (int r = 0; r < M; ++r) acc[o][r] = warp_sum(acc[o][r]);
    }
    const int64_t u = u0 + i;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (lane != r) continue;
      if constexpr (MODE == kStreamQkvCache) {
        const DecodeCacheWrite& cw = a.cache;
        const int64_t d = cw.head_dim, head = u / half, e = u % half, ja = head * d + e;
        const T* bias = static_cast<const T*>(a.bias);
        float y1 = rounded<T>(acc[0][r] + (bias != nullptr ? load(bias, ja) : 0.0f));
        float y2 = rounded<T>(acc[1][r] + (bias != nullptr ? load(bias, ja + half) : 0.0f));
        if (cw.cos != nullptr && head < cw.q_heads + cw.kv_heads) {  // x cos + rotate_half(x) sin
          const T* cs = static_cast<const T*>(cw.cos) + pos * d;
          const T* sn = static_cast<const T*>(cw.sin) + pos * d;
          const float x1 = y1, x2 = y2;
          const float c1 = staged ? epi[0][e] : load(cs, e), s1 = staged ? epi[1][e] : load(sn, e);
          const float c2 = staged ? epi[0][e + half] : load(cs, e + half);
          const float s2 = staged ? epi[1][e + half] : load(sn, e + half);
          y1 = x1 * c1 - x2 * s1;
          y2 = x2 * c2 + x1 * s2;
        }
        T* dst = head < cw.q_heads ? static_cast<T*>(cw.q_out) + (r * cw.q_heads + head) * d
                 : head < cw.q_heads + cw.kv_heads
                     ? static_cast<T*>(cw.k_cache) + ((r * cw.positions + pos) * cw.kv_heads + head - cw.q_heads) * d
                     : static_cast<T*>(cw.v_cache) +
                           ((r * cw.positions + pos) * cw.kv_heads + head - cw.q_heads - cw.kv_heads) * d;
        store(dst, e, y1);
        store(dst, e + half, y2);
      } else if (staged) {
        const int at = i * M + r;
        gemv_epilogue_values<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
            acc[0][r], acc[kRows - 1][r], a.bias != nullptr ? epi[0][at] : 0.0f, a.residual != nullptr, epi[1][at],
            static_cast<T*>(a.out), a.n, u, r);
      } else {
        gemv_epilogue<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
            acc[0][r], acc[kRows - 1][r], static_cast<const T*>(a.bias), static_cast<const T*>(a.residual),
            static_cast<T*>(a.out), a.n, u, r);
      }
    }
  }
#endif
}

/// Ring slots of `rows` weight rows of k 16-bit values beside m rows of x.
int stream_slots(int64_t m, int64_t k, int rows) {
  const int64_t ring = kStreamSmemBytes - kStreamBarrierBytes - stream_align(m * k * 2);
  const int64_t slots = ring / (static_cast<int64_t>(rows) * k * 2);
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(slots, kStreamMaxSlots)));
}

/// Raises `kernel`'s dynamic shared memory limit to `bytes` once per device (`sized`: the devices done, 0..63).
template <typename Kernel>
cudaError_t allow_smem(std::atomic<uint64_t>& sized, Kernel kernel, int bytes) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((sized.load(std::memory_order_relaxed) & bit) == 0) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
    sized.fetch_or(bit, std::memory_order_relaxed);
  }
  return cudaSuccess;
}

template <typename T, int M, int MODE>
cudaError_t stream_launch(StreamArgs a, int64_t units, cudaStream_t stream) {
  void (*kernel)(const StreamArgs) = decode_stream_gemv<T, M, MODE>;
  static std::atomic<uint64_t> sized{0};
  const cudaError_t e = allow_smem(sized, kernel, kStreamSmemBytes);
  if (e != cudaSuccess) return e;
  a.slots = stream_slots(M, a.k, MODE >= kStreamSwiglu ? 2 : 1);
  a.weights_first = weights_evict_first();
  const int64_t grid = std::min<int64_t>(device::multiprocessors(), units);
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(grid)), dim3(kStreamWarps * 32), kStreamSmemBytes,
                            stream, a);
}

// ---- the run GEMV: each warp streams its own run of weight rows straight into registers ------------------------
//
// For the large products of one token (TinyLlama's gate/up and down, the LM heads), where the streamed GEMV's
// consumers, not its copies, set the pace (f77cd0e:results/2026-12-02-h200-decode-gemv-bench: its ring alone reads the LM head
// at 4.0-4.3 TB/s, with the arithmetic 2.4-2.7). The grid is kRunBlocksPerSm blocks an SM; each warp owns a
// contiguous run of outputs and reads their rows as 512-byte steps (a 16-byte chunk a lane), kRunDepth steps of each
// row (gate and up for SwiGLU) in flight and the next kRunDepth issued before the current ones are used; the first
// are issued before the wait for the previous kernel. x, normalized as in the streamed GEMV, sits in shared memory.

/// An argmax candidate as one 64-bit key whose unsigned order is `better`'s: the value's bits mapped to an unsigned
/// order (NaN the largest, -0 as +0, as comparisons have them), then the column inverted (ties to the first).
__device__ __forceinline__ unsigned long long greedy_key(float v, int64_t j) {
  uint32_t u = v != v ? 0x7fffffffu : v == 0.0f ? 0u : __float_as_uint(v);
  u = (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
  return (static_cast<unsigned long long>(u) << 32) | (0xffffffffu - static_cast<uint32_t>(j));
}

/// The greedy tail (DecodeGreedyTail) at the end of a block whose lanes r < M hold their warp's best (v, j) of x row
/// r: the block's best of each row into scratch[r] (64-bit atomic max of greedy_key), then the last block to arrive
/// (the counter in scratch[M]) writes the tokens, the history and the next position, and zeroes scratch again.
template <int M>
__device__ void greedy_tail(const DecodeGreedyTail& g, float v, int64_t j, int64_t n) {
  __shared__ unsigned long long block_best[M];
  __shared__ bool last;
  const int lane = threadIdx.x & 31;
  if (threadIdx.x < M) block_best[threadIdx.x] = 0;
  __syncthreads();
  if (lane < M) atomicMax(&block_best[lane], greedy_key(v, j));
  __syncthreads();
  auto* keys = reinterpret_cast<unsigned long long*>(g.scratch);
  auto* arrived = reinterpret_cast<unsigned int*>(g.scratch + M);
  if (threadIdx.x == 0) {
    for (int r = 0; r < M; ++r) atomicMax(&keys[r], block_best[r]);
    __threadfence();  // this block's keys before its arrival
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x >= M) return;
  __threadfence();  // every block's keys are in
  const int r = static_cast<int>(threadIdx.x);
  const unsigned long long key = atomicExch(&keys[r], 0ull);
  const int64_t best = 0xffffffffll - static_cast<int64_t>(key & 0xffffffffull);
  const int64_t token = best >= 0 && best < n ? best : 0;
  const int64_t p = *g.pos, column = p - g.history_offset;
  g.token[r] = token;
  if (column >= 0 && column < g.history_ld) g.history[r * g.history_ld + column] = token;
  __syncwarp(0xffffffffu >> (32 - M));  // every lane has read *pos
  if (r == 0) {
    *g.pos = p + 1;
    *arrived = 0;
  }
}

constexpr int kRunDepth = 4;
constexpr int kRunBlocksPerSm = 2;
constexpr int kRunMaxSmemBytes = 96 * 1024;  // x's rows: two blocks an SM


template <typename T, int M, int MODE>
__global__ void __launch_bounds__(kStreamWarps * 32, kRunBlocksPerSm) decode_run_gemv(const StreamArgs a) {
  constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = kRunDepth;
  extern __shared__ __align__(16) unsigned char run_smem[];
  T* xs = reinterpret_cast<T*>(run_smem);
  const int64_t k = a.k, chunks = k / 8, per_row = (chunks + 31) / 32;  // steps a row
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kStreamWarps;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kStreamWarps + warp;
  const int64_t j0 = a.n * w / warps, j1 = a.n * (w + 1) / warps, steps = (j1 - j0) * per_row;
  auto rows_of = [&](int64_t j, const T** p) {
    if constexpr (MODE == kStreamSwiglu) {
      p[0] = static_cast<const T*>(a.w.w[0]) + j * k;
      p[1] = static_cast<const T*>(a.w.w[1]) + j * k;
    } else {
      p[0] = weight_row<T>(a.w, j, k);
    }
  };
  // The load cursor: the row it is in, its step in that row, the steps issued.
  const T* lrow[kRows];
  int64_t lj = j0, lt = 0, issued = 0;
  if (steps > 0) rows_of(j0, lrow);
  const uint64_t policy = weight_policy(a.weights_first);
  auto issue = [&](uint4 (&dst)[D][kRows]) {
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (issued < steps) {
        const int64_t c = lt * 32 + lane;
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
          dst[u][o] = c < chunks ? load_once(lrow[o] + 8 * c, policy) : make_uint4(0, 0, 0, 0);
        }
        ++issued;
        if (++lt == per_row) {
          lt = 0;
          if (++lj < j1) rows_of(lj, lrow);
        }
      }
    }
  };
  uint4 buf[D][kRows];
  issue(buf);  // weights only before the wait
  // What the epilogues add, held by the lanes so that no row's epilogue waits on a load of its own: lane l has output
  // (row j0 + l / M, x row l % M)'s bias (a weight: before the wait) and residual (after it); rows past 32 / M of the
  // run load theirs in the epilogue.
  const bool held = lane < (j1 - j0) * M;
  const int64_t held_j = j0 + lane / M;
  const float held_bias = held && a.bias != nullptr ? load(static_cast<const T*>(a.bias), held_j) : 0.0f;
  const NormAhead ahead = norm_ahead<T>(a);
  wait_for_previous_kernel();
  let_next_kernel_start();
  const float held_residual =
      held && a.residual != nullptr ? load(static_cast<const T*>(a.residual), (lane % M) * a.n + held_j) : 0.0f;
  stage_x<T, M>(a, xs, ahead);

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  float best_v = -INFINITY;  // kStreamGreedy: lane r < M's best output of x row r so far, and its column
  int64_t best_j = a.n;
  float acc[kRows][M];
#pragma unroll
  for (int o = 0; o < kRows; ++o) {
#pragma unroll
    for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
  }
  int64_t j = j0, t = 0;  // the compute cursor
  for (int64_t b = 0; b < steps; b += D) {
    uint4 next[D][kRows];
    issue(next);
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (b + u >= steps) break;
      const int64_t c = t * 32 + lane;
      if (c < chunks) {
        float wf[kRows][8];
#pragma unroll
        for (int o = 0; o < kRows; ++o) unpack8<T>(buf[u][o], wf[o]);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          unpack8<T>(xv[r * chunks + c], xf);
#pragma unroll
          for (int o = 0; o < kRows; ++o) {
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[o][r] = fmaf(wf[o][e], xf[e], acc[o][r]);
          }
        }
      }
      if (++t == per_row) {  // row j is summed: its outputs
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int r = 0; r < M; ++r) acc[o][r] = warp_sum(acc[o][r]);
        }
        const int64_t at = (j - j0) * M;  // lane at + r holds (j, r)'s bias and residual, where at + M <= 32
        const int from = static_cast<int>((at + lane) & 31);
        const float bias_r = __shfl_sync(0xffffffffu, held_bias, from);
        const float residual_r = __shfl_sync(0xffffffffu, held_residual, from);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          if (lane != r) continue;
          float v;
          if (at + M <= 32) {
            v = gemv_epilogue_values<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
                acc[0][r], acc[kRows - 1][r], bias_r, a.residual != nullptr, residual_r, static_cast<T*>(a.out), a.n,
                j, r);
          } else {
            v = gemv_epilogue<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
                acc[0][r], acc[kRows - 1][r], static_cast<const T*>(a.bias), static_cast<const T*>(a.residual),
                static_cast<T*>(a.out), a.n, j, r);
          }
          if constexpr (MODE == kStreamGreedy) better(best_v, best_j, v, j);
        }
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
        }
        t = 0;
        ++j;
      }
    }
#pragma unroll
    for (int u = 0; u < D; ++u) {
#pragma unroll
      for (int o = 0; o < kRows; ++o) buf[u][o] = next[u][o];
    }
  }
  if constexpr (MODE == kStreamGreedy) greedy_tail<M>(a.greedy, best_v, best_j, a.n);
}

template <typename T, int M, int MODE>
cudaError_t run_launch(StreamArgs a, int64_t units, cudaStream_t stream) {
  void (*kernel)(const StreamArgs) = decode_run_gemv<T, M, MODE>;
  static std::atomic<uint64_t> sized{0};
  const cudaError_t e = allow_smem(sized, kernel, kRunMaxSmemBytes);
  if (e != cudaSuccess) return e;
  a.weights_first = weights_evict_first();
  const int64_t per_block = kStreamWarps;  // every warp a row at least
  const int64_t grid = std::min<int64_t>(int64_t{device::multiprocessors()} * kRunBlocksPerSm,
                                         (units + per_block - 1) / per_block);
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(grid)), dim3(kStreamWarps * 32),
                            static_cast<size_t>(M * a.k * 2), stream, a);
}

/// The streamed GEMV (kRun false) or the run GEMV (true) for m rows of x.
template <bool kRun, typename T, int M, int MODE>
cudaError_t family_launch(const StreamArgs& a, int64_t units, cudaStream_t stream) {
  if constexpr (kRun) {
    return run_launch<T, M, MODE>(a, units, stream);
  } else {
    return stream_launch<T, M, MODE>(a, units, stream);
  }
}

template <bool kRun, typename T, int MODE>
cudaError_t stream_rows(const StreamArgs& a, int64_t m, int64_t units, cudaStream_t stream) {
  switch (m) {
    case 1: return family_launch<kRun, T, 1, MODE>(a, units, stream);
    case 2: return family_launch<kRun, T, 2, MODE>(a, units, stream);
    case 3: return family_launch<kRun, T, 3, MODE>(a, units, stream);
    case 4: return family_launch<kRun, T, 4, MODE>(a, units, stream);
    default: return cudaErrorInvalidValue;
  }
}

/// A streamed GEMV's arguments but where its outputs go.
StreamArgs stream_args(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias, int64_t n,
                       int64_t k, const DecodeInputNorm& norm) {
  StreamArgs a;
  a.x = x;
  a.ldx = ldx;
  a.w = weights;
  a.bias = bias;
  a.n = n;
  a.k = k;
  a.norm = norm;
  return a;
}

template <int MODE, bool kRun = false>
cudaError_t stream_typed(const StreamArgs& a, DType dtype, int64_t m, int64_t units, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBFloat16: return stream_rows<kRun, __nv_bfloat16, MODE>(a, m, units, stream);
    case DType::kFloat16: return stream_rows<kRun, __half, MODE>(a, m, units, stream);
    default: return cudaErrorInvalidValue;
  }
}

// ---- RMSNorm / LayerNorm of a few rows ------------------------------------------------------------------------

constexpr int kNormThreads = 256;

__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < kNormThreads / 32 ? shared[lane] : 0.0f;
  return warp_sum(v);
}

template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    decode_norm(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
                int64_t dim, float eps, bool rms) {
  __shared__ float shared[kNormThreads / 32];
  const T* xr = x + blockIdx.x * dim;
  T* yr = y + blockIdx.x * dim;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    const float v = load(xr, i);
    s += rms ? v * v : v;
  }
  s = block_sum(s, shared);
  const float inv_dim = 1.0f / static_cast<float>(dim);
  float mean = 0.0f, var = s * inv_dim;
  if (!rms) {  // two passes over the row (it is in L1): the variance about the mean
    mean = s * inv_dim;
    float d2 = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
      const float d = load(xr, i) - mean;
      d2 += d * d;
    }
    var = block_sum(d2, shared) * inv_dim;
  }
  const float inv = rsqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    float v = (load(xr, i) - mean) * inv * load(w, i);
    if (b != nullptr) v += load(b, i);
    store(yr, i, v);
  }
}

// ---- q, k, v into the cache, rotary on the way ----------------------------------------------------------------

template <typename T>
__global__ void decode_qkv_to_cache(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
                                    const int64_t* __restrict__ pos_ptr, T* __restrict__ q_out, T* __restrict__ kc,
                                    T* __restrict__ vc, int* __restrict__ used_k, int64_t batch, int64_t positions,
                                    int64_t hq, int64_t hk, int64_t d) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t pos = *pos_ptr;
  const int64_t half = d / 2, heads = hq + 2 * hk;
  const int64_t total = batch * heads * half;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (used_k != nullptr && first < batch) used_k[first] = static_cast<int>(pos + 1);
  for (int64_t i = first; i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = i % half, head = (i / half) % heads, b = i / (half * heads);
    const T* src = qkv + (b * heads + head) * d;
    float y1 = load(src, e), y2 = load(src, e + half);
    if (cos != nullptr && head < hq + hk) {  // x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
      const float x1 = y1, x2 = y2;
      y1 = x1 * load(cos, pos * d + e) - x2 * load(sin, pos * d + e);
      y2 = x2 * load(cos, pos * d + e + half) + x1 * load(sin, pos * d + e + half);
    }
    T* dst = head < hq        ? q_out + (b * hq + head) * d
             : head < hq + hk ? kc + ((b * positions + pos) * hk + head - hq) * d
                              : vc + ((b * positions + pos) * hk + head - hq - hk) * d;
    store(dst, e, y1);
    store(dst, e + half, y2);
  }
}

// ---- the step's input: the tokens' embeddings (+ the position's) -----------------------------------------------

constexpr int kEmbedThreads = 128;

/// Block r: out[r] = table[ids[r]] (+ pos_table[*pos]), 16 bytes a thread at a time, summed in fp32 and rounded once
/// (as ATen's add of the two rows); an id outside [0, vocab) gives a zero row.
template <typename T>
__global__ void __launch_bounds__(kEmbedThreads)
    decode_embed_rows(const int64_t* __restrict__ ids, const T* __restrict__ table, int64_t vocab,
                      const T* __restrict__ pos_table, const int64_t* __restrict__ pos, T* __restrict__ out,
                      int64_t dim) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t id = ids[blockIdx.x];
  const T* row = id >= 0 && id < vocab ? table + id * dim : nullptr;
  const T* at = pos_table != nullptr ? pos_table + *pos * dim : nullptr;
  for (int64_t c = threadIdx.x; c < dim / 8; c += kEmbedThreads) {
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row != nullptr) load_v<T, 8>(row, 8 * c, v);
    if (at != nullptr) {
      float w[8];
      load_v<T, 8>(at, 8 * c, w);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] += w[e];
    }
    store_v<T, 8>(out + blockIdx.x * dim, 8 * c, v);
  }
}

// ---- greedy choice: the first largest logit of each row ------------------------------------------------------

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxBlocksPerRow = 32;

/// Stage 1: block (g, row) finds the best of its slice of the row.
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads) argmax_slices(const T* __restrict__ logits, int64_t n,
                                                               float* __restrict__ best_v, int64_t* __restrict__ best_i) {
  __shared__ float sv[kArgmaxThreads / 32];
  __shared__ int64_t si[kArgmaxThreads / 32];
  const T* row = logits + blockIdx.y * n;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float v = -INFINITY;
  int64_t idx = n;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(kArgmaxThreads) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * kArgmaxThreads) {
    better(v, idx, load(row, j), j);
  }
  warp_best(v, idx);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = idx;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < kArgmaxThreads / 32 ? sv[lane] : -INFINITY;
    idx = lane < kArgmaxThreads / 32 ? si[lane] : n;
    warp_best(v, idx);
    if (lane == 0) {
      best_v[blockIdx.y * gridDim.x + blockIdx.x] = v;
      best_i[blockIdx.y * gridDim.x + blockIdx.x] = idx;
    }
  }
}

/// Stage 2: one warp per row over its slices' best.
__global__ void argmax_rows(const float* __restrict__ best_v, const int64_t* __restrict__ best_i, int slices, int64_t n,
                            int64_t* __restrict__ out) {
  const int lane = threadIdx.x;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float v = -INFINITY;
  int64_t idx = n;
  for (int s = lane; s < slices; s += 32) better(v, idx, best_v[blockIdx.x * slices + s], best_i[blockIdx.x * slices + s]);
  warp_best(v, idx);
  if (lane == 0) out[blockIdx.x] = idx < n ? idx : 0;
}

// ---- decode attention: one query per sequence over the cache, split over positions ---------------------------

constexpr int kAttnThreads = 256;
constexpr int kAttnCombineSlots = 1024;  // q heads of a kv head x splits: the combine's shared memory

/// Positions per tile: a tile's keys and values fill 16 KB of shared memory.
template <int D>
struct AttnTile {
  static constexpr int kPositions = D == 64 ? 64 : 32;
  static constexpr int kChunks = D / 8;       // 16-byte pieces of a row
  static constexpr int kRowWords = D / 2 + 1;  // a row in 32-bit words, padded so rows start on different banks
  static constexpr int kLoads = kPositions * kChunks / kAttnThreads;  // 16-byte loads a thread makes per tile, each
};

/// Block (split, kv head, sequence): the group of q heads that share the kv head over positions [split x per_split,
/// +per_split) of the keys in use (pos + 1), in tiles: every thread loads its share of a tile's keys and values at
/// once (the next tile's while this one is computed) into shared memory, then the scores of every (head, position),
/// the tile's softmax per head (online across tiles), and the weighted values of every (head, dimension). Partial
/// (max, sum, acc) go to scratch; the last block of a (sequence, kv head) to finish (a counter, reset by it) combines
/// the splits, spread over its threads.
template <typename T, int D>
__global__ void __launch_bounds__(kAttnThreads)
    decode_attention(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                     const int64_t* __restrict__ pos_ptr, T* __restrict__ out, float* __restrict__ part_acc,
                     float* __restrict__ part_ml, int* __restrict__ counters, int64_t positions, int hq, int hk,
                     int splits, int per_split, float scale) {
  using Tile = AttnTile<D>;
  constexpr int P = Tile::kPositions, W = Tile::kRowWords, kPerThread = 32 * D / kAttnThreads;
  __shared__ uint32_t kt[P * W], vt[P * W];  // the tile's keys and values, two 16-bit values a word
  __shared__ float qs[32 * D];                 // the group's q heads, scaled
  __shared__ float sc[32 * P];                 // scores, then their exponentials
  __shared__ float head_m[32], head_l[32], head_c[32];
  __shared__ bool last;
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int group = hq / hk, lane = tid & 31, warp = tid >> 5;
  const int64_t p0 = static_cast<int64_t>(split) * per_split;
  const int64_t row0 = (static_cast<int64_t>(b) * positions) * hk + kh;  // row of (b, position 0, kh)
  auto row_of = [&](int64_t p) { return (row0 + p * hk) * D; };
  {  // the block's positions into L2 while the previous kernel finishes (the range only, not pos: no dependency)
    const int64_t pend = p0 + per_split < positions ? p0 + per_split : positions;
    for (int64_t i = tid; i < (pend - p0) * (D / 64); i += kAttnThreads) {  // one prefetch per 128 bytes
      const int64_t p = p0 + i / (D / 64), off = (i % (D / 64)) * 64;
      prefetch_l2(kc + row_of(p) + off);
      prefetch_l2(vc + row_of(p) + off);
    }
  }
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t used = *pos_ptr + 1;
  const int64_t p1 = p0 + per_split < used ? p0 + per_split : used;
  for (int i = tid; i < group * D; i += kAttnThreads) {
    qs[i] = load(q + (static_cast<int64_t>(b) * hq + kh * group) * D, i) * scale;
  }
  if (tid < group) {
    head_m[tid] = -INFINITY;
    head_l[tid] = 0.0f;
  }
  float acc[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) acc[i] = 0.0f;

  uint4 kr[Tile::kLoads], vr[Tile::kLoads];
  auto fetch = [&](int64_t t0) {
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + i * kAttnThreads, p = idx / Tile::kChunks, c = idx % Tile::kChunks;
      if (t0 + p < p1) {
        kr[i] = __ldcg(reinterpret_cast<const uint4*>(kc + row_of(t0 + p)) + c);
        vr[i] = __ldcg(reinterpret_cast<const uint4*>(vc + row_of(t0 + p)) + c);
      }
    }
  };
  if (p0 < p1) fetch(p0);
  for (int64_t t0 = p0; t0 < p1; t0 += P) {
    const int n = p1 - t0 < P ? static_cast<int>(p1 - t0) : P;
    __syncthreads();  // the previous tile's shared memory is free (and qs, head_* written, the first time)
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + i * kAttnThreads, p = idx / Tile::kChunks, c = idx % Tile::kChunks;
      if (p < n) {
        const uint32_t* kw = reinterpret_cast<const uint32_t*>(&kr[i]);
        const uint32_t* vw = reinterpret_cast<const uint32_t*>(&vr[i]);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          kt[p * W + c * 4 + e] = kw[e];
          vt[p * W + c * 4 + e] = vw[e];
        }
      }
    }
    if (t0 + P < p1) fetch(t0 + P);  // in flight while this tile is computed
    __syncthreads();
    for (int i = tid; i < group * P; i += kAttnThreads) {  // scores: lanes over positions, a q head per warp row
      const int g = i / P, p = i % P;
      float s = -INFINITY;
      if (p < n) {
        s = 0.0f;
        const float* qg = qs + g * D;
#pragma unroll 8
        for (int wd = 0; wd < D / 2; ++wd) {
          const float2 kf = pair_from_bits<T>(kt[p * W + wd]);
          s = fmaf(qg[2 * wd], kf.x, fmaf(qg[2 * wd + 1], kf.y, s));
        }
      }
      sc[g * P + p] = s;
    }
    __syncthreads();
    for (int g = warp; g < group; g += kAttnThreads / 32) {  // the tile's softmax, a warp per q head
      float mt = -INFINITY;
      for (int p = lane; p < P; p += 32) mt = fmaxf(mt, sc[g * P + p]);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
      const float m_old = head_m[g], m_new = fmaxf(m_old, mt);
      float lt = 0.0f;
      for (int p = lane; p < P; p += 32) {
        const float e = p < n ? __expf(sc[g * P + p] - m_new) : 0.0f;
        sc[g * P + p] = e;
        lt += e;
      }
      lt = warp_sum(lt);
      if (lane == 0) {
        const float corr = __expf(m_old - m_new);  // 0 on the first tile (m_old is -inf)
        head_c[g] = corr;
        head_l[g] = head_l[g] * corr + lt;
        head_m[g] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {  // weighted values: threads over (q head, dimension)
      const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
      if (g < group) {
        float a = acc[i] * head_c[g];
        const uint16_t* vh = reinterpret_cast<const uint16_t*>(vt);
        for (int p = 0; p < n; ++p) a = fmaf(sc[g * P + p], from_bits<T>(vh[2 * (p * W) + d]), a);
        acc[i] = a;
      }
    }
  }
  __syncthreads();  // head_m / head_l final
  const int64_t first_slot = (static_cast<int64_t>(b) * hq + kh * group) * splits;  // slot of (head g, split s):
  auto slot = [&](int g) { return first_slot + static_cast<int64_t>(g) * splits + split; };  // first + g splits + s
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
    if (g < group) part_acc[slot(g) * D + d] = acc[i];
  }
  if (tid < group) {
    part_ml[slot(tid) * 2] = head_m[tid];
    part_ml[slot(tid) * 2 + 1] = head_l[tid];
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(&counters[b * hk + kh], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The combine: every split's weight exp(m_s - max) per head, then the weighted sum per (head, dimension). The
  // other blocks' partials are read through L2 (__ldcg), never from this SM's L1, which is not coherent with them.
  float* weight = sc;  // group x splits <= kAttnCombineSlots floats: sc and kt/vt are free now
  float* ml = reinterpret_cast<float*>(kt);
  for (int i = tid; i < group * splits; i += kAttnThreads) {
    ml[2 * i] = __ldcg(part_ml + (first_slot + i) * 2);
    ml[2 * i + 1] = __ldcg(part_ml + (first_slot + i) * 2 + 1);
  }
  __syncthreads();
  for (int g = warp; g < group; g += kAttnThreads / 32) {
    float mx = -INFINITY;
    for (int s = lane; s < splits; s += 32) mx = fmaxf(mx, ml[2 * (g * splits + s)]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    float total = 0.0f;
    for (int s = lane; s < splits; s += 32) {
      const float ls = ml[2 * (g * splits + s) + 1];
      const float f = ls > 0.0f ? __expf(ml[2 * (g * splits + s)] - mx) : 0.0f;
      weight[g * splits + s] = f;
      total += ls * f;
    }
    total = warp_sum(total);
    if (lane == 0) head_l[g] = 1.0f / total;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
    if (g < group) {
      float o = 0.0f;
      const float* src = part_acc + (first_slot + static_cast<int64_t>(g) * splits) * D + d;
#pragma unroll 4
      for (int s = 0; s < splits; ++s) o = fmaf(__ldcg(src + static_cast<int64_t>(s) * D), weight[g * splits + s], o);
      store(out + (static_cast<int64_t>(b) * hq + kh * group + g) * D, d, o * head_l[g]);
    }
  }
  if (tid == 0) counters[b * hk + kh] = 0;  // ready for the next step (the same graph replays it)
}

template <typename T>
cudaError_t attention_typed(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos, void* out,
                            float* part_acc, float* part_ml, int* counters, int64_t batch, int64_t positions,
                            int64_t hq, int64_t hk, int64_t d, int splits, int per_split, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(hk), static_cast<unsigned>(batch));
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const auto* qs = static_cast<const T*>(q);
  const auto* ks = static_cast<const T*>(k_cache);
  const auto* vs = static_cast<const T*>(v_cache);
  auto* o = static_cast<T*>(out);
  const int h = static_cast<int>(hq), k = static_cast<int>(hk);
  if (d == 64) {
    return launch_kernel(decode_attention<T, 64>, grid, dim3(kAttnThreads), stream, qs, ks, vs, pos, o, part_acc,
                         part_ml, counters, positions, h, k, splits, per_split, scale);
  }
  return launch_kernel(decode_attention<T, 128>, grid, dim3(kAttnThreads), stream, qs, ks, vs, pos, o, part_acc,
                       part_ml, counters, positions, h, k, splits, per_split, scale);
}

// ---- decode attention, cluster form (sm_90): the splits of a (sequence, kv head) combined in shared memory ---------
//
// One thread block cluster per (sequence, kv head), a block per split of the positions. A block copies every key and
// value row of its split into shared memory before it waits for the previous kernel (rows written by earlier steps do
// not change; the new position's row, written by the kernel just before, is read again after the wait), computes its
// partial softmax(q k^T) v in one pass, and the blocks of the cluster then combine the partials by reading each
// other's shared memory (distributed shared memory) instead of writing them to global memory for a last block to
// read back: the chain after the wait is the position, the new row, the arithmetic and two cluster barriers.
// Given `fresh_k` / `fresh_v` (the new token's k and v rows, [batch] x fresh_stride apart: the q/k/v product's output
// where nothing else writes the cache), the new row comes from them and the block that holds its position writes it
// into the cache, so that no kernel of its own has to (and `used_k`, when given, gets the keys in use).

constexpr int kClusterAttnThreads = 256;
constexpr int kClusterAttnMaxSplits = 16;

/// The cluster form's dynamic shared memory for `per_split` positions, `group` q heads of head size d: the keys and
/// values (16-bit, rows of d/8 16-byte chunks), the group's q (fp32; the partial outputs once the scores are done),
/// the scores and each head's (max, total).
size_t cluster_attn_smem(int64_t per_split, int64_t group, int64_t d) {
  const int64_t scores = (per_split + 3) / 4 * 4;
  return static_cast<size_t>(2 * per_split * d * 2 + group * d * 4 + group * scores * 4 + group * 2 * 4);
}

template <typename T, int D>
__global__ void __launch_bounds__(kClusterAttnThreads)
    decode_attention_cluster(const T* __restrict__ q, int64_t q_stride, T* __restrict__ kc, T* __restrict__ vc,
                             const T* __restrict__ fresh_k, const T* __restrict__ fresh_v, int64_t fresh_stride,
                             int* __restrict__ used_k, const int64_t* __restrict__ pos_ptr, T* __restrict__ out,
                             int64_t positions, int hq, int hk, int per_split, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kChunks = D / 8;  // 16-byte chunks of a row; chunk c of row p sits at c ^ (p % 8), so that eight
                                  // lanes reading chunk c of eight rows meet eight different bank groups
  extern __shared__ __align__(128) unsigned char smem[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z, tid = threadIdx.x, splits = gridDim.x;
  const int group = hq / hk, lane = tid & 31, warp = tid >> 5;
  const int scores_stride = (per_split + 3) / 4 * 4;
  uint4* kt = reinterpret_cast<uint4*>(smem);
  uint4* vt = kt + per_split * kChunks;
  float* qs = reinterpret_cast<float*>(vt + per_split * kChunks);  // q (scaled), then this block's partial outputs
  float* sc = qs + group * D;
  float* ml = sc + group * scores_stride;  // per head: max, total
  const int64_t p0 = static_cast<int64_t>(split) * per_split;
  const int64_t row0 = (static_cast<int64_t>(b) * positions) * hk + kh;  // row of (b, position 0, kh)
  auto row_of = [&](int64_t p) { return (row0 + p * hk) * D; };
  auto slot = [](int p, int c) { return p * kChunks + (c ^ (p & 7)); };
  const int rows = static_cast<int>(p0 + per_split < positions ? per_split : positions - p0);
  for (int i = tid; i < rows * kChunks; i += kClusterAttnThreads) {  // before the wait: no dependency on this step
    const int p = i / kChunks, c = i % kChunks;
    copy16_async(kt + slot(p, c), kc + row_of(p0 + p) + c * 8);
    copy16_async(vt + slot(p, c), vc + row_of(p0 + p) + c * 8);
  }
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t used = *pos_ptr + 1;
  // q's first values a thread stages, loaded beside the position rather than after the new row's round trip.
  const T* qb = q + static_cast<int64_t>(b) * q_stride + kh * group * D;
  constexpr int kQAhead = 2;
  float q_ahead[kQAhead];
#pragma unroll
  for (int u = 0; u < kQAhead; ++u) {
    const int i = tid + u * kClusterAttnThreads;
    q_ahead[u] = i < group * D ? load(qb, i) : 0.0f;
  }
  const int n = static_cast<int>(used <= p0 ? 0 : used - p0 < per_split ? used - p0 : per_split);
  // The new position's row: its owner threads (those that copied it above) read it again, after their copies land.
  const int fresh = static_cast<int>(used - 1 - p0);
  const int chunk = tid - fresh * kChunks % kClusterAttnThreads;
  const int mine = chunk < 0 ? chunk + kClusterAttnThreads : chunk;
  const bool owner = fresh >= 0 && fresh < rows && mine < kChunks;
  uint4 knew{}, vnew{};
  if (owner && fresh_k != nullptr) {
    const int64_t at = static_cast<int64_t>(b) * fresh_stride + kh * D;
    knew = __ldcg(reinterpret_cast<const uint4*>(fresh_k + at) + mine);
    vnew = __ldcg(reinterpret_cast<const uint4*>(fresh_v + at) + mine);
    reinterpret_cast<uint4*>(kc + row_of(p0 + fresh))[mine] = knew;
    reinterpret_cast<uint4*>(vc + row_of(p0 + fresh))[mine] = vnew;
  } else if (owner) {
    knew = __ldcg(reinterpret_cast<const uint4*>(kc + row_of(p0 + fresh)) + mine);
    vnew = __ldcg(reinterpret_cast<const uint4*>(vc + row_of(p0 + fresh)) + mine);
  }
  if (used_k != nullptr && split == 0 && kh == 0 && tid == 0) used_k[b] = static_cast<int>(used);
#pragma unroll
  for (int u = 0; u < kQAhead; ++u) {
    const int i = tid + u * kClusterAttnThreads;
    if (i < group * D) qs[i] = q_ahead[u] * scale;
  }
  for (int i = tid + kQAhead * kClusterAttnThreads; i < group * D; i += kClusterAttnThreads) {
    qs[i] = load(qb, i) * scale;
  }
  copies_wait();
  if (owner) {
    kt[slot(fresh, mine)] = knew;
    vt[slot(fresh, mine)] = vnew;
  }
  __syncthreads();
  for (int i = tid; i < group * n; i += kClusterAttnThreads) {  // scores: a thread per (head, position)
    const int g = i / n, p = i % n;
    const float4* qg = reinterpret_cast<const float4*>(qs + g * D);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      float kf[8];
      unpack8<T>(kt[slot(p, c)], kf);
      const float4 a = qg[2 * c], e = qg[2 * c + 1];
      s = fmaf(a.x, kf[0], fmaf(a.y, kf[1], fmaf(a.z, kf[2], fmaf(a.w, kf[3], s))));
      s = fmaf(e.x, kf[4], fmaf(e.y, kf[5], fmaf(e.z, kf[6], fmaf(e.w, kf[7], s))));
    }
    sc[g * scores_stride + p] = s;
  }
  __syncthreads();
  for (int g = warp; g < group; g += kClusterAttnThreads / 32) {  // softmax numerators, a warp per head
    const float2 m_l = softmax_numerators(sc + g * scores_stride, n, lane);
    if (lane == 0) {
      ml[2 * g] = m_l.x;
      ml[2 * g + 1] = m_l.y;
    }
  }
  __syncthreads();  // the scores are final; qs is free for the partial outputs
  const uint32_t* vw = reinterpret_cast<const uint32_t*>(vt);
  for (int i = tid; i < group * D / 2; i += kClusterAttnThreads) {  // weighted values: a thread per (head, 2 dims)
    const int g = i / (D / 2), w = i % (D / 2), c = w / 4, e = w % 4;
    float ax = 0.0f, ay = 0.0f;
    const float* sg = sc + g * scores_stride;
#pragma unroll 4
    for (int p = 0; p < n; ++p) {
      const float2 v = pair_from_bits<T>(vw[4 * slot(p, c) + e]);
      ax = fmaf(sg[p], v.x, ax);
      ay = fmaf(sg[p], v.y, ay);
    }
    qs[g * D + 2 * w] = ax;
    qs[g * D + 2 * w + 1] = ay;
  }
  cluster.sync();  // every block's partials are written and visible to the cluster
  // The combine: block `split` owns outputs [split * per_block, +per_block) of the group's group x D (more than the
  // block's threads where the splits are few); for each, a thread reads every split's (max, total) of the head and its
  // partial of the dimension from that block's shared memory.
  const int total = group * D, per_block = (total + splits - 1) / splits, first = split * per_block;
  const int end = first + per_block < total ? first + per_block : total;
  T* out_group = out + (static_cast<int64_t>(b) * hq + kh * group) * D;
  for (int o = first + tid; o < end; o += kClusterAttnThreads) {
    const int g = o / D;
    float m_s[kClusterAttnMaxSplits], l_s[kClusterAttnMaxSplits], a_s[kClusterAttnMaxSplits];
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits) {
        const float* rml = cluster.map_shared_rank(ml, s);
        const float* racc = cluster.map_shared_rank(qs, s);
        m_s[s] = rml[2 * g];
        l_s[s] = rml[2 * g + 1];
        a_s[s] = racc[o];
      }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits && l_s[s] > 0.0f) mx = fmaxf(mx, m_s[s]);
    }
    float sum = 0.0f, acc = 0.0f;
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits && l_s[s] > 0.0f) {
        const float f = __expf(m_s[s] - mx);
        sum = fmaf(l_s[s], f, sum);
        acc = fmaf(a_s[s], f, acc);
      }
    }
    store(out_group, o, sum > 0.0f ? acc / sum : 0.0f);
  }
  cluster.barrier_arrive();  // done reading the others' shared memory
  cluster.barrier_wait();  // no block leaves while another may still read its shared memory
#endif
}

template <typename T>
cudaError_t cluster_attention_typed(const DecodeAttentionInput& in, const int64_t* pos, void* out, int64_t batch,
                                    int64_t positions, int64_t hq, int64_t hk, int64_t d, int splits, int per_split,
                                    cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(hk), static_cast<unsigned>(batch));
  const size_t smem = cluster_attn_smem(per_split, hq / hk, d);
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  auto kernel = d == 64 ? decode_attention_cluster<T, 64> : decode_attention_cluster<T, 128>;
  const int optin = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>();
  if (smem > static_cast<size_t>(optin)) return cudaErrorInvalidValue;
  static std::atomic<uint64_t> sized[2] = {{0}, {0}};  // per head size: the devices whose limit is raised
  cudaError_t e = allow_smem(sized[d == 64], kernel, optin);  // up to the opt-in limit, once (the plan keeps within)
  if (e == cudaSuccess && splits > 8) {  // more than the portable cluster size
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  }
  if (e != cudaSuccess) return e;
  return launch_kernel_cluster(kernel, grid, dim3(kClusterAttnThreads), smem, static_cast<unsigned>(splits), stream,
                               static_cast<const T*>(in.q), in.q_stride, static_cast<T*>(in.k_cache),
                               static_cast<T*>(in.v_cache), static_cast<const T*>(in.fresh_k),
                               static_cast<const T*>(in.fresh_v), in.fresh_stride, in.used_k, pos, static_cast<T*>(out),
                               positions, static_cast<int>(hq), static_cast<int>(hk), per_split, scale);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

bool decode_programmatic_launch() { return programmatic_launch(); }
bool decode_weights_evict_first() { return weights_evict_first(); }
void set_decode_launch_options(bool programmatic, bool evict_first) {
  g_pdl_allowed.store(programmatic, std::memory_order_relaxed);
  g_evict_first.store(evict_first, std::memory_order_relaxed);
}

bool decode_gemv_fits(const void* x, int64_t ldx, const DecodeWeights& weights, int64_t k) {
  if (k % 8 != 0 || ldx % 8 != 0 || !aligned16(x) || weights.count < 1 || weights.count > 3) return false;
  for (int i = 0; i < weights.count; ++i) {
    if (!aligned16(weights.w[i])) return false;
  }
  return true;
}

cudaError_t launch_decode_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                               const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                               DecodeActivation act, cudaStream_t stream, int split, const DecodeInputNorm& norm) {
  if (split != 0 && split != 1 && split != 2 && split != 4 && split != 8) return cudaErrorInvalidValue;
  if (m < 1 || m > kDecodeGemvMaxRows || !decode_gemv_fits(x, ldx, weights, k)) return cudaErrorInvalidValue;
  if (act == DecodeActivation::kSwiglu && (weights.count != 2 || bias != nullptr)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16: return gemv_typed<__nv_bfloat16>(x, ldx, weights, bias, residual, out, m, n, k, act, split, norm, stream);
    case DType::kFloat16: return gemv_typed<__half>(x, ldx, weights, bias, residual, out, m, n, k, act, split, norm, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool decode_stream_available() { return stream_available(); }

bool decode_stream_serves(int64_t m, int64_t k, int rows_per_output) {
  return m >= 1 && m <= kDecodeStreamMaxRows && k > 0 && k % 8 == 0 && (rows_per_output == 1 || rows_per_output == 2) &&
         stream_slots(m, k, rows_per_output) >= 2 && stream_available();
}

namespace {

/// The streamed GEMV (kRun false) or the run GEMV's launch, checked.
template <bool kRun>
cudaError_t product_launch(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                           const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                           DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  const bool glu = act == DecodeActivation::kSwiglu;
  const bool serves = kRun ? decode_run_serves(m, k, glu ? 2 : 1) : decode_stream_serves(m, k, glu ? 2 : 1);
  if (!serves || !decode_gemv_fits(x, ldx, weights, k)) return cudaErrorInvalidValue;
  if (glu && (weights.count != 2 || bias != nullptr)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  StreamArgs a = stream_args(x, ldx, weights, bias, n, k, norm);
  a.residual = residual;
  a.out = out;
  switch (act) {
    case DecodeActivation::kNone: return stream_typed<kStreamPlain, kRun>(a, dtype, m, n, stream);
    case DecodeActivation::kGeluTanh: return stream_typed<kStreamGelu, kRun>(a, dtype, m, n, stream);
    case DecodeActivation::kSwiglu: return stream_typed<kStreamSwiglu, kRun>(a, dtype, m, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_decode_stream_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                      const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                      DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  return product_launch<false>(x, ldx, weights, bias, residual, out, dtype, m, n, k, act, stream, norm);
}

bool decode_run_serves(int64_t m, int64_t k, int rows_per_output) {
  return m >= 1 && m <= kDecodeStreamMaxRows && k > 0 && k % 8 == 0 && (rows_per_output == 1 || rows_per_output == 2) &&
         m * k * 2 <= kRunMaxSmemBytes && stream_available();
}

cudaError_t launch_decode_run_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                   const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                   DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  return product_launch<true>(x, ldx, weights, bias, residual, out, dtype, m, n, k, act, stream, norm);
}

int64_t decode_greedy_scratch(int64_t m) { return m + 1; }

cudaError_t launch_decode_run_gemv_greedy(const void* x, int64_t ldx, const void* weight, void* logits, DType dtype,
                                          int64_t m, int64_t n, int64_t k, const DecodeGreedyTail& tail,
                                          cudaStream_t stream, const DecodeInputNorm& norm) {
  DecodeWeights weights;
  weights.w[0] = weight;
  weights.rows[0] = n;
  weights.count = 1;
  if (!decode_run_serves(m, k, 1) || !decode_gemv_fits(x, ldx, weights, k) || n < 1 || n > 0xffffffffll ||
      tail.token == nullptr || tail.history == nullptr || tail.pos == nullptr || tail.scratch == nullptr) {
    return cudaErrorInvalidValue;
  }
  StreamArgs a = stream_args(x, ldx, weights, nullptr, n, k, norm);
  a.out = logits;
  a.greedy = tail;
  return stream_typed<kStreamGreedy, true>(a, dtype, m, n, stream);
}

cudaError_t launch_decode_stream_qkv_to_cache(const void* x, int64_t ldx, const DecodeWeights& weights,
                                              const void* bias, const DecodeCacheWrite& cache, DType dtype, int64_t m,
                                              int64_t k, cudaStream_t stream, const DecodeInputNorm& norm) {
  const int64_t n = (cache.q_heads + 2 * cache.kv_heads) * cache.head_dim;
  int64_t rows = 0;
  for (int i = 0; i < weights.count; ++i) rows += weights.rows[i];
  if (!decode_stream_serves(m, k, 2) || !decode_gemv_fits(x, ldx, weights, k) || rows != n || cache.head_dim % 2 != 0 ||
      cache.pos == nullptr || cache.k_cache == nullptr || cache.v_cache == nullptr || cache.q_out == nullptr ||
      (cache.cos == nullptr) != (cache.sin == nullptr)) {
    return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  StreamArgs a = stream_args(x, ldx, weights, bias, n, k, norm);
  a.cache = cache;
  return stream_typed<kStreamQkvCache>(a, dtype, m, n / 2, stream);
}

cudaError_t launch_decode_norm(const void* x, const void* weight, const void* bias, void* y, DType dtype, int64_t rows,
                               int64_t dim, float eps, bool rms, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_norm<__nv_bfloat16>, grid, dim3(kNormThreads), stream,
                           static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(weight),
                           static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(y), dim, eps, rms);
    case DType::kFloat16:
      return launch_kernel(decode_norm<__half>, grid, dim3(kNormThreads), stream, static_cast<const __half*>(x),
                           static_cast<const __half*>(weight), static_cast<const __half*>(bias),
                           static_cast<__half*>(y), dim, eps, rms);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_decode_embed(const int64_t* ids, const void* table, int64_t vocab, const void* pos_table,
                                const int64_t* pos, void* out, DType dtype, int64_t rows, int64_t dim,
                                cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (dim % 8 != 0 || !aligned16(table) || !aligned16(out) || (pos_table != nullptr && (!aligned16(pos_table) ||
                                                                                      pos == nullptr))) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_embed_rows<__nv_bfloat16>, grid, dim3(kEmbedThreads), stream, ids,
                           static_cast<const __nv_bfloat16*>(table), vocab,
                           static_cast<const __nv_bfloat16*>(pos_table), pos, static_cast<__nv_bfloat16*>(out), dim);
    case DType::kFloat16:
      return launch_kernel(decode_embed_rows<__half>, grid, dim3(kEmbedThreads), stream, ids,
                           static_cast<const __half*>(table), vocab, static_cast<const __half*>(pos_table), pos,
                           static_cast<__half*>(out), dim);
    default: return cudaErrorInvalidValue;
  }
}

int64_t decode_argmax_scratch(int64_t rows) { return rows * kArgmaxBlocksPerRow; }

cudaError_t launch_decode_argmax(const void* logits, DType dtype, int64_t rows, int64_t n, float* scratch_v,
                                 int64_t* scratch_i, int64_t* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int64_t wanted = (n + 4 * kArgmaxThreads - 1) / (4 * kArgmaxThreads);  // about 4 values per thread
  const int slices = static_cast<int>(wanted < 1 ? 1 : wanted > kArgmaxBlocksPerRow ? kArgmaxBlocksPerRow : wanted);
  const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(rows));
  cudaError_t e = cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      e = launch_kernel(argmax_slices<__nv_bfloat16>, grid, dim3(kArgmaxThreads), stream,
                        static_cast<const __nv_bfloat16*>(logits), n, scratch_v, scratch_i);
      break;
    case DType::kFloat16:
      e = launch_kernel(argmax_slices<__half>, grid, dim3(kArgmaxThreads), stream, static_cast<const __half*>(logits), n,
                        scratch_v, scratch_i);
      break;
    default: break;
  }
  if (e != cudaSuccess) return e;
  return launch_kernel(argmax_rows, dim3(static_cast<unsigned>(rows)), dim3(32), stream,
                       static_cast<const float*>(scratch_v), static_cast<const int64_t*>(scratch_i), slices, n, out);
}

bool decode_attention_serves(int64_t q_heads, int64_t kv_heads, int64_t head_dim) {
  return (head_dim == 64 || head_dim == 128) && kv_heads > 0 && q_heads % kv_heads == 0 && q_heads / kv_heads <= 32;
}

void decode_attention_splits(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t window, int* splits,
                             int* per_split, int64_t min_per_split) {
  const int64_t pairs = batch * kv_heads, group = q_heads / kv_heads, least = std::max<int64_t>(min_per_split, 1);
  int64_t s = (256 + pairs - 1) / pairs;                // about 256 blocks in all
  s = std::min<int64_t>(s, (window + least - 1) / least);  // at least `least` positions a block
  s = std::max<int64_t>(s, (window + 255) / 256);        // at most 256 (a few tiles)
  s = std::min<int64_t>(s, kAttnCombineSlots / group);   // what the combine holds in shared memory
  s = std::max<int64_t>(s, 1);
  *per_split = static_cast<int>((window + s - 1) / s);
  *splits = static_cast<int>((window + *per_split - 1) / *per_split);
}

cudaError_t launch_decode_attention(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos,
                                    void* out, float* part_acc, float* part_ml, int* counters, DType dtype,
                                    int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                    int64_t head_dim, int splits, int per_split, cudaStream_t stream) {
  if (!decode_attention_serves(q_heads, kv_heads, head_dim) || splits < 1) return cudaErrorInvalidValue;
  if (batch == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16:
      return attention_typed<__nv_bfloat16>(q, k_cache, v_cache, pos, out, part_acc, part_ml, counters, batch,
                                            positions, q_heads, kv_heads, head_dim, splits, per_split, stream);
    case DType::kFloat16:
      return attention_typed<__half>(q, k_cache, v_cache, pos, out, part_acc, part_ml, counters, batch, positions,
                                     q_heads, kv_heads, head_dim, splits, per_split, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool decode_attention_cluster_plan(int64_t q_heads, int64_t kv_heads, int64_t head_dim, int64_t window, int* splits,
                                   int* per_split, int64_t min_per_split, int max_cluster) {
  if (max_cluster <= 0 || !stream_available() || !decode_attention_serves(q_heads, kv_heads, head_dim) || window < 1) {
    return false;
  }
  max_cluster = std::min(max_cluster, kClusterAttnMaxSplits);
  const int optin = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>();
  const int64_t least = std::max<int64_t>(min_per_split, 1), group = q_heads / kv_heads;
  int64_t s = std::min<int64_t>(std::max<int64_t>((window + least - 1) / least, 1), max_cluster);
  for (; s <= kClusterAttnMaxSplits; ++s) {  // more splits only where a split would not fit
    const int64_t per = (window + s - 1) / s;
    if (cluster_attn_smem(per, group, head_dim) <= static_cast<size_t>(optin)) {
      *per_split = static_cast<int>(per);
      *splits = static_cast<int>((window + per - 1) / per);
      return true;
    }
  }
  return false;
}

cudaError_t launch_decode_attention_cluster(const DecodeAttentionInput& in, const int64_t* pos, void* out, DType dtype,
                                            int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                            int64_t head_dim, int splits, int per_split, cudaStream_t stream) {
  if (!decode_attention_serves(q_heads, kv_heads, head_dim) || splits < 1 || splits > kClusterAttnMaxSplits ||
      per_split < 1 || !stream_available() || (in.fresh_k == nullptr) != (in.fresh_v == nullptr) ||
      (in.fresh_k != nullptr && (!aligned16(in.fresh_k) || !aligned16(in.fresh_v) || in.fresh_stride % 8 != 0))) {
    return cudaErrorInvalidValue;
  }
  if (batch == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16:
      return cluster_attention_typed<__nv_bfloat16>(in, pos, out, batch, positions, q_heads, kv_heads, head_dim,
                                                    splits, per_split, stream);
    case DType::kFloat16:
      return cluster_attention_typed<__half>(in, pos, out, batch, positions, q_heads, kv_heads, head_dim, splits,
                                             per_split, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_decode_qkv_to_cache(const void* qkv, const void* cos, const void* sin, const int64_t* pos,
                                       void* q_out, void* k_cache, void* v_cache, int* used_k, DType dtype,
                                       int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                       int64_t head_dim, cudaStream_t stream) {
  const int64_t n = batch * (q_heads + 2 * kv_heads) * (head_dim / 2);
  if (n == 0) return cudaSuccess;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_qkv_to_cache<__nv_bfloat16>, grid, dim3(threads), stream,
                           static_cast<const __nv_bfloat16*>(qkv), static_cast<const __nv_bfloat16*>(cos),
                           static_cast<const __nv_bfloat16*>(sin), pos, static_cast<__nv_bfloat16*>(q_out),
                           static_cast<__nv_bfloat16*>(k_cache), static_cast<__nv_bfloat16*>(v_cache), used_k, batch,
                           positions, q_heads, kv_heads, head_dim);
    case DType::kFloat16:
      return launch_kernel(decode_qkv_to_cache<__half>, grid, dim3(threads), stream, static_cast<const __half*>(qkv),
                           static_cast<const __half*>(cos), static_cast<const __half*>(sin), pos,
                           static_cast<__half*>(q_out), static_cast<__half*>(k_cache), static_cast<__half*>(v_cache),
                           used_k, batch, positions, q_heads, kv_heads, head_dim);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gpubench::engine::fused
