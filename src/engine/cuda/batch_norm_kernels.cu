#include "cuda/batch_norm_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::load_v;
using device::multiprocessors;
using device::rounded;
using device::store_v;

constexpr int kThreads = 256;
constexpr int kVec = 8;        // channels a thread reads at once (16 bytes of bf16/fp16)
constexpr int kMaxLanes = 32;  // channel vectors a block spans (256 channels)
constexpr int kUnroll = 4;     // rows a thread has in flight

/// How a [rows, c] tensor is cut for one kernel: a block spans `lanes` channel vectors and kThreads
/// / lanes row lanes, and the rows are split `splits` ways of `rows_per_split` (the grid's y) so
/// that the grid is one wave of `blocks_per_sm` (the kernel's occupancy). Each thread keeps its
/// channel vector's constants in registers and walks rows; no thread divides by the channel count.
struct Cut {
  int lanes, row_lanes;
  int64_t channel_blocks, splits, rows_per_split;
};

Cut cut(int64_t rows, int64_t c, int blocks_per_sm) {
  Cut k{};
  const int64_t vecs = c / kVec;
  k.lanes = static_cast<int>(std::min<int64_t>(vecs, kMaxLanes));
  k.row_lanes = kThreads / k.lanes;
  k.channel_blocks = (vecs + k.lanes - 1) / k.lanes;
  const int64_t target =
      std::max<int64_t>(1, int64_t{multiprocessors()} * blocks_per_sm / k.channel_blocks);
  const int64_t most =
      std::max<int64_t>(1, rows / (int64_t{k.row_lanes} * 2 * kUnroll));  // >= 8 rows a thread
  k.splits = std::min<int64_t>({target, most, 65535});
  k.rows_per_split = (rows + k.splits - 1) / k.splits;
  k.splits = (rows + k.rows_per_split - 1) / k.rows_per_split;
  return k;
}

/// Where a thread works: lane tx of the block's `lanes` channel vectors, channel vector v, row lane
/// ty of `row_lanes` (rows r0 + ty, r0 + ty + row_lanes, ... below r1); `active` where both are
/// real.
struct Place {
  int lanes, row_lanes, tx, ty;
  int64_t v, vecs, r0, r1;
  bool active;
};

__device__ __forceinline__ Place place_of(int64_t rows, int64_t c, int64_t rows_per_split) {
  Place p{};
  p.vecs = c / kVec;
  p.lanes = static_cast<int>(p.vecs < kMaxLanes ? p.vecs : kMaxLanes);
  p.row_lanes = kThreads / p.lanes;
  p.tx = static_cast<int>(threadIdx.x) % p.lanes;
  p.ty = static_cast<int>(threadIdx.x) / p.lanes;
  p.v = static_cast<int64_t>(blockIdx.x) * p.lanes + p.tx;
  p.r0 = static_cast<int64_t>(blockIdx.y) * rows_per_split;
  p.r1 = min(rows, p.r0 + rows_per_split);
  p.active = p.ty < p.row_lanes && p.v < p.vecs;
  return p;
}

/// 8 elements as loaded (16 or 32 bytes in registers), converted to fp32 only where used: a thread
/// keeps four rows of two tensors in flight in half the registers fp32 copies would take.
template <typename T>
struct Raw {
  uint4 w[kVec * sizeof(T) / 16];
  __device__ __forceinline__ float operator[](int j) const {
    return device::load(reinterpret_cast<const T*>(w), j);
  }
};

template <typename T>
__device__ __forceinline__ Raw<T> load_raw(const T* __restrict__ p, int64_t i) {
  Raw<T> r;
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(r.w) / 16); ++k)
    r.w[k] = reinterpret_cast<const uint4*>(p + i)[k];
  return r;
}

/// The thread that writes a channel vector's per-channel results (statistics, parameter gradients):
/// one per vector.
__device__ __forceinline__ bool writes_channels(const Place& p) {
  return p.active && blockIdx.y == 0 && p.ty == 0;
}

