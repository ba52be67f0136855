// BERT's sub-layer outputs for `kernels: fused` (declared in fused_kernels.h): dropout + residual
// add + LayerNorm forward and backward in one pass each, with the preceding linear layer's bias
// gradient in the backward pass, and GELU's gradient with its bias gradient; Llama's residual add +
// RMSNorm (a block a row, below). A warp owns a row (the
// LayerNorm statistics are warp reductions); each lane holds its elements in registers, eight a
// 16-byte load where the rows allow it.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "cuda/device_values.cuh"
#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused {

namespace {

using device::aligned16;
using device::block_amax;
using device::max_stored;
using device::load;
using device::load_v;
using device::multiprocessors;
using device::rounded;
using device::store;
using device::store_v;

constexpr int kRowThreads = 256;  // eight warps, a row each at a time
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kBwdThreads = 128;  // the backward pass: four warps, each with its column sums in shared memory
constexpr int kBwdWarps = kBwdThreads / 32;

/// f += p[i..i+V) where p is not null (a gradient that reaches a tensor by a second path).
template <typename T, int V>
__device__ __forceinline__ void add_if(const T* __restrict__ p, int64_t i, float (&f)[V]) {
  if (p == nullptr) return;
  float x[V];
  load_v<T, V>(p, i, x);
#pragma unroll
  for (int k = 0; k < V; ++k) f[k] += x[k];
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// ---- dropout's random stream
// --------------------------------------------------------------------------------------

/// Philox 4x32-10 (Salmon et al., SC'11; the generator curand and ATen use) of a 128-bit counter
/// under a 64-bit key.
__device__ __forceinline__ uint4 philox(uint4 c, uint2 k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint32_t hi0 = __umulhi(kM0, c.x), lo0 = kM0 * c.x;
    const uint32_t hi1 = __umulhi(kM1, c.z), lo1 = kM1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += kW0;
    k.y += kW1;
  }
  return c;
}

struct Stream {
  uint64_t seed, offset;
};

__device__ __forceinline__ Stream unpack(const PhiloxArgs& a) {
  if (a.captured)
    return {static_cast<uint64_t>(*a.seed_ptr),
            static_cast<uint64_t>(*a.offset_ptr) + a.offset_intragraph};
  return {a.seed, a.offset};
}

/// Four uniform draws for elements 4g .. 4g+3: the counter is (g, offset), the key the seed.
__device__ __forceinline__ uint4 draws(const Stream& s, uint64_t g) {
  return philox(make_uint4(static_cast<uint32_t>(g), static_cast<uint32_t>(g >> 32),
                           static_cast<uint32_t>(s.offset), static_cast<uint32_t>(s.offset >> 32)),
                make_uint2(static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32)));
}

__device__ __forceinline__ bool kept(uint32_t x, float keep_prob) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f) <
         keep_prob;  // a uniform in [0, 1) from 24 bits
}

/// Keep flags of elements e .. e+V-1 (e a multiple of 4 when V > 1).
template <int V>
__device__ __forceinline__ void draw_keep(const Stream& s, int64_t e, float keep_prob,
                                          uint8_t (&kb)[V]) {
  if constexpr (V == 1) {
    const uint4 r = draws(s, static_cast<uint64_t>(e) >> 2);
    const int c = static_cast<int>(e & 3);
    kb[0] = kept(c == 0 ? r.x : c == 1 ? r.y : c == 2 ? r.z : r.w, keep_prob);
  } else {
#pragma unroll
    for (int g = 0; g < V / 4; ++g) {
      const uint4 r = draws(s, (static_cast<uint64_t>(e) >> 2) + g);
      kb[4 * g] = kept(r.x, keep_prob);
      kb[4 * g + 1] = kept(r.y, keep_prob);
      kb[4 * g + 2] = kept(r.z, keep_prob);
      kb[4 * g + 3] = kept(r.w, keep_prob);
    }
  }
}

template <int V>
__device__ __forceinline__ void store_keep(uint8_t* p, int64_t e, const uint8_t (&kb)[V]) {
  if constexpr (V == 8) {
    uint2 w;
    memcpy(&w, kb, 8);
    *reinterpret_cast<uint2*>(p + e) = w;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) p[e + k] = kb[k];
  }
}

template <int V>
__device__ __forceinline__ void load_keep(const uint8_t* p, int64_t e, uint8_t (&kb)[V]) {
  if constexpr (V == 8) {
    const uint2 w = *reinterpret_cast<const uint2*>(p + e);
    memcpy(kb, &w, 8);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) kb[k] = p[e + k];
  }
}

// ---- dropout + add + LayerNorm, forward
// ---------------------------------------------------------------------------

