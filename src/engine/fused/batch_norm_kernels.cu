#include "fused/batch_norm_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "fused/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::load_v;
using device::multiprocessors;
using device::store_v;

constexpr int kThreads = 256;
constexpr int kVec = 8;           // channels a thread reads at once (16 bytes of bf16/fp16)
constexpr int kMaxLanes = 32;     // channel vectors a block spans (256 channels)

/// How a [rows, c] tensor is cut: a block spans `lanes` channel vectors and kThreads / lanes row lanes, and the rows
/// are split `splits` ways of `rows_per_split` (the grid's y).
struct Cut {
  int lanes, row_lanes;
  int64_t channel_blocks, splits, rows_per_split;
};

Cut cut(int64_t rows, int64_t c) {
  Cut k{};
  const int64_t vecs = c / kVec;
  k.lanes = static_cast<int>(std::min<int64_t>(vecs, kMaxLanes));
  k.row_lanes = kThreads / k.lanes;
  k.channel_blocks = (vecs + k.lanes - 1) / k.lanes;
  const int64_t target = std::max<int64_t>(1, int64_t{multiprocessors()} * 8 / k.channel_blocks);
  const int64_t most = std::max<int64_t>(1, rows / (int64_t{k.row_lanes} * 4));  // at least ~4 rows a thread
  k.splits = std::min<int64_t>({target, most, 65535});
  k.rows_per_split = (rows + k.splits - 1) / k.splits;
  k.splits = (rows + k.rows_per_split - 1) / k.rows_per_split;
  return k;
}

/// Chan's merge of (n, mean, m2) with (nb, mb, m2b).
__device__ __forceinline__ void merge(float& n, float& mean, float& m2, float nb, float mb, float m2b) {
  const float total = n + nb;
  if (nb == 0.0f) return;
  const float d = mb - mean;
  const float f = nb / total;
  mean += d * f;
  m2 += m2b + d * d * n * f;
  n = total;
}

/// Where a thread of a partial-sums block (stats_partial, grad_partial) works: lane tx of the block's `lanes` channel
/// vectors, channel vector v, row lane ty of `row_lanes` (rows r0 + ty, r0 + ty + row_lanes, ... below r1); `active`
/// where both are real, and `at` where its split's sums for v start in the partial arrays.
struct Place {
  int lanes, row_lanes, tx, ty;
  int64_t v, r0, r1, at;
  bool active;
};

__device__ __forceinline__ Place place_of(int64_t rows, int64_t c, int64_t rows_per_split) {
  Place p{};
  const int64_t vecs = c / kVec;
  p.lanes = static_cast<int>(vecs < kMaxLanes ? vecs : kMaxLanes);
  p.row_lanes = kThreads / p.lanes;
  p.tx = static_cast<int>(threadIdx.x) % p.lanes;
  p.ty = static_cast<int>(threadIdx.x) / p.lanes;
  p.v = static_cast<int64_t>(blockIdx.x) * p.lanes + p.tx;
  p.r0 = static_cast<int64_t>(blockIdx.y) * rows_per_split;
  p.r1 = min(rows, p.r0 + rows_per_split);
  p.at = static_cast<int64_t>(blockIdx.y) * c + p.v * kVec;
  p.active = p.ty < p.row_lanes && p.v < vecs;
  return p;
}

/// Per split and channel: the count-weighted mean and the sum of squared deviations of its rows.
template <typename T>
__global__ void __launch_bounds__(kThreads) stats_partial(const T* __restrict__ x, int64_t rows, int64_t c,
                                                          int64_t rows_per_split, float* __restrict__ p_mean,
                                                          float* __restrict__ p_m2) {
  __shared__ float s_n[kThreads];
  __shared__ float s_mean[kThreads * kVec];
  __shared__ float s_m2[kThreads * kVec];
  const Place p = place_of(rows, c, rows_per_split);
  float n = 0.0f, mean[kVec], m2[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) mean[j] = m2[j] = 0.0f;
  if (p.active) {
    for (int64_t r = p.r0 + p.ty; r < p.r1; r += p.row_lanes) {
      float f[kVec];
      load_v<T, kVec>(x, r * c + p.v * kVec, f);
      n += 1.0f;
      const float inv = 1.0f / n;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = f[j] - mean[j];
        mean[j] += d * inv;
        m2[j] += d * (f[j] - mean[j]);
      }
    }
  }
  s_n[threadIdx.x] = n;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    s_mean[threadIdx.x * kVec + j] = mean[j];
    s_m2[threadIdx.x * kVec + j] = m2[j];
  }
  __syncthreads();
  if (p.ty != 0 || !p.active) return;
  for (int t = 1; t < p.row_lanes; ++t) {
    const int o = t * p.lanes + p.tx;
    const float nb = s_n[o];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float nn = n;
      merge(nn, mean[j], m2[j], nb, s_mean[o * kVec + j], s_m2[o * kVec + j]);
      if (j == kVec - 1) n = nn;
    }
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    p_mean[p.at + j] = mean[j];
    p_m2[p.at + j] = m2[j];
  }
}