/// The block's two per-channel sums (a over its row lanes into acc[ch], b into acc[c + ch]) by fp64
/// atomics: every thread of the block calls it, inactive ones with zeros.
__device__ __forceinline__ void block_sums_to(const Place& p, int64_t c, const float (&a)[kVec],
                                              const float (&b)[kVec], double* acc) {
  __shared__ float s[2][kVec][kThreads];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    s[0][j][threadIdx.x] = a[j];
    s[1][j][threadIdx.x] = b[j];
  }
  __syncthreads();
  const int outputs = p.lanes * kVec;
  for (int o = static_cast<int>(threadIdx.x); o < 2 * outputs; o += kThreads) {
    const int which = o / outputs, j = (o % outputs) / p.lanes, tx = o % p.lanes;
    const int64_t v = static_cast<int64_t>(blockIdx.x) * p.lanes + tx;
    if (v >= p.vecs) continue;
    float sum = 0.0f;
    for (int ty = 0; ty < p.row_lanes; ++ty) sum += s[which][j][ty * p.lanes + tx];
    atomicAdd(&acc[which * c + v * kVec + j], static_cast<double>(sum));
  }
}

/// Forward statistics: per channel, sum (x - k) and sum (x - k)^2 with k the channel's value in row
/// 0 (a shift that keeps the sums of squares from cancelling: the mean is within a few deviations
/// of any one value), fp32 per thread over its rows, fp64 across blocks.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    batch_norm_stats(const T* __restrict__ x, int64_t rows, int64_t c, int64_t rows_per_split,
                     double* __restrict__ acc) {
  const Place p = place_of(rows, c, rows_per_split);
  float s1[kVec], s2[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) s1[j] = s2[j] = 0.0f;
  if (p.active) {
    float k[kVec];
    load_v<T, kVec>(x, p.v * kVec, k);
    for (int64_t r = p.r0 + p.ty; r < p.r1; r += int64_t{kUnroll} * p.row_lanes) {
      Raw<T> f[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t ru = r + int64_t{u} * p.row_lanes;
        if (ru < p.r1) f[u] = load_raw(x, ru * c + p.v * kVec);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (r + int64_t{u} * p.row_lanes >= p.r1) break;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const float d = f[u][j] - k[j];
          s1[j] += d;
          s2[j] = fmaf(d, d, s2[j]);
        }
      }
    }
  }
  block_sums_to(p, c, s1, s2, acc);
}

/// y = x a + b (+ z), then the ReLU (NaN passes, as ATen's relu) with one mask byte per 8 elements
/// (bit j: the stored output is positive, which is where threshold_backward passes the gradient).
/// Each thread first turns the sums into its 8 channels' scale and shift; one thread per channel
/// writes the saved and running statistics.
template <typename T>
__global__ void __launch_bounds__(kThreads, 3)
    batch_norm_apply(const T* __restrict__ x, const T* __restrict__ z, T* __restrict__ y,
                     uint8_t* __restrict__ mask, int64_t rows, int64_t c, int64_t rows_per_split,
                     const double* __restrict__ acc, const float* __restrict__ weight,
                     const float* __restrict__ bias, float* running_mean, float* running_var,
                     float momentum, float eps, float* __restrict__ save_mean,
                     float* __restrict__ save_invstd) {
  const Place p = place_of(rows, c, rows_per_split);
  if (!p.active) return;
  // x a + b with b = bias - mean a. For a mean far from zero in units of the deviation this carries fp32 errors
  // of about |mean| a 6e-8 in the output (4e-6 for a mean of 60 and a deviation of 2), far below bf16 and fp16
  // storage rounding; (x - mean) a + bias, as ATen computes it, kept 8 more registers a thread here and in the
  // backward pass and cost 5 % of the fp16 ResNet-50 step on the H200 (2026-12-02, call 3).
  float a[kVec], b[kVec];
  {
    float k[kVec];
    load_v<T, kVec>(x, p.v * kVec, k);
    const double n = static_cast<double>(rows);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int64_t ch = p.v * kVec + j;
      const double m1 = acc[ch] / n;
      const double var = fmax(acc[c + ch] / n - m1 * m1, 0.0);
      const float mean = k[j] + static_cast<float>(m1);
      const float invstd = rsqrtf(static_cast<float>(var) + eps);
      a[j] = (weight != nullptr ? weight[ch] : 1.0f) * invstd;
      b[j] = (bias != nullptr ? bias[ch] : 0.0f) - mean * a[j];
      if (writes_channels(p)) {
        save_mean[ch] = mean;
        save_invstd[ch] = invstd;
        if (running_mean != nullptr)
          running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mean;
        if (running_var != nullptr) {
          const float unbiased = static_cast<float>(rows > 1 ? var * n / (n - 1.0) : var);
          running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unbiased;
        }
      }
    }
  }
  for (int64_t r = p.r0 + p.ty; r < p.r1; r += int64_t{kUnroll} * p.row_lanes) {
    Raw<T> f[kUnroll], g[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t ru = r + int64_t{u} * p.row_lanes;
      if (ru >= p.r1) continue;
      f[u] = load_raw(x, ru * c + p.v * kVec);
      if (z != nullptr) g[u] = load_raw(z, ru * c + p.v * kVec);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t ru = r + int64_t{u} * p.row_lanes;
      if (ru >= p.r1) break;
      unsigned bits = 0;
      float out[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        float o = fmaf(f[u][j], a[j], b[j]);
        if (z != nullptr) o += g[u][j];
        if (mask != nullptr) {
          o = o != o ? o : fmaxf(o, 0.0f);
          bits |= (rounded<T>(o) > 0.0f ? 1u : 0u) << j;
        }
        out[j] = o;
      }
      store_v<T, kVec>(y, ru * c + p.v * kVec, out);
      if (mask != nullptr) mask[ru * p.vecs + p.v] = static_cast<uint8_t>(bits);
    }
  }
}