/// Lane `lane`'s c-th vector of a row starts at column (c * 32 + lane) * V: a warp's loads are
/// contiguous.
template <int V>
__device__ __forceinline__ int column(int c, int lane) {
  return (c * 32 + lane) * V;
}

template <typename T, int V, int C>
__global__ void __launch_bounds__(kRowThreads)
    dropout_add_layer_norm_fwd(const T* __restrict__ y, const T* __restrict__ res,
                               const float* __restrict__ gamma, const float* __restrict__ beta,
                               T* __restrict__ sum, T* __restrict__ out, uint8_t* __restrict__ keep,
                               float* __restrict__ mean_out, float* __restrict__ rstd_out,
                               int64_t rows, int n, float keep_prob, float eps, PhiloxArgs rng) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kRowWarps;
  const Stream st = keep != nullptr ? unpack(rng) : Stream{0, 0};
  const float scale = keep_prob > 0.0f ? 1.0f / keep_prob : 0.0f;
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / 32; row < rows;
       row += warps) {
    float v[C][V];
    float total = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = column<V>(c, lane);
      if (j >= n) continue;
      const int64_t e = row * n + j;
      load_v<T, V>(y, e, v[c]);
      if (keep != nullptr) {
        uint8_t kb[V];
        draw_keep<V>(st, e, keep_prob, kb);
        store_keep<V>(keep, e, kb);
#pragma unroll
        for (int k = 0; k < V; ++k) v[c][k] = kb[k] ? v[c][k] * scale : 0.0f;
      }
      if (res != nullptr) {
        float r[V];
        load_v<T, V>(res, e, r);
#pragma unroll
        for (int k = 0; k < V; ++k) v[c][k] += r[k];
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[c][k] = rounded<T>(
            v[c][k]);  // normalise what is stored, so the backward pass sees the same input
        total += v[c][k];
      }
      store_v<T, V>(sum, e, v[c]);
    }
    const float mean = warp_sum(total) * inv_n;
    float sq = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (column<V>(c, lane) >= n) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) sq += (v[c][k] - mean) * (v[c][k] - mean);
    }
    const float rstd = rsqrtf(warp_sum(sq) * inv_n + eps);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = column<V>(c, lane);
      if (j >= n) continue;
      float g[V], b[V], o[V];
      load_v<float, V>(gamma, j, g);
      load_v<float, V>(beta, j, b);
#pragma unroll
      for (int k = 0; k < V; ++k) o[k] = (v[c][k] - mean) * rstd * g[k] + b[k];
      store_v<T, V>(out, row * n + j, o);
    }
    if (lane == 0) {
      mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
  }
}

// ---- its backward pass
// --------------------------------------------------------------------------------------------

/// The most blocks the backward pass launches for `rows` (six an SM): each block's column sums are one partial row
/// of scratch, so the scratch is sized by this bound; the launch takes what fits on the device at once.
int max_backward_blocks(int64_t rows) {
  const int64_t wanted = (rows + kBwdWarps - 1) / kBwdWarps;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wanted, 6 * static_cast<int64_t>(multiprocessors()))));
}

