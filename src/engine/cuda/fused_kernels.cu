#include "cuda/fused_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

#include "cuda/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::aligned16;
using device::block_amax;
using device::max_stored;
using device::load;
using device::load_v;
using device::store;
using device::store_v;

// ---- softmax cross-entropy, forward and gradient -----------------------------------------------------------------

constexpr int kXentThreads = 1024;

/// (max, sum of exp(x - max)) pairs combined as the online softmax does.
__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  const float mx = fmaxf(m, m2);
  s = s * __expf(m - mx) + s2 * __expf(m2 - mx);
  m = mx;
}

template <typename T>
__global__ void __launch_bounds__(kXentThreads) softmax_cross_entropy(T* logits, int64_t ld, int64_t vocab,
                                                                      const int64_t* targets, int64_t ignore_index,
                                                                      const float* inv_count, float* loss_rows) {
  const int64_t row = blockIdx.x;
  T* x = logits + row * ld;
  const int64_t target = targets[row];
  __shared__ float sm[32], ss[32];
  __shared__ float lse_shared;
  if (target == ignore_index || target < 0 || target >= vocab) {
    for (int64_t j = threadIdx.x; j < ld; j += blockDim.x) store(x, j, 0.0f);
    if (threadIdx.x == 0) loss_rows[row] = 0.0f;
    return;
  }
  // Pass 1: the row's max and sum of exponentials, online, then across the block.
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) combine(m, s, load(x, j), 1.0f);
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_down_sync(0xffffffffu, m, off), s2 = __shfl_down_sync(0xffffffffu, s, off);
    combine(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) / 32;
    m = lane < warps ? sm[lane] : -INFINITY;
    s = lane < warps ? ss[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) {
      const float m2 = __shfl_down_sync(0xffffffffu, m, off), s2 = __shfl_down_sync(0xffffffffu, s, off);
      combine(m, s, m2, s2);
    }
    if (lane == 0) {
      const float lse = m + logf(s);
      lse_shared = lse;
      loss_rows[row] = lse - load(x, target);  // read before pass 2 overwrites the row (ordered by the barrier)
    }
  }
  __syncthreads();
  const float lse = lse_shared, scale = inv_count[0];
  // Pass 2: the gradient, in place; the padding columns are zero.
  for (int64_t j = threadIdx.x; j < ld; j += blockDim.x) {
    float g = 0.0f;
    if (j < vocab) g = (__expf(load(x, j) - lse) - (j == target ? 1.0f : 0.0f)) * scale;
    store(x, j, g);
  }
}

// ---- SwiGLU ------------------------------------------------------------------------------------------------------

/// silu(g) * u and its two partial derivatives' products with d: the one formula each pass applies per element.
__device__ __forceinline__ float swiglu_value(float g, float u) { return g / (1.0f + __expf(-g)) * u; }
__device__ __forceinline__ void swiglu_grads(float g, float u, float d, float& d_gate, float& d_up) {
  const float sig = 1.0f / (1.0f + __expf(-g));
  const float silu = g * sig;
  d_gate = d * u * (sig + silu * (1.0f - sig));
  d_up = d * silu;
}

/// `vectorised`: every pointer 16-byte aligned, so eight elements move per access (the tail beyond a multiple of
/// eight one at a time). With `amax` non-null, the largest |out| as stored is atomicMax-ed into it (FP8's scaling
/// reads it instead of another pass over out).
template <typename T>
__global__ void swiglu_forward(const T* gate, const T* up, T* out, int64_t n, bool vectorised, unsigned* amax) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  unsigned m = 0;
  int64_t done = 0;
  if (vectorised) {
    const int64_t vectors = n / 8;
    for (int64_t i = first; i < vectors; i += stride) {
      float g[8], u[8], o[8];
      load_v<T, 8>(gate, i * 8, g);
      load_v<T, 8>(up, i * 8, u);
      for (int j = 0; j < 8; ++j) {
        o[j] = swiglu_value(g[j], u[j]);
        max_stored<T>(m, o[j]);
      }
      store_v<T, 8>(out, i * 8, o);
    }
    done = vectors * 8;
  }
  for (int64_t i = done + first; i < n; i += stride) {
    const float o = swiglu_value(load(gate, i), load(up, i));
    store(out, i, o);
    max_stored<T>(m, o);
  }
  if (amax != nullptr) block_amax(m, amax);
}