/// A row's gradient vector as loaded, with the forward's ReLU bits for it (all set where there is
/// no mask).
template <typename T>
struct Grad {
  Raw<T> dy;
  unsigned bits;
  __device__ __forceinline__ float operator[](int j) const {
    return (bits >> j) & 1u ? dy[j] : 0.0f;
  }
};

template <typename T>
__device__ __forceinline__ Grad<T> load_gradient(const T* __restrict__ dy,
                                                 const uint8_t* __restrict__ mask, int64_t r,
                                                 const Place& p, int64_t c) {
  return {load_raw(dy, r * c + p.v * kVec),
          mask != nullptr ? unsigned{mask[r * p.vecs + p.v]} : 0xffu};
}

/// The backward passes' loads: kUnroll rows from r (row_lanes apart, up to the split's end) of the
/// masked gradient and of x, all issued before either is used.
template <typename T>
__device__ __forceinline__ void load_gradient_rows(const T* __restrict__ dy,
                                                   const uint8_t* __restrict__ mask,
                                                   const T* __restrict__ x, int64_t r, const Place& p,
                                                   int64_t c, Grad<T> (&g)[kUnroll],
                                                   Raw<T> (&f)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t ru = r + int64_t{u} * p.row_lanes;
    if (ru >= p.r1) continue;
    g[u] = load_gradient(dy, mask, ru, p, c);
    f[u] = load_raw(x, ru * c + p.v * kVec);
  }
}

/// Backward sums: per channel, sum g and sum g (x - mean), g the masked gradient.
template <typename T>
__global__ void __launch_bounds__(kThreads, 3)
    batch_norm_grad_sums(const T* __restrict__ dy, const uint8_t* __restrict__ mask,
                         const T* __restrict__ x, int64_t rows, int64_t c, int64_t rows_per_split,
                         const float* __restrict__ save_mean, double* __restrict__ acc) {
  const Place p = place_of(rows, c, rows_per_split);
  float sum[kVec], dot[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) sum[j] = dot[j] = 0.0f;
  if (p.active) {
    float mean[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) mean[j] = save_mean[p.v * kVec + j];
    for (int64_t r = p.r0 + p.ty; r < p.r1; r += int64_t{kUnroll} * p.row_lanes) {
      Grad<T> g[kUnroll];
      Raw<T> f[kUnroll];
      load_gradient_rows(dy, mask, x, r, p, c, g, f);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (r + int64_t{u} * p.row_lanes >= p.r1) break;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          sum[j] += g[u][j];
          dot[j] = fmaf(g[u][j], f[u][j] - mean[j], dot[j]);
        }
      }
    }
  }
  block_sums_to(p, c, sum, dot, acc);
}