template <typename T, int V, int C>
__global__ void __launch_bounds__(kBwdThreads)
    dropout_add_layer_norm_bwd(const T* __restrict__ d_out, const T* __restrict__ d_extra,
                               const T* __restrict__ sum, const float* __restrict__ gamma,
                               const float* __restrict__ mean, const float* __restrict__ rstd,
                               const uint8_t* __restrict__ keep, float keep_prob,
                               T* __restrict__ d_sum, T* __restrict__ d_y,
                               float* __restrict__ scratch, int64_t rows, int n) {
  // Each warp's column sums (d_gamma, d_beta, d_bias) in shared memory, [warp][3][n]: a lane owns its columns, so no
  // atomics, and the registers stay free for the row (three register arrays of sums would cap the occupancy).
  extern __shared__ float acc[];
  constexpr bool kHold = C * V <= 24;  // the row's d_out and s in registers between the passes (else L1 serves them)
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  float* const mine = acc + static_cast<int64_t>(warp) * 3 * n;
  for (int i = lane; i < 3 * n; i += 32) mine[i] = 0.0f;
  __syncwarp();
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kBwdWarps;
  const float scale = keep_prob > 0.0f ? 1.0f / keep_prob : 0.0f;
  const float inv_n = 1.0f / static_cast<float>(n);
  float hd[kHold ? C : 1][V], hs[kHold ? C : 1][V];
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kBwdWarps + warp; row < rows; row += warps) {
    const float m = mean[row], rs = rstd[row];
    float a = 0.0f, b = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = column<V>(c, lane);
      if (j >= n) continue;
      float dv[V], sv[V], gv[V];
      load_v<T, V>(d_out, row * n + j, dv);
      load_v<T, V>(sum, row * n + j, sv);
      load_v<float, V>(gamma, j, gv);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float g = gv[k] * dv[k];
        a += g;
        b += g * (sv[k] - m) * rs;
        if constexpr (kHold) {
          hd[c][k] = dv[k];
          hs[c][k] = sv[k];
        }
      }
    }
    a = warp_sum(a) * inv_n;
    b = warp_sum(b) * inv_n;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = column<V>(c, lane);
      if (j >= n) continue;
      const int64_t e = row * n + j;
      float dv[V], sv[V], gv[V], ds[V];
      if constexpr (kHold) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          dv[k] = hd[c][k];
          sv[k] = hs[c][k];
        }
      } else {
        load_v<T, V>(d_out, e, dv);
        load_v<T, V>(sum, e, sv);
      }
      load_v<float, V>(gamma, j, gv);
      float xhat[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        xhat[k] = (sv[k] - m) * rs;
        ds[k] = rs * (gv[k] * dv[k] - a - xhat[k] * b);
      }
      add_if<T, V>(d_extra, e, ds);
      store_v<T, V>(d_sum, e, ds);
      float dy[V];
      if (keep != nullptr) {
        uint8_t kb[V];
        load_keep<V>(keep, e, kb);
#pragma unroll
        for (int k = 0; k < V; ++k) dy[k] = kb[k] ? ds[k] * scale : 0.0f;
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) dy[k] = ds[k];
      }
      if (d_y != nullptr) store_v<T, V>(d_y, e, dy);
      // The column sums: d_gamma, d_beta, and the bias gradient of what was stored.
      float sg[V], sb[V], sy[V];
      load_v<float, V>(mine, j, sg);
      load_v<float, V>(mine + n, j, sb);
      load_v<float, V>(mine + 2 * n, j, sy);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        sg[k] += dv[k] * xhat[k];
        sb[k] += dv[k];
        sy[k] += rounded<T>(dy[k]);
      }
      store_v<float, V>(mine, j, sg);
      store_v<float, V>(mine + n, j, sb);
      store_v<float, V>(mine + 2 * n, j, sy);
    }
  }
  __syncthreads();
  // The block's sums over its warps in a fixed order (deterministic): one partial row per block.
  for (int i = threadIdx.x; i < 3 * n; i += blockDim.x) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < kBwdWarps; ++w) t += acc[static_cast<int64_t>(w) * 3 * n + i];
    const int p = i / n, j = i % n;
    scratch[(static_cast<int64_t>(p) * gridDim.x + blockIdx.x) * n + j] = t;
  }
}

/// out[p][j] = sum over the tiles of scratch[p][tile][j]. A block takes 32 columns: its eight warps each sum every
/// eighth tile (a warp reads 32 adjacent columns), then one warp adds the eight partial sums in a fixed order
/// (deterministic), so the tiles are read by 8 x 32 threads a column group rather than one thread a column.
constexpr int kSumWarps = 8;
__global__ void column_sums(const float* __restrict__ scratch, int tiles, int64_t n,
                            float* __restrict__ out) {
  __shared__ float part[kSumWarps][33];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t p = blockIdx.y;
  float s = 0.0f;
  if (j < n) {
    for (int t = threadIdx.y; t < tiles; t += kSumWarps) s += scratch[(p * tiles + t) * n + j];
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < kSumWarps; ++w) t += part[w][threadIdx.x];
    out[p * n + j] = t;
  }
}

cudaError_t launch_column_sums(const float* scratch, int parts, int tiles, int64_t n, float* out,
                               cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>(parts));
  column_sums<<<grid, dim3(32, kSumWarps), 0, stream>>>(scratch, tiles, n, out);
  return cudaGetLastError();
}

// ---- GELU's gradient with the bias gradient
// -----------------------------------------------------------------------

constexpr int kGeluThreads = 128;
constexpr int kGeluRows = 64;  // rows a block sums its columns over