constexpr int kFinalThreads = 256;  // a warp per channel in the finalising launches

/// Per channel (a warp each): the splits merged into the batch's mean and variance, the saved statistics, the running
/// ones, and the scale and shift the output pass applies.
__global__ void __launch_bounds__(kFinalThreads)
    stats_finalize(const float* __restrict__ p_mean, const float* __restrict__ p_m2, int64_t rows, int64_t c,
                   int64_t splits, int64_t rows_per_split, const float* __restrict__ weight,
                   const float* __restrict__ bias, float* running_mean, float* running_var, float momentum, float eps,
                   float* __restrict__ save_mean, float* __restrict__ save_invstd, float* __restrict__ scale,
                   float* __restrict__ shift) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * (kFinalThreads / 32) + threadIdx.x / 32;
  if (ch >= c) return;  // the whole warp: the shuffles below see every lane
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (int64_t s = lane; s < splits; s += 32) {
    const float ns = static_cast<float>(min(rows_per_split, rows - s * rows_per_split));
    merge(n, mean, m2, ns, p_mean[s * c + ch], p_m2[s * c + ch]);
  }
  for (int off = 16; off > 0; off >>= 1) {
    const float nb = __shfl_down_sync(0xffffffffu, n, off), mb = __shfl_down_sync(0xffffffffu, mean, off),
                m2b = __shfl_down_sync(0xffffffffu, m2, off);
    merge(n, mean, m2, nb, mb, m2b);
  }
  if (lane != 0) return;
  const float var = m2 / n;
  const float invstd = rsqrtf(var + eps);
  save_mean[ch] = mean;
  save_invstd[ch] = invstd;
  if (running_mean != nullptr) running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mean;
  if (running_var != nullptr) {
    const float unbiased = n > 1.0f ? m2 / (n - 1.0f) : var;
    running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unbiased;
  }
  const float w = weight != nullptr ? weight[ch] : 1.0f, b = bias != nullptr ? bias[ch] : 0.0f;
  scale[ch] = w * invstd;
  shift[ch] = b - mean * w * invstd;
}

/// y = relu?(x a + b (+ z)) per channel, eight elements a thread.
template <typename T>
__global__ void __launch_bounds__(kThreads) apply_forward(const T* __restrict__ x, const T* __restrict__ z,
                                                          T* __restrict__ y, int64_t vectors, int64_t vecs_per_row,
                                                          const float* __restrict__ a, const float* __restrict__ b,
                                                          bool relu) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    const int64_t ch = (i % vecs_per_row) * kVec;
    float f[kVec], g[kVec];
    load_v<T, kVec>(x, i * kVec, f);
    if (z != nullptr) load_v<T, kVec>(z, i * kVec, g);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float o = f[j] * a[ch + j] + b[ch + j];
      if (z != nullptr) o += g[j];
      f[j] = relu ? fmaxf(o, 0.0f) : o;
    }
    store_v<T, kVec>(y, i * kVec, f);
  }
}

/// The ReLU's mask: the gradient passes where the output is positive (as threshold_backward on the output).
template <typename T>
__device__ __forceinline__ void masked(float (&g)[kVec], const T* y, int64_t i, bool relu) {
  if (!relu) return;
  float o[kVec];
  load_v<T, kVec>(y, i, o);
#pragma unroll
  for (int j = 0; j < kVec; ++j) g[j] = o[j] > 0.0f ? g[j] : 0.0f;
}