/// dx = g ca + x cb + cc and dz = g, with ca, cb, cc (and the parameter gradients, one thread per
/// channel) from the sums: dx = weight invstd (g - mean(g) - (x - mean) invstd^2 mean(g (x -
/// mean))).
template <typename T>
__global__ void __launch_bounds__(kThreads, 3)
    batch_norm_grad_apply(const T* __restrict__ dy, const uint8_t* __restrict__ mask,
                          const T* __restrict__ x, T* __restrict__ dx, T* __restrict__ dz,
                          int64_t rows, int64_t c, int64_t rows_per_split,
                          const double* __restrict__ acc, const float* __restrict__ weight,
                          const float* __restrict__ save_mean,
                          const float* __restrict__ save_invstd, float* __restrict__ grad_weight,
                          float* __restrict__ grad_bias) {
  const Place p = place_of(rows, c, rows_per_split);
  if (!p.active) return;
  float ca[kVec], cb[kVec], cc[kVec];
  const float inv_n = 1.0f / static_cast<float>(rows);
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int64_t ch = p.v * kVec + j;
    const float sum = static_cast<float>(acc[ch]), dot = static_cast<float>(acc[c + ch]);
    const float invstd = save_invstd[ch], mean = save_mean[ch];
    const float a = (weight != nullptr ? weight[ch] : 1.0f) * invstd;
    const float k1 = sum * inv_n, k2 = dot * inv_n * invstd * invstd;
    ca[j] = a;
    cb[j] = -k2 * a;
    cc[j] = (mean * k2 - k1) * a;
    if (writes_channels(p)) {
      if (grad_weight != nullptr) grad_weight[ch] = dot * invstd;
      if (grad_bias != nullptr) grad_bias[ch] = sum;
    }
  }
  for (int64_t r = p.r0 + p.ty; r < p.r1; r += int64_t{kUnroll} * p.row_lanes) {
    Grad<T> g[kUnroll];
    Raw<T> f[kUnroll];
    load_gradient_rows(dy, mask, x, r, p, c, g, f);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t ru = r + int64_t{u} * p.row_lanes;
      if (ru >= p.r1) break;
      float gv[kVec], out[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        gv[j] = g[u][j];
        out[j] = fmaf(gv[j], ca[j], fmaf(f[u][j], cb[j], cc[j]));
      }
      if (dz != nullptr) store_v<T, kVec>(dz, ru * c + p.v * kVec, gv);
      store_v<T, kVec>(dx, ru * c + p.v * kVec, out);
    }
  }
}

/// A kernel's blocks resident on one SM (asked once per process).
template <auto Kernel>
int resident_blocks() {
  static const int blocks = [] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, Kernel, kThreads, 0) != cudaSuccess)
      b = 2;
    return std::max(b, 1);
  }();
  return blocks;
}

/// The launch of one of the four kernels: a grid of one wave, and its rows per split.
template <auto Kernel>
struct Launch {
  Cut k;
  explicit Launch(int64_t rows, int64_t c) : k(cut(rows, c, resident_blocks<Kernel>())) {}
  dim3 grid() const {
    return {static_cast<unsigned>(k.channel_blocks), static_cast<unsigned>(k.splits)};
  }
};

template <typename T>
cudaError_t forward_as(const void* x, const void* z, void* y, uint8_t* mask, int64_t rows,
                       int64_t c, const float* weight, const float* bias, float* running_mean,
                       float* running_var, float momentum, float eps, float* save_mean,
                       float* save_invstd, double* acc, cudaStream_t stream) {
  if (const cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double) * 2 * c, stream);
      e != cudaSuccess)
    return e;
  const Launch<batch_norm_stats<T>> sums(rows, c);
  batch_norm_stats<T><<<sums.grid(), kThreads, 0, stream>>>(static_cast<const T*>(x), rows, c,
                                                            sums.k.rows_per_split, acc);
  const Launch<batch_norm_apply<T>> apply(rows, c);
  batch_norm_apply<T><<<apply.grid(), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(z), static_cast<T*>(y), mask, rows, c,
      apply.k.rows_per_split, acc, weight, bias, running_mean, running_var, momentum, eps,
      save_mean, save_invstd);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const void* dy, const uint8_t* mask, const void* x, void* dx, void* dz,
                        int64_t rows, int64_t c, const float* weight, const float* save_mean,
                        const float* save_invstd, float* grad_weight, float* grad_bias, double* acc,
                        cudaStream_t stream) {
  if (const cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double) * 2 * c, stream);
      e != cudaSuccess)
    return e;
  const Launch<batch_norm_grad_sums<T>> sums(rows, c);
  batch_norm_grad_sums<T><<<sums.grid(), kThreads, 0, stream>>>(
      static_cast<const T*>(dy), mask, static_cast<const T*>(x), rows, c, sums.k.rows_per_split,
      save_mean, acc);
  const Launch<batch_norm_grad_apply<T>> apply(rows, c);
  batch_norm_grad_apply<T><<<apply.grid(), kThreads, 0, stream>>>(
      static_cast<const T*>(dy), mask, static_cast<const T*>(x), static_cast<T*>(dx),
      static_cast<T*>(dz), rows, c, apply.k.rows_per_split, acc, weight, save_mean, save_invstd,
      grad_weight, grad_bias);
  return cudaGetLastError();
}

