#include "fused/decode_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fused/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::load;
using device::store;

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

// ---- GEMV: a few rows of x against every weight row, one warp per output column ----------------------------------

constexpr int kGemvWarps = 8;

/// The output of row r for column j: act(dot + bias) (+ up for SwiGLU) + residual.
template <typename T, int ACT>
__device__ __forceinline__ void gemv_epilogue(float dot, float up, const T* bias, const T* residual, T* out, int64_t n,
                                              int64_t j, int r) {
  float v = dot + (bias != nullptr ? load(bias, j) : 0.0f);
  if (ACT == static_cast<int>(DecodeActivation::kGeluTanh)) {
    v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  } else if (ACT == static_cast<int>(DecodeActivation::kSwiglu)) {
    v = v / (1.0f + __expf(-v)) * up;
  }
  if (residual != nullptr) v += load(residual, r * n + j);
  store(out, r * n + j, v);
}

/// Each output column j is `split` warps' work (1, 2, 4 or 8; they share k and add up through shared memory), so
/// that a narrow matrix still has enough warps, and enough loads in flight, to keep the memory system busy. Every
/// lane keeps four 16-byte weight loads in flight at a time.
template <typename T, int M, int ACT>
__global__ void __launch_bounds__(kGemvWarps * 32)
    decode_gemv(const T* __restrict__ x, int64_t ldx, DecodeWeights w, const T* __restrict__ bias,
                const T* __restrict__ residual, T* __restrict__ out, int64_t n, int64_t k, int split,
                DecodeInputNorm norm) {
  constexpr bool kGlu = ACT == static_cast<int>(DecodeActivation::kSwiglu);
  constexpr int kOut = kGlu ? 2 : 1;
  __shared__ float partial[kGemvWarps][kOut][M];
  __shared__ float stats[2][M];  // each row's mean (0 for RMSNorm) and 1 / its deviation
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const T* nw = static_cast<const T*>(norm.weight);
  const T* nb = static_cast<const T*>(norm.bias);
  if (nw != nullptr) {  // the input's norm, computed by every block (x is a few KB, in L2) instead of a kernel of its own
    float sum[M], sq[M];
#pragma unroll
    for (int r = 0; r < M; ++r) sum[r] = sq[r] = 0.0f;
    for (int64_t c = threadIdx.x; c < k / 8; c += blockDim.x) {
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack8<T>(__ldg(reinterpret_cast<const uint4*>(x + r * ldx) + c), xf);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          sum[r] += xf[e];
          sq[r] = fmaf(xf[e], xf[e], sq[r]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < M; ++r) {
      sum[r] = warp_sum(sum[r]);
      sq[r] = warp_sum(sq[r]);
      if (lane == 0) partial[warp][0][r] = sum[r];
    }
    __shared__ float sq_partial[kGemvWarps][M];
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < M; ++r) sq_partial[warp][r] = sq[r];
    }
    __syncthreads();
    if (threadIdx.x < M) {
      const int r = threadIdx.x;
      float s1 = 0.0f, s2 = 0.0f;
      for (int i = 0; i < kGemvWarps; ++i) {
        s1 += partial[i][0][r];
        s2 += sq_partial[i][r];
      }
      const float inv_k = 1.0f / static_cast<float>(k);
      const float mean = norm.rms ? 0.0f : s1 * inv_k;
      const float var = norm.rms ? s2 * inv_k : fmaxf(s2 * inv_k - mean * mean, 0.0f);
      stats[0][r] = mean;
      stats[1][r] = rsqrtf(var + norm.eps);
    }
    __syncthreads();
  }
  const int part = warp % split;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * (kGemvWarps / split) + warp / split;
  const bool valid = j < n;
  float acc[kOut][M];