__device__ __forceinline__ float gelu_grad(float x, bool tanh_approx) {
  if (tanh_approx) {  // as ATen's GeluBackward with approximate='tanh'
    constexpr float kBeta = 0.7978845608028654f, kKappa = 0.044715f;
    const float t = tanhf(kBeta * (x + kKappa * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kBeta * (1.0f + 3.0f * kKappa * x * x);
  }
  constexpr float kAlpha = 0.3989422804014327f;  // 1 / sqrt(2 pi)
  return 0.5f * (1.0f + erff(x * 0.7071067811865476f)) + x * __expf(-0.5f * x * x) * kAlpha;
}

/// d_pre = d_act * gelu'(pre) and the column sums of d_pre; with `pre` null, only the column sums of d_act.
template <typename T, int V>
__global__ void __launch_bounds__(kGeluThreads)
    gelu_backward_bias(const T* __restrict__ d_act, const T* __restrict__ pre, T* __restrict__ d_pre,
                       float* __restrict__ scratch, int64_t rows, int n, bool tanh_approx) {
  const int j = (blockIdx.x * kGeluThreads + threadIdx.x) * V;
  if (j >= n) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kGeluRows;
  const int64_t r1 = r0 + kGeluRows < rows ? r0 + kGeluRows : rows;
  float acc[V] = {};
#pragma unroll 4
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t e = r * n + j;
    float d[V];
    load_v<T, V>(d_act, e, d);
    if (pre != nullptr) {
      float x[V], g[V];
      load_v<T, V>(pre, e, x);
#pragma unroll
      for (int k = 0; k < V; ++k) g[k] = d[k] * gelu_grad(x[k], tanh_approx);
      store_v<T, V>(d_pre, e, g);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += rounded<T>(g[k]);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += d[k];
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) scratch[static_cast<int64_t>(blockIdx.y) * n + j + k] = acc[k];
}

// ---- GEGLU (the SD UNet's feed-forward) ---------------------------------------------------------------------------

/// x [rows, 2m] = (a, g): out [rows, m] = a * gelu(g) (erf); backward, d_x = (d * gelu(g), d * a * gelu'(g)).
template <typename T, int V>
__global__ void geglu_fwd(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t m) {
  const int64_t per_row = m / V, total = rows * per_row;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row, j = (i % per_row) * V;
    float a[V], g[V], o[V];
    load_v<T, V>(x, r * 2 * m + j, a);
    load_v<T, V>(x, r * 2 * m + m + j, g);
#pragma unroll
    for (int k = 0; k < V; ++k) o[k] = a[k] * 0.5f * g[k] * (1.0f + erff(g[k] * 0.7071067811865476f));
    store_v<T, V>(out, r * m + j, o);
  }
}

template <typename T, int V>
__global__ void geglu_bwd(const T* __restrict__ x, const T* __restrict__ d_out, T* __restrict__ d_x, int64_t rows,
                          int64_t m) {
  const int64_t per_row = m / V, total = rows * per_row;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row, j = (i % per_row) * V;
    float a[V], g[V], d[V], da[V], dg[V];
    load_v<T, V>(x, r * 2 * m + j, a);
    load_v<T, V>(x, r * 2 * m + m + j, g);
    load_v<T, V>(d_out, r * m + j, d);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      da[k] = d[k] * 0.5f * g[k] * (1.0f + erff(g[k] * 0.7071067811865476f));
      dg[k] = d[k] * a[k] * gelu_grad(g[k], false);
    }
    store_v<T, V>(d_x, r * 2 * m + j, da);
    store_v<T, V>(d_x, r * 2 * m + m + j, dg);
  }
}

unsigned elementwise_blocks(int64_t items, int threads) {
  const int64_t b = (items + threads - 1) / threads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(b, 65535 * 8)));
}

int64_t gelu_tiles(int64_t rows) { return (rows + kGeluRows - 1) / kGeluRows; }

// ---- residual add + RMSNorm (Llama's pre-norm layers), forward and backward
// ------------------------------------------------------
// A block owns a row at a time (rows up to 8,192 elements: Llama's widths are 2,048 and up, too long for a warp's
// registers); thread t holds the row's vectors t, t + 256, ... in registers; the row's sum of squares is a block
// reduction.

constexpr int kRmsThreads = 256;
constexpr int kRmsWarps = kRmsThreads / 32;

/// The block's sum of v (every thread gets it). `red` holds kRmsWarps floats.
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  __syncthreads();  // red is free again (the previous row's readers are done)
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int w = 0; w < kRmsWarps; ++w) t += red[w];
  return t;
}

template <int V>
__device__ __forceinline__ int rms_column(int c) {
  return (c * kRmsThreads + static_cast<int>(threadIdx.x)) * V;
}

