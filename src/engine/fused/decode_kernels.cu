#include "fused/decode_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpubench::engine::fused {

namespace {

__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

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

template <typename T, int M, int ACT>
__global__ void __launch_bounds__(kGemvWarps * 32)
    decode_gemv(const T* __restrict__ x, int64_t ldx, DecodeWeights w, const T* __restrict__ bias,
                const T* __restrict__ residual, T* __restrict__ out, int64_t n, int64_t k) {
  constexpr bool kGlu = ACT == static_cast<int>(DecodeActivation::kSwiglu);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
  if (j >= n) return;  // the whole warp: no shuffle below misses a lane
  const T* row0;
  const T* row1 = nullptr;
  if (kGlu) {
    row0 = static_cast<const T*>(w.w[0]) + j * k;
    row1 = static_cast<const T*>(w.w[1]) + j * k;
  } else {
    int64_t r = j;
    int s = 0;
    while (s < w.count - 1 && r >= w.rows[s]) r -= w.rows[s++];
    row0 = static_cast<const T*>(w.w[s]) + r * k;
  }
  float acc[M], acc_up[kGlu ? M : 1];
#pragma unroll
  for (int r = 0; r < M; ++r) {
    acc[r] = 0.0f;
    if (kGlu) acc_up[r] = 0.0f;
  }
  const int64_t chunks = k / 8;
  const uint4* w0 = reinterpret_cast<const uint4*>(row0);
  const uint4* w1 = reinterpret_cast<const uint4*>(row1);
#pragma unroll 4
  for (int64_t c = lane; c < chunks; c += 32) {
    float wf[8], uf[8];
    unpack8<T>(__ldcs(w0 + c), wf);  // weights stream through once: evict first, x stays in L1
    if (kGlu) unpack8<T>(__ldcs(w1 + c), uf);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float xf[8];
      unpack8<T>(__ldg(reinterpret_cast<const uint4*>(x + r * ldx) + c), xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        acc[r] = fmaf(wf[e], xf[e], acc[r]);
        if (kGlu) acc_up[r] = fmaf(uf[e], xf[e], acc_up[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) {
    const float dot = warp_sum(acc[r]);
    const float up = kGlu ? warp_sum(acc_up[r]) : 0.0f;
    if (lane != r) continue;
    float v = dot + (bias != nullptr ? load(bias, j) : 0.0f);
    if (ACT == static_cast<int>(DecodeActivation::kGeluTanh)) {
      v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    } else if (kGlu) {
      v = v / (1.0f + __expf(-v)) * up;
    }
    if (residual != nullptr) v += load(residual, r * n + j);
    store(out, r * n + j, v);
  }
}

template <typename T, int M>
cudaError_t gemv_rows(const void* x, int64_t ldx, const DecodeWeights& w, const void* bias, const void* residual,
                      void* out, int64_t n, int64_t k, DecodeActivation act, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + kGemvWarps - 1) / kGemvWarps));
  const auto* xs = static_cast<const T*>(x);
  const auto* b = static_cast<const T*>(bias);
  const auto* res = static_cast<const T*>(residual);
  auto* o = static_cast<T*>(out);
  switch (act) {
    case DecodeActivation::kNone: decode_gemv<T, M, 0><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k); break;
    case DecodeActivation::kGeluTanh: decode_gemv<T, M, 1><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k); break;
    case DecodeActivation::kSwiglu: decode_gemv<T, M, 2><<<grid, kGemvWarps * 32, 0, stream>>>(xs, ldx, w, b, res, o, n, k); break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t gemv_typed(const void* x, int64_t ldx, const DecodeWeights& w, const void* bias, const void* residual,
                       void* out, int64_t m, int64_t n, int64_t k, DecodeActivation act, cudaStream_t stream) {
  switch (m) {
    case 1: return gemv_rows<T, 1>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 2: return gemv_rows<T, 2>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 3: return gemv_rows<T, 3>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 4: return gemv_rows<T, 4>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 5: return gemv_rows<T, 5>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 6: return gemv_rows<T, 6>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 7: return gemv_rows<T, 7>(x, ldx, w, bias, residual, out, n, k, act, stream);
    case 8: return gemv_rows<T, 8>(x, ldx, w, bias, residual, out, n, k, act, stream);
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
                               DecodeActivation act, cudaStream_t stream) {
  if (m < 1 || m > kDecodeGemvMaxRows || !decode_gemv_fits(x, ldx, weights, k)) return cudaErrorInvalidValue;
  if (act == DecodeActivation::kSwiglu && (weights.count != 2 || bias != nullptr)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16: return gemv_typed<__nv_bfloat16>(x, ldx, weights, bias, residual, out, m, n, k, act, stream);
    case DType::kFloat16: return gemv_typed<__half>(x, ldx, weights, bias, residual, out, m, n, k, act, stream);
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