#pragma unroll
  for (int o = 0; o < kOut; ++o) {
#pragma unroll
    for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
  }
  if (valid) {
    const T* rows[kOut];
    if (kGlu) {
      rows[0] = static_cast<const T*>(w.w[0]) + j * k;
      rows[kOut - 1] = static_cast<const T*>(w.w[1]) + j * k;
    } else {
      int64_t r = j;
      int s = 0;
      while (s < w.count - 1 && r >= w.rows[s]) r -= w.rows[s++];
      rows[0] = static_cast<const T*>(w.w[s]) + r * k;
    }
    const int64_t chunks = k / 8, step = 32 * static_cast<int64_t>(split);
    auto consume = [&](const uint4 (&wv)[kOut], int64_t c) {
      float gf[8], bf[8];
      if (nw != nullptr) {
        unpack8<T>(__ldg(reinterpret_cast<const uint4*>(nw) + c), gf);
        if (nb != nullptr) {
          unpack8<T>(__ldg(reinterpret_cast<const uint4*>(nb) + c), bf);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) bf[e] = 0.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack8<T>(__ldg(reinterpret_cast<const uint4*>(x + r * ldx) + c), xf);
        if (nw != nullptr) {
          const float mean = stats[0][r], inv = stats[1][r];
#pragma unroll
          for (int e = 0; e < 8; ++e) xf[e] = fmaf((xf[e] - mean) * inv, gf[e], bf[e]);
        }
#pragma unroll
        for (int o = 0; o < kOut; ++o) {
          float wf[8];
          unpack8<T>(wv[o], wf);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o][r] = fmaf(wf[e], xf[e], acc[o][r]);
        }
      }
    };
    int64_t c = part * 32 + lane;
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
  }
#pragma unroll
  for (int o = 0; o < kOut; ++o) {
#pragma unroll
    for (int r = 0; r < M; ++r) acc[o][r] = warp_sum(acc[o][r]);
  }
  if (split == 1) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (valid && lane == r) gemv_epilogue<T, ACT>(acc[0][r], acc[kOut - 1][r], bias, residual, out, n, j, r);
    }
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
#pragma unroll
      for (int r = 0; r < M; ++r) partial[warp][o][r] = acc[o][r];
    }
  }
  __syncthreads();  // (the prologue's reads of `partial` ended at its second barrier)
  if (valid && part == 0 && lane < M) {
    float dot = 0.0f, up = 0.0f;
    for (int s = 0; s < split; ++s) {
      dot += partial[warp + s][0][lane];
      if (kGlu) up += partial[warp + s][kOut - 1][lane];
    }
    gemv_epilogue<T, ACT>(dot, up, bias, residual, out, n, j, lane);
  }
}

/// Warps per output column: at least 4,096 warps in all, while each lane keeps at least two 16-byte loads per row of
/// work (the best of 1, 2, 4, 8 on every TinyLlama and GPT-2 decode shape on the H200 but one, within 4 % there:
/// results/2026-12-01-h200-fused-decode/gemv_bench.txt).
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
  switch (act) {
    case DecodeActivation::kNone: decode_gemv<T, M, 0><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k, split, norm); break;
    case DecodeActivation::kGeluTanh: decode_gemv<T, M, 1><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k, split, norm); break;
    case DecodeActivation::kSwiglu: decode_gemv<T, M, 2><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k, split, norm); break;
  }
  return cudaGetLastError();
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

// ---- greedy choice: the first largest logit of each row ------------------------------------------------------

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxBlocksPerRow = 32;

__device__ __forceinline__ void better(float& v, int64_t& i, float v2, int64_t i2) {
  // NaN is the largest, as torch.argmax has it; ties go to the first index
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

/// Stage 1: block (g, row) finds the best of its slice of the row.
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads) argmax_slices(const T* __restrict__ logits, int64_t n,
                                                               float* __restrict__ best_v, int64_t* __restrict__ best_i) {
  __shared__ float sv[kArgmaxThreads / 32];
  __shared__ int64_t si[kArgmaxThreads / 32];
  const T* row = logits + blockIdx.y * n;
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
  float v = -INFINITY;
  int64_t idx = n;
  for (int s = lane; s < slices; s += 32) better(v, idx, best_v[blockIdx.x * slices + s], best_i[blockIdx.x * slices + s]);
  warp_best(v, idx);
  if (lane == 0) out[blockIdx.x] = idx < n ? idx : 0;
}