template <typename T, int V, int C>
__global__ void __launch_bounds__(kRmsThreads)
    add_rms_norm_fwd(const T* __restrict__ y, const T* __restrict__ res, const float* __restrict__ gamma,
                     T* __restrict__ sum, T* __restrict__ out, float* __restrict__ rstd_out, int64_t rows, int n,
                     float eps, unsigned* amax) {
  __shared__ float red[kRmsWarps];
  const float inv_n = 1.0f / static_cast<float>(n);
  unsigned m = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float v[C][V];
    float sq = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = rms_column<V>(c);
      if (j >= n) continue;
      const int64_t e = row * n + j;
      float r[V];
      load_v<T, V>(y, e, v[c]);
      load_v<T, V>(res, e, r);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[c][k] = rounded<T>(v[c][k] + r[k]);  // the stream as stored: the backward pass normalises it again
        sq += v[c][k] * v[c][k];
      }
      store_v<T, V>(sum, e, v[c]);
    }
    const float rstd = rsqrtf(block_sum(sq, red) * inv_n + eps);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = rms_column<V>(c);
      if (j >= n) continue;
      float g[V], o[V];
      load_v<float, V>(gamma, j, g);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        o[k] = v[c][k] * rstd * g[k];
        max_stored<T>(m, o[k]);
      }
      store_v<T, V>(out, row * n + j, o);
    }
    if (threadIdx.x == 0) rstd_out[row] = rstd;
  }
  if (amax != nullptr) block_amax(m, amax);
}

/// d_sum = RMSNorm's input gradient of d_out (+ d_extra), and the block's partial column sums of d_out * xhat (the
/// gamma gradient) in scratch[blockIdx.x][n]: a thread owns its columns over every row it visits, in registers.
template <typename T, int V, int C>
__global__ void __launch_bounds__(kRmsThreads)
    add_rms_norm_bwd(const T* __restrict__ d_out, const T* __restrict__ d_extra, const T* __restrict__ sum,
                     const float* __restrict__ gamma, const float* __restrict__ rstd, T* __restrict__ d_sum,
                     float* __restrict__ scratch, int64_t rows, int n, unsigned* amax) {
  __shared__ float red[kRmsWarps];
  const float inv_n = 1.0f / static_cast<float>(n);
  unsigned m = 0;
  float acc[C][V];
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll
    for (int k = 0; k < V; ++k) acc[c][k] = 0.0f;
  }
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float rs = rstd[row];
    float dv[C][V], xh[C][V];
    float dot = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = rms_column<V>(c);
      if (j >= n) continue;
      float sv[V], g[V];
      load_v<T, V>(d_out, row * n + j, dv[c]);
      load_v<T, V>(sum, row * n + j, sv);
      load_v<float, V>(gamma, j, g);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        xh[c][k] = sv[k] * rs;
        dot += g[k] * dv[c][k] * xh[c][k];
        acc[c][k] += dv[c][k] * xh[c][k];
      }
    }
    const float mean_dot = block_sum(dot, red) * inv_n;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = rms_column<V>(c);
      if (j >= n) continue;
      const int64_t e = row * n + j;
      float g[V], ds[V];
      load_v<float, V>(gamma, j, g);
#pragma unroll
      for (int k = 0; k < V; ++k) ds[k] = rs * (g[k] * dv[c][k] - xh[c][k] * mean_dot);
      add_if<T, V>(d_extra, e, ds);
      store_v<T, V>(d_sum, e, ds);
#pragma unroll
      for (int k = 0; k < V; ++k) max_stored<T>(m, ds[k]);
    }
  }
  if (amax != nullptr) block_amax(m, amax);
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int j = rms_column<V>(c);
    if (j < n) store_v<float, V>(scratch, static_cast<int64_t>(blockIdx.x) * n + j, acc[c]);
  }
}

/// The most blocks the RMSNorm backward pass launches for `rows` (four an SM): its scratch is one row per block.
int rms_backward_blocks(int64_t rows) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, 4 * static_cast<int64_t>(multiprocessors()))));
}

// ---- dispatch
// -----------------------------------------------------------------------------------------------------

/// The vector width and per-lane vector count for rows of n, or {0, 0} where the kernels do not
/// take them.
struct Shape {
  int v, c;
};
Shape row_shape(int64_t n, bool aligned) {
  if (n <= 0) return {0, 0};
  if (aligned && n % 8 == 0 && n <= 1536) return {8, static_cast<int>((n + 255) / 256)};
  if (n <= 1024) {
    const int c = static_cast<int>((n + 31) / 32);
    return {1, c <= 1 ? 1 : c <= 2 ? 2 : c <= 4 ? 4 : c <= 8 ? 8 : c <= 16 ? 16 : 32};
  }
  return {0, 0};
}

