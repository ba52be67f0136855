// The decode step's matrix products by gpubench's per-warp GEMV, with its launch. The streamed and run GEMVs (sm_90) are
// decode_stream_kernels.cu; decode_launch.cuh holds what the decode units share. Separate units so that the build
// compiles them side by side.

#include "cuda/decode_launch.cuh"

namespace gpubench::engine::fused {

namespace {

// ---- GEMV: a few rows of x against every weight row, one warp per output column ----------------------------------

constexpr int kGemvWarps = 8;

/// What one warp sums and its split group adds up: the products (kOut x M), each input row's sum and sum of squares
/// (2 x M, with a norm) and, with a LayerNorm, W . gamma and W . beta per output (2 x kOut).
template <int M, int kOut>
struct GemvSums {
  static constexpr int kProducts = 0, kRowSum = kOut * M, kRowSquares = kRowSum + M, kGamma = kRowSquares + M,
                       kBeta = kGamma + kOut, kCount = kBeta + kOut;
};

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

}  // namespace gpubench::engine::fused