// ---- decode attention: one query per sequence over the cache, split over positions ---------------------------

/// Block (split, kv head, sequence): the group of q heads that share the kv head (a warp each) over positions
/// [split x per_split, +per_split) of the keys in use (pos + 1), an online softmax; partial (max, sum, acc) to
/// scratch. The last block of a (sequence, kv head) to finish (a counter, reset by it) combines the splits.
template <typename T, int D>
__global__ void decode_attention(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                 const int64_t* __restrict__ pos_ptr, T* __restrict__ out, float* __restrict__ part_acc,
                                 float* __restrict__ part_ml, int* __restrict__ counters, int64_t positions, int hq,
                                 int hk, int splits, int per_split, float scale) {
  constexpr int E = D / 32;  // elements per lane
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z;
  const int group = hq / hk, g = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = kh * group + g;
  const int64_t used = *pos_ptr + 1;
  const int64_t p0 = static_cast<int64_t>(split) * per_split;
  const int64_t p1 = p0 + per_split < used ? p0 + per_split : used;
  float qr[E], acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    qr[e] = load(q + (static_cast<int64_t>(b) * hq + h) * D, lane * E + e) * scale;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
#pragma unroll 4
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t row = ((static_cast<int64_t>(b) * positions + p) * hk + kh) * D + lane * E;
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) s = fmaf(qr[e], load(kc, row + e), s);
    s = warp_sum(s);
    const float m2 = fmaxf(m, s);
    const float corr = __expf(m - m2), w = __expf(s - m2);
    l = l * corr + w;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = fmaf(w, load(vc, row + e), acc[e] * corr);
    m = m2;
  }
  const int64_t slot = (static_cast<int64_t>(b) * hq + h) * splits + split;
#pragma unroll
  for (int e = 0; e < E; ++e) part_acc[slot * D + lane * E + e] = acc[e];
  if (lane == 0) {
    part_ml[slot * 2] = m;
    part_ml[slot * 2 + 1] = l;
  }
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(&counters[b * hk + kh], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int64_t first = (static_cast<int64_t>(b) * hq + h) * splits;
  // The other blocks' partials through L2 (__ldcg): never from this SM's L1, which is not coherent with their writes.
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, __ldcg(part_ml + (first + s) * 2));
  float total = 0.0f, o[E];
#pragma unroll
  for (int e = 0; e < E; ++e) o[e] = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float ms = __ldcg(part_ml + (first + s) * 2), ls = __ldcg(part_ml + (first + s) * 2 + 1);
    if (ls == 0.0f) continue;
    const float f = __expf(ms - mx);
    total += ls * f;
#pragma unroll
    for (int e = 0; e < E; ++e) o[e] = fmaf(__ldcg(part_acc + (first + s) * D + lane * E + e), f, o[e]);
  }
  const float inv = 1.0f / total;
#pragma unroll
  for (int e = 0; e < E; ++e) store(out + (static_cast<int64_t>(b) * hq + h) * D, lane * E + e, o[e] * inv);
  if (threadIdx.x == 0) counters[b * hk + kh] = 0;  // ready for the next step (the same graph replays it)
}