template <typename T>
__global__ void swiglu_backward(const T* gate, const T* up, const T* d_out, T* d_gate, T* d_up, int64_t n,
                                bool vectorised, unsigned* amax_gate, unsigned* amax_up) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  unsigned mg = 0, mu = 0;
  int64_t done = 0;
  if (vectorised) {
    const int64_t vectors = n / 8;
    for (int64_t i = first; i < vectors; i += stride) {
      float g[8], u[8], d[8], dg[8], du[8];
      load_v<T, 8>(gate, i * 8, g);
      load_v<T, 8>(up, i * 8, u);
      load_v<T, 8>(d_out, i * 8, d);
      for (int j = 0; j < 8; ++j) {
        swiglu_grads(g[j], u[j], d[j], dg[j], du[j]);
        max_stored<T>(mg, dg[j]);
        max_stored<T>(mu, du[j]);
      }
      store_v<T, 8>(d_gate, i * 8, dg);
      store_v<T, 8>(d_up, i * 8, du);
    }
    done = vectors * 8;
  }
  for (int64_t i = done + first; i < n; i += stride) {
    float dg, du;
    swiglu_grads(load(gate, i), load(up, i), load(d_out, i), dg, du);
    store(d_gate, i, dg);
    store(d_up, i, du);
    max_stored<T>(mg, dg);
    max_stored<T>(mu, du);
  }
  if (amax_gate != nullptr) block_amax(mg, amax_gate);
  if (amax_up != nullptr) block_amax(mu, amax_up);
}

// ---- rotary embeddings for q and k -------------------------------------------------------------------------------

/// One element pair (d, d + half) of a head: x * cos + rotate_half(x) * sin, or with `inverse` the transpose of that
/// map (the gradient with respect to x).
__device__ __forceinline__ void rotate_pair(float x1, float x2, float c1, float c2, float s1, float s2, bool inverse,
                                            float& y1, float& y2) {
  if (!inverse) {  // rotate_half(x) = (-x2, x1)
    y1 = x1 * c1 - x2 * s1;
    y2 = x2 * c2 + x1 * s2;
  } else {
    y1 = x1 * c1 + x2 * s2;
    y2 = x2 * c2 - x1 * s1;
  }
}

/// V consecutive pairs a thread: V = 8 moves 16-byte words (half a multiple of 8, every pointer 16-byte aligned),
/// V = 1 single elements. Items run over (token, head, d / V), d fastest, so a warp reads whole heads. With
/// amax_q / amax_k non-null, the largest |q_out| and |k_out| as stored are atomicMax-ed into them (FP8's scaling of
/// the gradients that reach q_proj and k_proj reads them instead of another pass).
template <typename T, int V>
__global__ void rotary(const T* __restrict__ q, const T* __restrict__ k, T* __restrict__ q_out, T* __restrict__ k_out,
                       const T* __restrict__ cos, const T* __restrict__ sin, int64_t tokens, int64_t seq_len,
                       int64_t q_heads, int64_t k_heads, int64_t head_dim, bool inverse, unsigned* amax_q,
                       unsigned* amax_k) {
  const int64_t half = head_dim / 2, vectors = half / V;
  const int64_t heads = q_heads + k_heads;
  const int64_t total = tokens * heads * vectors;
  unsigned mq = 0, mk = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = (i % vectors) * V;
    const int64_t head = (i / vectors) % heads;
    const int64_t token = i / (vectors * heads);
    const int64_t pos = token % seq_len;
    const bool is_q = head < q_heads;
    const int64_t at = is_q ? (token * q_heads + head) * head_dim : (token * k_heads + head - q_heads) * head_dim;
    const T* x = is_q ? q : k;
    T* y = is_q ? q_out : k_out;
    float x1[V], x2[V], c1[V], c2[V], s1[V], s2[V], y1[V], y2[V];
    load_v<T, V>(x, at + d, x1);
    load_v<T, V>(x, at + d + half, x2);
    load_v<T, V>(cos, pos * head_dim + d, c1);
    load_v<T, V>(cos, pos * head_dim + d + half, c2);
    load_v<T, V>(sin, pos * head_dim + d, s1);
    load_v<T, V>(sin, pos * head_dim + d + half, s2);
    unsigned m = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      rotate_pair(x1[j], x2[j], c1[j], c2[j], s1[j], s2[j], inverse, y1[j], y2[j]);
      max_stored<T>(m, y1[j]);
      max_stored<T>(m, y2[j]);
    }
    store_v<T, V>(y, at + d, y1);
    store_v<T, V>(y, at + d + half, y2);
    if (is_q) {
      mq = max(mq, m);
    } else {
      mk = max(mk, m);
    }
  }
  if (amax_q != nullptr) block_amax(mq, amax_q);
  if (amax_k != nullptr) block_amax(mk, amax_k);
}

/// A grid for an elementwise kernel over n items: enough blocks to fill the device, each thread looping.
dim3 grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return dim3(static_cast<unsigned>(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8));
}