// ---- max pooling
// --------------------------------------------------------------------------------------------------

/// One output vector (8 channels of one output position) a thread: the window's largest value per
/// channel, the first in scan order, a NaN taking the place (ATen's rule), and its position in the
/// window as a byte.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    max_pool_forward(const T* __restrict__ x, T* __restrict__ y, uint8_t* __restrict__ where,
                     PoolShape s) {
  const int64_t vecs = s.c / kVec, total = s.n * s.oh * s.ow * vecs;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t v = i % vecs, ow = (i / vecs) % s.ow, oh = (i / (vecs * s.ow)) % s.oh,
                n = i / (vecs * s.ow * s.oh);
  float m[kVec];
  unsigned pos[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    m[j] = -INFINITY;
    pos[j] = 0;
  }
  bool first = true;
  for (int kh = 0; kh < s.k; ++kh) {
    const int64_t ih = oh * s.stride - s.pad + kh;
    if (ih < 0 || ih >= s.h) continue;
    for (int kw = 0; kw < s.k; ++kw) {
      const int64_t iw = ow * s.stride - s.pad + kw;
      if (iw < 0 || iw >= s.w) continue;
      float f[kVec];
      load_v<T, kVec>(x, ((n * s.h + ih) * s.w + iw) * s.c + v * kVec, f);
      const unsigned here = static_cast<unsigned>(kh * s.k + kw);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if (first || f[j] > m[j] || f[j] != f[j]) {
          m[j] = f[j];
          pos[j] = here;
        }
      }
      first = false;
    }
  }
  store_v<T, kVec>(y, i * kVec, m);
  uint2 packed;
  packed.x = pos[0] | pos[1] << 8 | pos[2] << 16 | pos[3] << 24;
  packed.y = pos[4] | pos[5] << 8 | pos[6] << 16 | pos[7] << 24;
  reinterpret_cast<uint2*>(where)[i] = packed;
}

/// One input vector a thread: the gradients of the windows whose maximum it was, summed in fp32 in
/// ATen's order (window rows, then columns); no atomics.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    max_pool_backward(const T* __restrict__ dy, const uint8_t* __restrict__ where,
                      T* __restrict__ dx, PoolShape s) {
  const int64_t vecs = s.c / kVec, total = s.n * s.h * s.w * vecs;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t v = i % vecs, iw = (i / vecs) % s.w, ih = (i / (vecs * s.w)) % s.h,
                n = i / (vecs * s.w * s.h);
  // windows oh with oh * stride - pad <= ih <= oh * stride - pad + k - 1
  const int64_t lo_h = ih + s.pad - s.k + 1 <= 0 ? 0 : (ih + s.pad - s.k + s.stride) / s.stride;
  const int64_t hi_h = min(s.oh - 1, (ih + s.pad) / s.stride);
  const int64_t lo_w = iw + s.pad - s.k + 1 <= 0 ? 0 : (iw + s.pad - s.k + s.stride) / s.stride;
  const int64_t hi_w = min(s.ow - 1, (iw + s.pad) / s.stride);
  float g[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) g[j] = 0.0f;
  for (int64_t oh = lo_h; oh <= hi_h; ++oh) {
    for (int64_t ow = lo_w; ow <= hi_w; ++ow) {
      const unsigned here = static_cast<unsigned>((ih - (oh * s.stride - s.pad)) * s.k +
                                                  (iw - (ow * s.stride - s.pad)));
      const int64_t o = ((n * s.oh + oh) * s.ow + ow) * vecs + v;
      const uint2 packed = reinterpret_cast<const uint2*>(where)[o];
      const unsigned pos[kVec] = {
          packed.x & 255u, packed.x >> 8 & 255u, packed.x >> 16 & 255u, packed.x >> 24,
          packed.y & 255u, packed.y >> 8 & 255u, packed.y >> 16 & 255u, packed.y >> 24};
      bool any = false;
#pragma unroll
      for (int j = 0; j < kVec; ++j) any |= pos[j] == here;
      if (!any) continue;
      float d[kVec];
      load_v<T, kVec>(dy, o * kVec, d);
#pragma unroll
      for (int j = 0; j < kVec; ++j) g[j] += pos[j] == here ? d[j] : 0.0f;
    }
  }
  store_v<T, kVec>(dx, i * kVec, g);
}