/// Calls f.template run<T, V, C>() for the shape's instantiation.
template <typename T, typename F>
cudaError_t with_shape(Shape s, const F& f) {
  if (s.v == 8) {
    switch (s.c) {
      case 1:
        return f.template run<T, 8, 1>();
      case 2:
        return f.template run<T, 8, 2>();
      case 3:
        return f.template run<T, 8, 3>();
      case 4:
        return f.template run<T, 8, 4>();
      case 5:
        return f.template run<T, 8, 5>();
      case 6:
        return f.template run<T, 8, 6>();
      default:
        break;
    }
  } else if (s.v == 1) {
    switch (s.c) {
      case 1:
        return f.template run<T, 1, 1>();
      case 2:
        return f.template run<T, 1, 2>();
      case 4:
        return f.template run<T, 1, 4>();
      case 8:
        return f.template run<T, 1, 8>();
      case 16:
        return f.template run<T, 1, 16>();
      case 32:
        return f.template run<T, 1, 32>();
      default:
        break;
    }
  }
  return cudaErrorInvalidValue;
}

template <typename F>
cudaError_t with_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kBFloat16:
      return f(__nv_bfloat16{});
    case DType::kFloat16:
      return f(__half{});
  }
  return cudaErrorInvalidValue;
}

struct ForwardLaunch {
  const void *y, *res;
  const float *gamma, *beta;
  void *sum, *out;
  uint8_t* keep;
  float *mean, *rstd;
  int64_t rows;
  int n;
  float keep_prob, eps;
  PhiloxArgs rng;
  unsigned blocks;
  cudaStream_t stream;
  template <typename T, int V, int C>
  cudaError_t run() const {
    dropout_add_layer_norm_fwd<T, V, C><<<blocks, kRowThreads, 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(res), gamma, beta, static_cast<T*>(sum),
        static_cast<T*>(out), keep, mean, rstd, rows, n, keep_prob, eps, rng);
    return cudaGetLastError();
  }
};

struct BackwardLaunch {
  const void *d_out, *d_extra, *sum;
  const float *gamma, *mean, *rstd;
  const uint8_t* keep;
  float keep_prob;
  void *d_sum, *d_y;
  float* scratch;
  int64_t rows;
  int n, blocks;
  size_t smem;
  cudaStream_t stream;
  int* launched;  ///< the blocks it ran with: as many as are resident at once, at most `blocks`
  template <typename T, int V, int C>
  cudaError_t run() const {
    if (smem > 48 * 1024) {  // beyond the default limit (rows over 1,024): ask for it
      const cudaError_t e = cudaFuncSetAttribute(dropout_add_layer_norm_bwd<T, V, C>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem));
      if (e != cudaSuccess) return e;
    }
    int per_sm = 1;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dropout_add_layer_norm_bwd<T, V, C>,
                                                  kBwdThreads, smem);
    *launched = std::max(1, std::min(blocks, std::max(1, per_sm) * multiprocessors()));
    dropout_add_layer_norm_bwd<T, V, C>
        <<<static_cast<unsigned>(*launched), kBwdThreads, smem, stream>>>(
            static_cast<const T*>(d_out), static_cast<const T*>(d_extra),
            static_cast<const T*>(sum), gamma, mean, rstd, keep, keep_prob, static_cast<T*>(d_sum),
            static_cast<T*>(d_y), scratch, rows, n);
    return cudaGetLastError();
  }
};

}  // namespace

bool layer_norm_kernels_support(int64_t n, bool aligned) { return row_shape(n, aligned).v != 0; }

cudaError_t launch_dropout_add_layer_norm(const void* y, const void* residual, const float* gamma,
                                          const float* beta, void* sum, void* out, uint8_t* keep,
                                          float* mean, float* rstd, DType dtype, int64_t rows,
                                          int64_t n, float keep_prob, float eps,
                                          const PhiloxArgs& rng, cudaStream_t stream) {
  const bool aligned = aligned16(y) && aligned16(residual) && aligned16(gamma) && aligned16(beta) &&
                       aligned16(sum) && aligned16(out) &&
                       (keep == nullptr || reinterpret_cast<uintptr_t>(keep) % 8 == 0);
  const Shape shape = row_shape(n, aligned);
  if (shape.v == 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((rows + kRowWarps - 1) / kRowWarps, 65535));
  const ForwardLaunch launch{
      y,         residual, gamma, beta,   sum,   out, keep, mean, rstd, rows, static_cast<int>(n),
      keep_prob, eps,      rng,   blocks, stream};
  return with_type(dtype, [&](auto tag) { return with_shape<decltype(tag)>(shape, launch); });
}

int64_t layer_norm_backward_scratch_floats(int64_t rows, int64_t n) {
  return 3 * max_backward_blocks(rows) * n;
}

