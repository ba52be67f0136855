#include "fused/fused_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

#include "fused/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::load;
using device::store;

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

template <typename T>
__global__ void swiglu_forward(const T* gate, const T* up, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = load(gate, i);
    const float silu = g / (1.0f + __expf(-g));
    store(out, i, silu * load(up, i));
  }
}

template <typename T>
__global__ void swiglu_backward(const T* gate, const T* up, const T* d_out, T* d_gate, T* d_up, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = load(gate, i), u = load(up, i), d = load(d_out, i);
    const float sig = 1.0f / (1.0f + __expf(-g));
    const float silu = g * sig;
    store(d_gate, i, d * u * (sig + silu * (1.0f - sig)));
    store(d_up, i, d * silu);
  }
}

// ---- rotary embeddings for q and k -------------------------------------------------------------------------------

template <typename T>
__global__ void rotary(const T* q, const T* k, T* q_out, T* k_out, const T* cos, const T* sin, int64_t tokens,
                       int64_t seq_len, int64_t q_heads, int64_t k_heads, int64_t head_dim, bool inverse) {
  const int64_t half = head_dim / 2;
  const int64_t heads = q_heads + k_heads;
  const int64_t total = tokens * heads * half;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = i % half;
    const int64_t head = (i / half) % heads;
    const int64_t token = i / (half * heads);
    const int64_t pos = token % seq_len;
    const bool is_q = head < q_heads;
    const T* x = is_q ? q + (token * q_heads + head) * head_dim : k + (token * k_heads + head - q_heads) * head_dim;
    T* y = is_q ? q_out + (token * q_heads + head) * head_dim : k_out + (token * k_heads + head - q_heads) * head_dim;
    const float x1 = load(x, d), x2 = load(x, d + half);
    const float c1 = load(cos, pos * head_dim + d), c2 = load(cos, pos * head_dim + d + half);
    const float s1 = load(sin, pos * head_dim + d), s2 = load(sin, pos * head_dim + d + half);
    if (!inverse) {  // y = x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
      store(y, d, x1 * c1 - x2 * s1);
      store(y, d + half, x2 * c2 + x1 * s2);
    } else {  // the transpose of that map: the gradient with respect to x
      store(y, d, x1 * c1 + x2 * s2);
      store(y, d + half, x2 * c2 - x1 * s1);
    }
  }
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
  static cudaError_t run(const void* gate, const void* up, void* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    swiglu_forward<T><<<grid_for(n, 256), 256, 0, stream>>>(static_cast<const T*>(gate), static_cast<const T*>(up),
                                                            static_cast<T*>(out), n);
    return cudaGetLastError();
  }
};

template <typename T>
struct SwigluBackwardLaunch {
  static cudaError_t run(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up, int64_t n,
                         cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    swiglu_backward<T><<<grid_for(n, 256), 256, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<const T*>(d_out), static_cast<T*>(d_gate),
        static_cast<T*>(d_up), n);
    return cudaGetLastError();
  }
};

template <typename T>
struct RotaryLaunch {
  static cudaError_t run(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                         int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads, int64_t head_dim,
                         bool inverse, cudaStream_t stream) {
    const int64_t n = tokens * (q_heads + k_heads) * (head_dim / 2);
    if (n == 0) return cudaSuccess;
    rotary<T><<<grid_for(n, 256), 256, 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                    static_cast<T*>(q_out), static_cast<T*>(k_out),
                                                    static_cast<const T*>(cos), static_cast<const T*>(sin), tokens,
                                                    seq_len, q_heads, k_heads, head_dim, inverse);
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
                                  cudaStream_t stream) {
  return dispatch<SwigluForwardLaunch>(dtype, gate, up, out, n, stream);
}

cudaError_t launch_swiglu_backward(const void* gate, const void* up, const void* d_out, void* d_gate, void* d_up,
                                   DType dtype, int64_t n, cudaStream_t stream) {
  return dispatch<SwigluBackwardLaunch>(dtype, gate, up, d_out, d_gate, d_up, n, stream);
}

cudaError_t launch_rotary(const void* q, const void* k, void* q_out, void* k_out, const void* cos, const void* sin,
                          DType dtype, int64_t tokens, int64_t seq_len, int64_t q_heads, int64_t k_heads,
                          int64_t head_dim, bool inverse, cudaStream_t stream) {
  return dispatch<RotaryLaunch>(dtype, q, k, q_out, k_out, cos, sin, tokens, seq_len, q_heads, k_heads, head_dim,
                                inverse, stream);
}

}  // namespace gpubench::engine::fused