unsigned blocks_for(int64_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

}  // namespace

bool batch_norm_takes(int64_t rows, int64_t c) { return rows >= 1 && c >= kVec && c % kVec == 0; }

int64_t batch_norm_workspace(int64_t c) { return 2 * c; }

cudaError_t launch_batch_norm_forward(const void* x, const void* z, void* y, uint8_t* mask,
                                      DType dtype, int64_t rows, int64_t c, const float* weight,
                                      const float* bias, float* running_mean, float* running_var,
                                      float momentum, float eps, float* save_mean,
                                      float* save_invstd, double* workspace, cudaStream_t stream) {
  if (!batch_norm_takes(rows, c)) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      return forward_as<__nv_bfloat16>(x, z, y, mask, rows, c, weight, bias, running_mean,
                                       running_var, momentum, eps, save_mean, save_invstd,
                                       workspace, stream);
    case DType::kFloat16:
      return forward_as<__half>(x, z, y, mask, rows, c, weight, bias, running_mean, running_var,
                                momentum, eps, save_mean, save_invstd, workspace, stream);
    default:
      return forward_as<float>(x, z, y, mask, rows, c, weight, bias, running_mean, running_var,
                               momentum, eps, save_mean, save_invstd, workspace, stream);
  }
}

cudaError_t launch_batch_norm_backward(const void* dy, const uint8_t* mask, const void* x, void* dx,
                                       void* dz, DType dtype, int64_t rows, int64_t c,
                                       const float* weight, const float* save_mean,
                                       const float* save_invstd, float* grad_weight,
                                       float* grad_bias, double* workspace, cudaStream_t stream) {
  if (!batch_norm_takes(rows, c)) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      return backward_as<__nv_bfloat16>(dy, mask, x, dx, dz, rows, c, weight, save_mean,
                                        save_invstd, grad_weight, grad_bias, workspace, stream);
    case DType::kFloat16:
      return backward_as<__half>(dy, mask, x, dx, dz, rows, c, weight, save_mean, save_invstd,
                                 grad_weight, grad_bias, workspace, stream);
    default:
      return backward_as<float>(dy, mask, x, dx, dz, rows, c, weight, save_mean, save_invstd,
                                grad_weight, grad_bias, workspace, stream);
  }
}

bool max_pool_takes(const PoolShape& s) {
  return s.c >= kVec && s.c % kVec == 0 && s.k >= 1 && s.k * s.k <= 256 && s.stride >= 1 &&
         s.pad >= 0 && 2 * s.pad <= s.k && s.oh >= 1 && s.ow >= 1;
}

cudaError_t launch_max_pool_forward(const void* x, void* y, uint8_t* where, DType dtype,
                                    const PoolShape& s, cudaStream_t stream) {
  if (!max_pool_takes(s)) return cudaErrorInvalidValue;
  const unsigned blocks = blocks_for(s.n * s.oh * s.ow * (s.c / kVec));
  switch (dtype) {
    case DType::kBFloat16:
      max_pool_forward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), where, s);
      break;
    case DType::kFloat16:
      max_pool_forward<__half><<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                                static_cast<__half*>(y), where, s);
      break;
    default:
      max_pool_forward<float><<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x),
                                                               static_cast<float*>(y), where, s);
  }
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(const void* dy, const uint8_t* where, void* dx, DType dtype,
                                     const PoolShape& s, cudaStream_t stream) {
  if (!max_pool_takes(s)) return cudaErrorInvalidValue;
  const unsigned blocks = blocks_for(s.n * s.h * s.w * (s.c / kVec));
  switch (dtype) {
    case DType::kBFloat16:
      max_pool_backward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(dy), where, static_cast<__nv_bfloat16*>(dx), s);
      break;
    case DType::kFloat16:
      max_pool_backward<__half><<<blocks, kThreads, 0, stream>>>(
          static_cast<const __half*>(dy), where, static_cast<__half*>(dx), s);
      break;
    default:
      max_pool_backward<float><<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(dy),
                                                                where, static_cast<float*>(dx), s);
  }
  return cudaGetLastError();
}

}  // namespace gpubench::engine::fused