template <template <typename> class Launch, typename... Args>
cudaError_t dispatch(DType dtype, Args&&... args) {
  switch (dtype) {
    case DType::kFloat32: return Launch<float>::run(args...);
    case DType::kBFloat16: return Launch<__nv_bfloat16>::run(args...);
    case DType::kFloat16: return Launch<__half>::run(args...);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
struct XentLaunch {
  static cudaError_t run(void* logits, int64_t rows, int64_t ld, int64_t vocab, const int64_t* targets,
                         int64_t ignore_index, const float* inv_count, float* loss_rows, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    softmax_cross_entropy<T><<<static_cast<unsigned>(rows), kXentThreads, 0, stream>>>(
        static_cast<T*>(logits), ld, vocab, targets, ignore_index, inv_count, loss_rows);
    return cudaGetLastError();
  }
};

template <typename T>
struct SwigluForwardLaunch {
  static cudaError_t run(const void* gate, const void* up, void* out, int64_t n, float* amax, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const bool vectorised = aligned16(gate) && aligned16(up) && aligned16(out);
    swiglu_forward<T><<<grid_for(vectorised ? (n + 7) / 8 : n, 256), 256, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<T*>(out), n, vectorised,
        reinterpret_cast<unsigned*>(amax));
    return cudaGetLastError();
  }
};

template <typename T>
struct SwigluBackwardLaunch {
  static cudaError_t run(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up, int64_t n,
                         float* amax_gate, float* amax_up, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const bool vectorised =
        aligned16(gate) && aligned16(up) && aligned16(d_out) && aligned16(d_gate) && aligned16(d_up);
    swiglu_backward<T><<<grid_for(vectorised ? (n + 7) / 8 : n, 256), 256, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<const T*>(d_out), static_cast<T*>(d_gate),
        static_cast<T*>(d_up), n, vectorised, reinterpret_cast<unsigned*>(amax_gate),
        reinterpret_cast<unsigned*>(amax_up));
    return cudaGetLastError();
  }
};

template <typename T>
struct RotaryLaunch {
  static cudaError_t run(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                         int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads, int64_t head_dim,
                         bool inverse, float* amax_q, float* amax_k, cudaStream_t stream) {
    const int64_t n = tokens * (q_heads + k_heads) * (head_dim / 2);
    if (n == 0) return cudaSuccess;
    const bool vectorised = (head_dim / 2) % 8 == 0 && aligned16(q) && aligned16(k) && aligned16(q_out) &&
                            aligned16(k_out) && aligned16(cos) && aligned16(sin);
    auto* aq = reinterpret_cast<unsigned*>(amax_q);
    auto* ak = reinterpret_cast<unsigned*>(amax_k);
    const auto* qt = static_cast<const T*>(q);
    const auto* kt = static_cast<const T*>(k);
    const auto* ct = static_cast<const T*>(cos);
    const auto* st = static_cast<const T*>(sin);
    auto* qo = static_cast<T*>(q_out);
    auto* ko = static_cast<T*>(k_out);
    if (vectorised) {
      rotary<T, 8><<<grid_for(n / 8, 256), 256, 0, stream>>>(qt, kt, qo, ko, ct, st, tokens, seq_len, q_heads, k_heads,
                                                             head_dim, inverse, aq, ak);
    } else {
      rotary<T, 1><<<grid_for(n, 256), 256, 0, stream>>>(qt, kt, qo, ko, ct, st, tokens, seq_len, q_heads, k_heads,
                                                         head_dim, inverse, aq, ak);
    }
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t launch_softmax_cross_entropy(void* logits, DType dtype, int64_t rows, int64_t ld, int64_t vocab,
                                         const int64_t* targets, int64_t ignore_index, const float* inv_count,
                                         float* loss_rows, cudaStream_t stream) {
  return dispatch<XentLaunch>(dtype, logits, rows, ld, vocab, targets, ignore_index, inv_count, loss_rows, stream);
}

cudaError_t launch_swiglu_forward(const void* gate, const void* up, void* out, DType dtype, int64_t n,
                                  cudaStream_t stream, float* amax) {
  return dispatch<SwigluForwardLaunch>(dtype, gate, up, out, n, amax, stream);
}

cudaError_t launch_swiglu_backward(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up,
                                   DType dtype, int64_t n, cudaStream_t stream, float* amax_gate, float* amax_up) {
  return dispatch<SwigluBackwardLaunch>(dtype, gate, up, d_out, d_gate, d_up, n, amax_gate, amax_up, stream);
}

cudaError_t launch_rotary(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                          DType dtype, int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads,
                          int64_t head_dim, bool inverse, cudaStream_t stream, float* amax_q, float* amax_k) {
  return dispatch<RotaryLaunch>(dtype, q, k, q_out, k_out, cos, sin, tokens, seq_len, q_heads, k_heads, head_dim,
                                inverse, amax_q, amax_k, stream);
}

}  // namespace gpubench::engine::fused