cudaError_t launch_dropout_add_layer_norm_backward(
    const void* d_out, const void* d_extra, const void* sum, const float* gamma, const float* mean,
    const float* rstd, const uint8_t* keep, float keep_prob, void* d_sum, void* d_y, float* scratch,
    float* col_sums, DType dtype, int64_t rows, int64_t n, cudaStream_t stream) {
  const bool aligned = aligned16(d_out) && aligned16(d_extra) && aligned16(sum) &&
                       aligned16(gamma) && aligned16(d_sum) && aligned16(d_y) &&
                       (keep == nullptr || reinterpret_cast<uintptr_t>(keep) % 8 == 0);
  const Shape shape = row_shape(n, aligned);
  if (shape.v == 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaMemsetAsync(col_sums, 0, 3 * n * sizeof(float), stream);
  const int blocks = max_backward_blocks(rows);
  int launched = blocks;
  const size_t smem = static_cast<size_t>(kBwdWarps) * 3 * static_cast<size_t>(n) * sizeof(float);
  const BackwardLaunch launch{d_out,
                              d_extra,
                              sum,
                              gamma,
                              mean,
                              rstd,
                              keep,
                              keep_prob,
                              d_sum,
                              d_y,
                              scratch,
                              rows,
                              static_cast<int>(n),
                              blocks,
                              smem,
                              stream,
                              &launched};
  const cudaError_t e =
      with_type(dtype, [&](auto tag) { return with_shape<decltype(tag)>(shape, launch); });
  if (e != cudaSuccess) return e;
  return launch_column_sums(scratch, 3, launched, n, col_sums, stream);
}

int64_t gelu_backward_scratch_floats(int64_t rows, int64_t n) { return gelu_tiles(rows) * n; }

cudaError_t launch_gelu_backward_bias(const void* d_act, const void* pre, void* d_pre,
                                      float* scratch, float* bias_grad, DType dtype, int64_t rows,
                                      int64_t n, bool tanh_approx, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (rows == 0) return cudaMemsetAsync(bias_grad, 0, n * sizeof(float), stream);
  const bool vec = n % 8 == 0 && aligned16(d_act) && aligned16(pre) && aligned16(d_pre);
  if (pre == nullptr) d_pre = nullptr;
  const int v = vec ? 8 : 1;
  const int64_t tiles = gelu_tiles(rows);
  if (tiles > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((n + kGeluThreads * v - 1) / (kGeluThreads * v)),
                  static_cast<unsigned>(tiles));
  const cudaError_t e = with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (vec) {
      gelu_backward_bias<T, 8><<<grid, kGeluThreads, 0, stream>>>(
          static_cast<const T*>(d_act), static_cast<const T*>(pre), static_cast<T*>(d_pre), scratch,
          rows, static_cast<int>(n), tanh_approx);
    } else {
      gelu_backward_bias<T, 1><<<grid, kGeluThreads, 0, stream>>>(
          static_cast<const T*>(d_act), static_cast<const T*>(pre), static_cast<T*>(d_pre), scratch,
          rows, static_cast<int>(n), tanh_approx);
    }
    return cudaGetLastError();
  });
  if (e != cudaSuccess) return e;
  return launch_column_sums(scratch, 1, static_cast<int>(tiles), n, bias_grad, stream);
}

cudaError_t launch_geglu(const void* x, void* out, DType dtype, int64_t rows, int64_t m, cudaStream_t stream) {
  if (rows * m == 0) return cudaSuccess;
  const bool vec = m % 8 == 0 && aligned16(x) && aligned16(out);
  return with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t items = rows * m / (vec ? 8 : 1);
    if (vec) {
      geglu_fwd<T, 8><<<elementwise_blocks(items, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), rows, m);
    } else {
      geglu_fwd<T, 1><<<elementwise_blocks(items, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), rows, m);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_geglu_backward(const void* x, const void* d_out, void* d_x, DType dtype, int64_t rows, int64_t m,
                                  cudaStream_t stream) {
  if (rows * m == 0) return cudaSuccess;
  const bool vec = m % 8 == 0 && aligned16(x) && aligned16(d_out) && aligned16(d_x);
  return with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t items = rows * m / (vec ? 8 : 1);
    if (vec) {
      geglu_bwd<T, 8><<<elementwise_blocks(items, 256), 256, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(d_out), static_cast<T*>(d_x), rows, m);
    } else {
      geglu_bwd<T, 1><<<elementwise_blocks(items, 256), 256, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(d_out), static_cast<T*>(d_x), rows, m);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_column_sum(const void* x, float* scratch, float* out, DType dtype, int64_t rows, int64_t n,
                              cudaStream_t stream) {
  return launch_gelu_backward_bias(x, nullptr, nullptr, scratch, out, dtype, rows, n, false, stream);
}