/// Per split and channel: sum g and sum g (x - mean).
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_partial(const T* __restrict__ dy, const T* __restrict__ y,
                                                         const T* __restrict__ x, int64_t rows, int64_t c,
                                                         int64_t rows_per_split, bool relu,
                                                         const float* __restrict__ save_mean,
                                                         float* __restrict__ p_sum, float* __restrict__ p_dot) {
  __shared__ float s_sum[kThreads * kVec];
  __shared__ float s_dot[kThreads * kVec];
  const Place p = place_of(rows, c, rows_per_split);
  float sum[kVec], dot[kVec], mean[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) sum[j] = dot[j] = mean[j] = 0.0f;
  if (p.active) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) mean[j] = save_mean[p.v * kVec + j];
    for (int64_t r = p.r0 + p.ty; r < p.r1; r += p.row_lanes) {
      const int64_t i = r * c + p.v * kVec;
      float g[kVec], f[kVec];
      load_v<T, kVec>(dy, i, g);
      load_v<T, kVec>(x, i, f);
      masked(g, y, i, relu);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        sum[j] += g[j];
        dot[j] += g[j] * (f[j] - mean[j]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    s_sum[threadIdx.x * kVec + j] = sum[j];
    s_dot[threadIdx.x * kVec + j] = dot[j];
  }
  __syncthreads();
  if (p.ty != 0 || !p.active) return;
  for (int t = 1; t < p.row_lanes; ++t) {
    const int o = (t * p.lanes + p.tx) * kVec;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      sum[j] += s_sum[o + j];
      dot[j] += s_dot[o + j];
    }
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    p_sum[p.at + j] = sum[j];
    p_dot[p.at + j] = dot[j];
  }
}

/// Per channel (a warp each): the parameter gradients, and dx = g ca + x cb + cc.
__global__ void __launch_bounds__(kFinalThreads)
    grad_finalize(const float* __restrict__ p_sum, const float* __restrict__ p_dot, int64_t rows, int64_t c,
                  int64_t splits, const float* __restrict__ weight, const float* __restrict__ save_mean,
                  const float* __restrict__ save_invstd, float* __restrict__ grad_weight,
                  float* __restrict__ grad_bias, float* __restrict__ ca, float* __restrict__ cb,
                  float* __restrict__ cc) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * (kFinalThreads / 32) + threadIdx.x / 32;
  if (ch >= c) return;  // the whole warp
  float sum = 0.0f, dot = 0.0f;
  for (int64_t s = lane; s < splits; s += 32) {
    sum += p_sum[s * c + ch];
    dot += p_dot[s * c + ch];
  }
  for (int off = 16; off > 0; off >>= 1) {
    sum += __shfl_down_sync(0xffffffffu, sum, off);
    dot += __shfl_down_sync(0xffffffffu, dot, off);
  }
  if (lane != 0) return;
  const float invstd = save_invstd[ch], mean = save_mean[ch];
  if (grad_weight != nullptr) grad_weight[ch] = dot * invstd;
  if (grad_bias != nullptr) grad_bias[ch] = sum;
  const float inv_n = 1.0f / static_cast<float>(rows);
  const float a = (weight != nullptr ? weight[ch] : 1.0f) * invstd;
  const float k1 = sum * inv_n, k2 = dot * inv_n * invstd * invstd;
  ca[ch] = a;
  cb[ch] = -k2 * a;
  cc[ch] = (mean * k2 - k1) * a;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) apply_backward(const T* __restrict__ dy, const T* __restrict__ y,
                                                           const T* __restrict__ x, T* __restrict__ dx,
                                                           T* __restrict__ dz, int64_t vectors, int64_t vecs_per_row,
                                                           bool relu, const float* __restrict__ ca,
                                                           const float* __restrict__ cb,
                                                           const float* __restrict__ cc) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    const int64_t ch = (i % vecs_per_row) * kVec;
    float g[kVec], f[kVec], o[kVec];
    load_v<T, kVec>(dy, i * kVec, g);
    load_v<T, kVec>(x, i * kVec, f);
    masked(g, y, i * kVec, relu);
    if (dz != nullptr) store_v<T, kVec>(dz, i * kVec, g);
#pragma unroll
    for (int j = 0; j < kVec; ++j) o[j] = g[j] * ca[ch + j] + f[j] * cb[ch + j] + cc[ch + j];
    store_v<T, kVec>(dx, i * kVec, o);
  }
}

unsigned final_blocks(int64_t c) { return static_cast<unsigned>((c + kFinalThreads / 32 - 1) / (kFinalThreads / 32)); }

unsigned elementwise_blocks(int64_t vectors) {
  return static_cast<unsigned>(
      std::min<int64_t>((vectors + kThreads - 1) / kThreads, int64_t{multiprocessors()} * 16));
}