template <typename T>
cudaError_t attention_typed(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos, void* out,
                            float* part_acc, float* part_ml, int* counters, int64_t batch, int64_t positions,
                            int64_t hq, int64_t hk, int64_t d, int splits, int per_split, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(hk), static_cast<unsigned>(batch));
  const unsigned threads = static_cast<unsigned>(32 * (hq / hk));
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const auto* qs = static_cast<const T*>(q);
  const auto* ks = static_cast<const T*>(k_cache);
  const auto* vs = static_cast<const T*>(v_cache);
  auto* o = static_cast<T*>(out);
  if (d == 64) {
    decode_attention<T, 64><<<grid, threads, 0, stream>>>(qs, ks, vs, pos, o, part_acc, part_ml, counters, positions,
                                                         static_cast<int>(hq), static_cast<int>(hk), splits, per_split,
                                                         scale);
  } else {
    decode_attention<T, 128><<<grid, threads, 0, stream>>>(qs, ks, vs, pos, o, part_acc, part_ml, counters, positions,
                                                          static_cast<int>(hq), static_cast<int>(hk), splits,
                                                          per_split, scale);
  }
  return cudaGetLastError();
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

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

cudaError_t launch_decode_norm(const void* x, const void* weight, const void* bias, void* y, DType dtype, int64_t rows,
                               int64_t dim, float eps, bool rms, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      decode_norm<__nv_bfloat16><<<grid, kNormThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(weight),
          static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(y), dim, eps, rms);
      break;
    case DType::kFloat16:
      decode_norm<__half><<<grid, kNormThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                             static_cast<const __half*>(weight),
                                                             static_cast<const __half*>(bias),
                                                             static_cast<__half*>(y), dim, eps, rms);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int64_t decode_argmax_scratch(int64_t rows) { return rows * kArgmaxBlocksPerRow; }

cudaError_t launch_decode_argmax(const void* logits, DType dtype, int64_t rows, int64_t n, float* scratch_v,
                                 int64_t* scratch_i, int64_t* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int64_t wanted = (n + 4 * kArgmaxThreads - 1) / (4 * kArgmaxThreads);  // about 4 values per thread
  const int slices = static_cast<int>(wanted < 1 ? 1 : wanted > kArgmaxBlocksPerRow ? kArgmaxBlocksPerRow : wanted);
  const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      argmax_slices<__nv_bfloat16><<<grid, kArgmaxThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(logits), n,
                                                                        scratch_v, scratch_i);
      break;
    case DType::kFloat16:
      argmax_slices<__half><<<grid, kArgmaxThreads, 0, stream>>>(static_cast<const __half*>(logits), n, scratch_v,
                                                                 scratch_i);
      break;
    default: return cudaErrorInvalidValue;
  }
  argmax_rows<<<static_cast<unsigned>(rows), 32, 0, stream>>>(scratch_v, scratch_i, slices, n, out);
  return cudaGetLastError();
}

bool decode_attention_serves(int64_t q_heads, int64_t kv_heads, int64_t head_dim) {
  return (head_dim == 64 || head_dim == 128) && kv_heads > 0 && q_heads % kv_heads == 0 && q_heads / kv_heads <= 32;
}

void decode_attention_splits(int64_t batch, int64_t kv_heads, int64_t window, int* splits, int* per_split) {
  // about 256 blocks in all, at least 8 positions each
  int64_t s = (256 + batch * kv_heads - 1) / (batch * kv_heads);
  const int64_t most = (window + 7) / 8;
  s = s < 1 ? 1 : s > most ? most : s;
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
      decode_qkv_to_cache<__nv_bfloat16><<<grid, threads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(qkv), static_cast<const __nv_bfloat16*>(cos),
          static_cast<const __nv_bfloat16*>(sin), pos, static_cast<__nv_bfloat16*>(q_out),
          static_cast<__nv_bfloat16*>(k_cache), static_cast<__nv_bfloat16*>(v_cache), used_k, batch, positions,
          q_heads, kv_heads, head_dim);
      break;
    case DType::kFloat16:
      decode_qkv_to_cache<__half><<<grid, threads, 0, stream>>>(
          static_cast<const __half*>(qkv), static_cast<const __half*>(cos), static_cast<const __half*>(sin), pos,
          static_cast<__half*>(q_out), static_cast<__half*>(k_cache), static_cast<__half*>(v_cache), used_k, batch,
          positions, q_heads, kv_heads, head_dim);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace gpubench::engine::fused