namespace {
/// RMSNorm rows: eight elements a load (n a multiple of 8, aligned) up to 8,192, or one a load up to 1,024.
Shape rms_shape(int64_t n, bool aligned) {
  if (n <= 0) return {0, 0};
  const int v = aligned && n % 8 == 0 ? 8 : 1;
  const int64_t c = (n + kRmsThreads * v - 1) / (kRmsThreads * v);
  if (c > 4) return {0, 0};
  return {v, c <= 1 ? 1 : c <= 2 ? 2 : 4};
}

template <typename T, typename F>
cudaError_t with_rms_shape(Shape s, const F& f) {
  if (s.v == 8) {
    if (s.c == 1) return f.template run<T, 8, 1>();
    if (s.c == 2) return f.template run<T, 8, 2>();
    if (s.c == 4) return f.template run<T, 8, 4>();
  } else if (s.v == 1) {
    if (s.c == 1) return f.template run<T, 1, 1>();
    if (s.c == 2) return f.template run<T, 1, 2>();
    if (s.c == 4) return f.template run<T, 1, 4>();
  }
  return cudaErrorInvalidValue;
}

struct RmsForward {
  const void *y, *res;
  const float* gamma;
  void *sum, *out;
  float* rstd;
  int64_t rows;
  int n;
  float eps;
  unsigned* amax;
  unsigned blocks;
  cudaStream_t stream;
  template <typename T, int V, int C>
  cudaError_t run() const {
    add_rms_norm_fwd<T, V, C><<<blocks, kRmsThreads, 0, stream>>>(static_cast<const T*>(y), static_cast<const T*>(res),
                                                                 gamma, static_cast<T*>(sum), static_cast<T*>(out),
                                                                 rstd, rows, n, eps, amax);
    return cudaGetLastError();
  }
};

struct RmsBackward {
  const void *d_out, *d_extra, *sum;
  const float *gamma, *rstd;
  void* d_sum;
  float* scratch;
  int64_t rows;
  int n;
  unsigned* amax;
  unsigned blocks;
  cudaStream_t stream;
  template <typename T, int V, int C>
  cudaError_t run() const {
    add_rms_norm_bwd<T, V, C><<<blocks, kRmsThreads, 0, stream>>>(
        static_cast<const T*>(d_out), static_cast<const T*>(d_extra), static_cast<const T*>(sum), gamma, rstd,
        static_cast<T*>(d_sum), scratch, rows, n, amax);
    return cudaGetLastError();
  }
};
}  // namespace

bool rms_norm_kernels_support(int64_t n, bool aligned) { return rms_shape(n, aligned).v != 0; }

cudaError_t launch_add_rms_norm(const void* y, const void* residual, const float* gamma, void* sum, void* out,
                                float* rstd, DType dtype, int64_t rows, int64_t n, float eps, cudaStream_t stream,
                                float* amax) {
  const bool aligned = aligned16(y) && aligned16(residual) && aligned16(gamma) && aligned16(sum) && aligned16(out);
  const Shape shape = rms_shape(n, aligned);
  if (shape.v == 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  // With an amax each block ends in one atomicMax: a few blocks an SM looping over the rows, not a block a row.
  const int64_t most = amax != nullptr ? 8 * static_cast<int64_t>(multiprocessors()) : 65535;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(rows, most));
  const RmsForward launch{y,   residual, gamma, sum, out, rstd, rows, static_cast<int>(n), eps,
                          reinterpret_cast<unsigned*>(amax), blocks, stream};
  return with_type(dtype, [&](auto tag) { return with_rms_shape<decltype(tag)>(shape, launch); });
}

int64_t rms_norm_backward_scratch_floats(int64_t rows, int64_t n) { return rms_backward_blocks(rows) * n; }

cudaError_t launch_add_rms_norm_backward(const void* d_out, const void* d_extra, const void* sum, const float* gamma,
                                         const float* rstd, void* d_sum, float* scratch, float* d_gamma, DType dtype,
                                         int64_t rows, int64_t n, cudaStream_t stream, float* amax) {
  const bool aligned = aligned16(d_out) && aligned16(d_extra) && aligned16(sum) && aligned16(gamma) &&
                       aligned16(d_sum) && aligned16(scratch);
  const Shape shape = rms_shape(n, aligned);
  if (shape.v == 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaMemsetAsync(d_gamma, 0, n * sizeof(float), stream);
  const int blocks = rms_backward_blocks(rows);
  const RmsBackward launch{d_out, d_extra, sum, gamma, rstd, d_sum, scratch, rows, static_cast<int>(n),
                           reinterpret_cast<unsigned*>(amax), static_cast<unsigned>(blocks), stream};
  const cudaError_t e = with_type(dtype, [&](auto tag) { return with_rms_shape<decltype(tag)>(shape, launch); });
  if (e != cudaSuccess) return e;
  return launch_column_sums(scratch, 1, blocks, n, d_gamma, stream);
}

}  // namespace gpubench::engine::fused