template <typename T>
cudaError_t forward_as(const void* x, const void* z, void* y, int64_t rows, int64_t c, bool relu, const float* weight,
                       const float* bias, float* running_mean, float* running_var, float momentum, float eps,
                       float* save_mean, float* save_invstd, float* ws, cudaStream_t stream) {
  const Cut k = cut(rows, c);
  float *p_mean = ws, *p_m2 = ws + k.splits * c, *scale = ws + 2 * k.splits * c, *shift = scale + c;
  stats_partial<T><<<dim3(static_cast<unsigned>(k.channel_blocks), static_cast<unsigned>(k.splits)), kThreads, 0,
                     stream>>>(static_cast<const T*>(x), rows, c, k.rows_per_split, p_mean, p_m2);
  stats_finalize<<<final_blocks(c), kFinalThreads, 0, stream>>>(
      p_mean, p_m2, rows, c, k.splits, k.rows_per_split, weight, bias, running_mean, running_var, momentum, eps,
      save_mean, save_invstd, scale, shift);
  const int64_t vectors = rows * c / kVec;
  apply_forward<T><<<elementwise_blocks(vectors), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(z), static_cast<T*>(y), vectors, c / kVec, scale, shift, relu);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const void* dy, const void* y, const void* x, void* dx, void* dz, int64_t rows, int64_t c,
                        bool relu, const float* weight, const float* save_mean, const float* save_invstd,
                        float* grad_weight, float* grad_bias, float* ws, cudaStream_t stream) {
  const Cut k = cut(rows, c);
  float *p_sum = ws, *p_dot = ws + k.splits * c, *ca = ws + 2 * k.splits * c, *cb = ca + c, *cc = cb + c;
  grad_partial<T><<<dim3(static_cast<unsigned>(k.channel_blocks), static_cast<unsigned>(k.splits)), kThreads, 0,
                    stream>>>(static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<const T*>(x), rows, c,
                              k.rows_per_split, relu, save_mean, p_sum, p_dot);
  grad_finalize<<<final_blocks(c), kFinalThreads, 0, stream>>>(
      p_sum, p_dot, rows, c, k.splits, weight, save_mean, save_invstd, grad_weight, grad_bias, ca, cb, cc);
  const int64_t vectors = rows * c / kVec;
  apply_backward<T><<<elementwise_blocks(vectors), kThreads, 0, stream>>>(
      static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<const T*>(x), static_cast<T*>(dx),
      static_cast<T*>(dz), vectors, c / kVec, relu, ca, cb, cc);
  return cudaGetLastError();
}

}  // namespace

bool batch_norm_takes(int64_t rows, int64_t c) { return rows >= 1 && c >= kVec && c % kVec == 0; }

int64_t batch_norm_workspace(int64_t rows, int64_t c) { return 2 * cut(rows, c).splits * c + 3 * c; }

cudaError_t launch_batch_norm_forward(const void* x, const void* z, void* y, DType dtype, int64_t rows, int64_t c,
                                      bool relu, const float* weight, const float* bias, float* running_mean,
                                      float* running_var, float momentum, float eps, float* save_mean,
                                      float* save_invstd, float* workspace, cudaStream_t stream) {
  if (!batch_norm_takes(rows, c)) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      return forward_as<__nv_bfloat16>(x, z, y, rows, c, relu, weight, bias, running_mean, running_var, momentum, eps,
                                       save_mean, save_invstd, workspace, stream);
    case DType::kFloat16:
      return forward_as<__half>(x, z, y, rows, c, relu, weight, bias, running_mean, running_var, momentum, eps,
                                save_mean, save_invstd, workspace, stream);
    default:
      return forward_as<float>(x, z, y, rows, c, relu, weight, bias, running_mean, running_var, momentum, eps,
                               save_mean, save_invstd, workspace, stream);
  }
}

cudaError_t launch_batch_norm_backward(const void* dy, const void* y, const void* x, void* dx, void* dz, DType dtype,
                                       int64_t rows, int64_t c, bool relu, const float* weight,
                                       const float* save_mean, const float* save_invstd, float* grad_weight,
                                       float* grad_bias, float* workspace, cudaStream_t stream) {
  if (!batch_norm_takes(rows, c)) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      return backward_as<__nv_bfloat16>(dy, y, x, dx, dz, rows, c, relu, weight, save_mean, save_invstd, grad_weight,
                                        grad_bias, workspace, stream);
    case DType::kFloat16:
      return backward_as<__half>(dy, y, x, dx, dz, rows, c, relu, weight, save_mean, save_invstd, grad_weight,
                                 grad_bias, workspace, stream);
    default:
      return backward_as<float>(dy, y, x, dx, dz, rows, c, relu, weight, save_mean, save_invstd, grad_weight,
                                grad_bias, workspace, stream);
  }
}

}  // namespace gpubench::engine::fused
