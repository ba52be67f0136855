#include "cuda/fp8_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>

#include "cuda/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::abs_bits;
using device::aligned;
using device::aligned16;
using device::block_amax;
using device::load;
using device::load_v;
using device::multiprocessors;

// ---- amax ---------------------------------------------------------------------------------------------------------

constexpr int kAmaxThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kAmaxThreads) amax_kernel(const T* __restrict__ x, int64_t n, bool vectorised,
                                                            unsigned* out) {
  unsigned m = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vectorised) {
    const int64_t vectors = n / 8;
    int64_t i = first;
    // four 16-byte loads in flight a thread, then the rest one at a time
    for (; i + 3 * stride < vectors; i += 4 * stride) {
      float v[4][8];
#pragma unroll
      for (int u = 0; u < 4; ++u) load_v<T, 8>(x, (i + u * stride) * 8, v[u]);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        for (float f : v[u]) m = max(m, abs_bits(f));
      }
    }
    for (; i < vectors; i += stride) {
      float v[8];
      load_v<T, 8>(x, i * 8, v);
      for (float f : v) m = max(m, abs_bits(f));
    }
    done = vectors * 8;
  }
  for (int64_t i = done + first; i < n; i += stride) m = max(m, abs_bits(load(x, i)));
  block_amax(m, out);
}

// ---- the scaled saturating cast, with its transpose ----------------------------------------------------------------

constexpr int kTile = 64;           // a block casts a 64 x 64 tile
constexpr int kCastThreads = 256;   // each thread 4 chunks of 4 elements
constexpr int kChunksPerRow = kTile / 4;

__device__ __forceinline__ float scale_from(const float* amax, float fmax) {
  const float a = *amax;
  return (a > 0.0f && isfinite(a)) ? fmax / a : 1.0f;
}

__device__ __forceinline__ uint8_t to_fp8(float v, bool e5m2) {
  return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
}

/// Four consecutive elements as fp32: one 8-byte load (16 for fp32) where `vector`, else one at a time.
template <typename T>
__device__ __forceinline__ void load4(const T* p, bool vector, float v[4]) {
  if (vector) {
    if constexpr (sizeof(T) == 4) {
      const float4 a = *reinterpret_cast<const float4*>(p);
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    } else {
      const uint2 raw = *reinterpret_cast<const uint2*>(p);
      const T* h = reinterpret_cast<const T*>(&raw);
      for (int j = 0; j < 4; ++j) v[j] = load(h, j);
    }
  } else {
    for (int j = 0; j < 4; ++j) v[j] = load(p, j);
  }
}

__device__ __forceinline__ uint32_t pack(const uint8_t b[4]) {
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

/// One 64 x 64 tile of x: cast, written row-major to `out` and through shared memory transposed to `out_t`.
/// `whole`: x's rows and both outputs' rows start at multiples of 4 elements (cols and rows multiples of 4, the
/// pointers aligned), so whole 4-element chunks move in single loads and stores.
template <typename T>
__global__ void __launch_bounds__(kCastThreads)
    cast_transpose(const T* x, int64_t rows, int64_t cols, bool e5m2, float fmax, const float* amax, bool whole,
                   uint8_t* out, uint8_t* out_t, float* inv_scale) {
  __shared__ uint32_t tile_words[kTile * (kTile + 4) / 4];
  auto* tile = reinterpret_cast<uint8_t*>(tile_words);  // [kTile][kTile + 4] bytes
  const float s = scale_from(amax, fmax);
  if (inv_scale != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *inv_scale = 1.0f / s;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile, c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int cc = (threadIdx.x % kChunksPerRow) * 4;
  for (int i = 0; i < kTile / (kCastThreads / kChunksPerRow); ++i) {
    const int r = static_cast<int>(threadIdx.x / kChunksPerRow) + i * (kCastThreads / kChunksPerRow);
    const int64_t gr = r0 + r, gc = c0 + cc;
    uint8_t b[4] = {0, 0, 0, 0};
    if (gr < rows) {
      const T* src = x + gr * cols + gc;
      if (gc + 3 < cols) {
        float v[4];
        load4(src, whole, v);
        for (int j = 0; j < 4; ++j) b[j] = to_fp8(v[j] * s, e5m2);
      } else {
        for (int j = 0; j < 4 && gc + j < cols; ++j) b[j] = to_fp8(load(src, j) * s, e5m2);
      }
      if (out != nullptr) {
        uint8_t* dst = out + gr * cols + gc;
        if (whole && gc + 3 < cols) {
          *reinterpret_cast<uint32_t*>(dst) = pack(b);
        } else {
          for (int j = 0; j < 4 && gc + j < cols; ++j) dst[j] = b[j];
        }
      }
    }
    *reinterpret_cast<uint32_t*>(tile + r * (kTile + 4) + cc) = pack(b);
  }
  if (out_t == nullptr) return;  // uniform over the block: no barrier is skipped by some threads only
  __syncthreads();
  const int rr = (threadIdx.x % kChunksPerRow) * 4;  // four consecutive rows of x: a 4-byte run of out_t's row
  for (int i = 0; i < kTile / (kCastThreads / kChunksPerRow); ++i) {
    const int c = static_cast<int>(threadIdx.x / kChunksPerRow) + i * (kCastThreads / kChunksPerRow);
    const int64_t gc = c0 + c, gr = r0 + rr;
    if (gc >= cols || gr >= rows) continue;
    uint8_t b[4];
    for (int j = 0; j < 4; ++j) b[j] = tile[(rr + j) * (kTile + 4) + c];
    uint8_t* dst = out_t + gc * rows + gr;
    if (whole && gr + 3 < rows) {
      *reinterpret_cast<uint32_t*>(dst) = pack(b);
    } else {
      for (int j = 0; j < 4 && gr + j < rows; ++j) dst[j] = b[j];
    }
  }
}

// ---- the same cast for whole 8 x 8 blocks: 64 x 128 tiles, eight elements an access -------------------------------
// Rows and columns multiples of 8 and x 16-byte aligned (the shapes training hands it): each thread loads four
// 16-byte runs (all in flight before any is used), writes eight FP8 bytes a store to `out`, and for the transpose
// reads an 8 x 4 block of the tile's bytes and writes four 8-byte runs of out_t's rows. The tile's words are
// XOR-swizzled by row group, so those reads (8 rows apart, 4 words wide a warp) hit 32 distinct banks.

constexpr int kWideRows = 64, kWideCols = 128;
constexpr int kWideChunks = kWideCols / 8;                              // 8-element chunks a tile row
constexpr int kWidePerThread = kWideRows * kWideChunks / kCastThreads;  // 4
constexpr int kWideWords = kWideCols / 4;                               // 32 words of bytes a tile row

/// The tile word holding bytes [4 w, 4 w + 4) of tile row r.
__device__ __forceinline__ int tile_word(int r, int w) { return r * kWideWords + (w ^ ((r >> 3) << 2)); }

/// One 64 x 128 tile of x at rows [r0, r0 + 64) and columns [c0, c0 + 128), cast at scale s; `tile` the block's
/// shared words, 8-byte aligned (uint2 stores; a kernel with other shared variables must ask for it: call 1 of
/// results/2026-12-02-h200-fp8-graph found the many-tensor kernel's tile 4 bytes off). Called by every thread of
/// the block (it holds a barrier where out_t is asked for).
template <typename T>
__device__ __forceinline__ void cast_tile_wide(const T* __restrict__ x, int64_t rows, int64_t cols, bool e5m2, float s,
                                               int64_t r0, int64_t c0, uint8_t* __restrict__ out,
                                               uint8_t* __restrict__ out_t, uint32_t* tile) {
  float v[kWidePerThread][8];
#pragma unroll
  for (int i = 0; i < kWidePerThread; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + i * kCastThreads;
    const int64_t gr = r0 + idx / kWideChunks, gc = c0 + (idx % kWideChunks) * 8;
    if (gr < rows && gc < cols) load_v<T, 8>(x, gr * cols + gc, v[i]);
  }
#pragma unroll
  for (int i = 0; i < kWidePerThread; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + i * kCastThreads;
    const int r = idx / kWideChunks, chunk = idx % kWideChunks;
    const int64_t gr = r0 + r, gc = c0 + chunk * 8;
    uint2 b = make_uint2(0u, 0u);
    if (gr < rows && gc < cols) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        b.x |= uint32_t{to_fp8(v[i][j] * s, e5m2)} << (8 * j);
        b.y |= uint32_t{to_fp8(v[i][j + 4] * s, e5m2)} << (8 * j);
      }
      if (out != nullptr) *reinterpret_cast<uint2*>(out + gr * cols + gc) = b;
    }
    *reinterpret_cast<uint2*>(&tile[tile_word(r, chunk * 2)]) = b;  // the pair stays adjacent: the XOR keeps bit 0
  }
  if (out_t == nullptr) return;  // uniform over the block: no barrier is skipped by some threads only
  __syncthreads();
  const int rg = static_cast<int>(threadIdx.x) % 8, cg = static_cast<int>(threadIdx.x) / 8;  // 8 x 32 blocks of 8 x 4
  const int64_t gr = r0 + rg * 8, gc = c0 + cg * 4;
  if (gr >= rows || gc >= cols) return;
  uint32_t w[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) w[j] = tile[tile_word(rg * 8 + j, cg)];
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // column gc + k of x: byte k of each of the eight rows' words
    uint2 b = make_uint2(0u, 0u);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      b.x |= ((w[j] >> (8 * k)) & 0xffu) << (8 * j);
      b.y |= ((w[j + 4] >> (8 * k)) & 0xffu) << (8 * j);
    }
    *reinterpret_cast<uint2*>(out_t + (gc + k) * rows + gr) = b;
  }
}

template <typename T>
__global__ void __launch_bounds__(kCastThreads)
    cast_transpose_wide(const T* __restrict__ x, int64_t rows, int64_t cols, bool e5m2, float fmax,
                        const float* __restrict__ amax, uint8_t* __restrict__ out, uint8_t* __restrict__ out_t,
                        float* __restrict__ inv_scale) {
  __shared__ __align__(16) uint32_t tile[kWideRows * kWideWords];  // 8 KiB
  const float s = scale_from(amax, fmax);
  if (inv_scale != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *inv_scale = 1.0f / s;
  cast_tile_wide(x, rows, cols, e5m2, s, static_cast<int64_t>(blockIdx.y) * kWideRows,
                 static_cast<int64_t>(blockIdx.x) * kWideCols, out, out_t, tile);
}

// ---- many tensors in two launches: the amaxes, then the casts ----------------------------------------------------
// A block finds its tensor by a binary search over the jobs' first blocks (thread 0, shared with the block).

constexpr int64_t kManyAmaxChunk = int64_t{kAmaxThreads} * 8 * 4;  // elements a block of the amax launch reads

template <int64_t Fp8CastJob::*First>
__device__ __forceinline__ int job_of_block(const Fp8CastJob* jobs, int n) {
  __shared__ int found;
  if (threadIdx.x == 0) {
    int lo = 0, hi = n - 1;  // the last job whose first block is at or before this one
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (jobs[mid].*First <= static_cast<int64_t>(blockIdx.x)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    found = lo;
  }
  __syncthreads();
  return found;
}

template <typename T>
__global__ void __launch_bounds__(kAmaxThreads) amax_many_kernel(const Fp8CastJob* __restrict__ jobs, int n) {
  const Fp8CastJob& j = jobs[job_of_block<&Fp8CastJob::amax_first>(jobs, n)];
  const auto* x = static_cast<const T*>(j.x);
  const int64_t numel = j.rows * j.cols;  // a multiple of 8: rows and cols are
  const int64_t begin = (static_cast<int64_t>(blockIdx.x) - j.amax_first) * kManyAmaxChunk;
  const int64_t end = min(numel, begin + kManyAmaxChunk);
  unsigned m = 0;
  float v[4][8];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int64_t i = begin + (static_cast<int64_t>(u) * kAmaxThreads + threadIdx.x) * 8;
    if (i < end) load_v<T, 8>(x, i, v[u]);
  }
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int64_t i = begin + (static_cast<int64_t>(u) * kAmaxThreads + threadIdx.x) * 8;
    if (i < end) {
      for (float f : v[u]) m = max(m, abs_bits(f));
    }
  }
  block_amax(m, reinterpret_cast<unsigned*>(j.amax));
}

template <typename T>
__global__ void __launch_bounds__(kCastThreads) cast_many_kernel(const Fp8CastJob* __restrict__ jobs, int n, bool e5m2,
                                                                 float fmax) {
  __shared__ __align__(16) uint32_t tile[kWideRows * kWideWords];
  const Fp8CastJob& j = jobs[job_of_block<&Fp8CastJob::tile_first>(jobs, n)];
  const int64_t t = static_cast<int64_t>(blockIdx.x) - j.tile_first;
  const int64_t tiles_x = (j.cols + kWideCols - 1) / kWideCols;
  const float s = scale_from(j.amax, fmax);
  if (j.inv_scale != nullptr && t == 0 && threadIdx.x == 0) *j.inv_scale = 1.0f / s;
  cast_tile_wide(static_cast<const T*>(j.x), j.rows, j.cols, e5m2, s, (t / tiles_x) * kWideRows,
                 (t % tiles_x) * kWideCols, static_cast<uint8_t*>(j.out), static_cast<uint8_t*>(j.out_t), tile);
}

template <typename T>
cudaError_t many_as(const Fp8CastJob* jobs, int n, int64_t amax_blocks, int64_t tiles, bool e5m2,
                    cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (amax_blocks > 0x7fffffff || tiles > 0x7fffffff) return cudaErrorInvalidConfiguration;
  amax_many_kernel<T><<<static_cast<unsigned>(amax_blocks), kAmaxThreads, 0, stream>>>(jobs, n);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  cast_many_kernel<T><<<static_cast<unsigned>(tiles), kCastThreads, 0, stream>>>(jobs, n, e5m2,
                                                                               e5m2 ? 57344.0f : 448.0f);
  return cudaGetLastError();
}

template <typename T>
cudaError_t amax_as(const void* x, int64_t n, float* amax, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const auto* p = static_cast<const T*>(x);
  const bool vectorised = aligned16(p);
  const int64_t work = vectorised ? (n + 7) / 8 : n;
  const int64_t blocks = std::min<int64_t>((work + kAmaxThreads - 1) / kAmaxThreads, multiprocessors() * 8);
  amax_kernel<T><<<static_cast<unsigned>(blocks), kAmaxThreads, 0, stream>>>(p, n, vectorised,
                                                                              reinterpret_cast<unsigned*>(amax));
  return cudaGetLastError();
}

template <typename T>
cudaError_t cast_as(const void* x, int64_t rows, int64_t cols, bool e5m2, const float* amax, void* out, void* out_t,
                    float* inv_scale, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const auto* p = static_cast<const T*>(x);
  const float fmax = e5m2 ? 57344.0f : 448.0f;
  if (rows % 8 == 0 && cols % 8 == 0 && aligned16(p) && aligned(out, 8) && aligned(out_t, 8)) {
    const dim3 grid(static_cast<unsigned>((cols + kWideCols - 1) / kWideCols),
                    static_cast<unsigned>((rows + kWideRows - 1) / kWideRows));
    if (grid.y > 65535u) return cudaErrorInvalidConfiguration;
    cast_transpose_wide<T><<<grid, kCastThreads, 0, stream>>>(
        p, rows, cols, e5m2, fmax, amax, static_cast<uint8_t*>(out), static_cast<uint8_t*>(out_t), inv_scale);
    return cudaGetLastError();
  }
  const bool whole = cols % 4 == 0 && rows % 4 == 0 && aligned(p, 4 * sizeof(T)) && aligned(out, 4) &&
                     aligned(out_t, 4);
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
  if (grid.y > 65535u) return cudaErrorInvalidConfiguration;
  cast_transpose<T><<<grid, kCastThreads, 0, stream>>>(p, rows, cols, e5m2, fmax, amax, whole,
                                                       static_cast<uint8_t*>(out), static_cast<uint8_t*>(out_t),
                                                       inv_scale);
  return cudaGetLastError();
}

}  // namespace

int64_t fp8_many_amax_blocks(int64_t numel) { return (numel + kManyAmaxChunk - 1) / kManyAmaxChunk; }

int64_t fp8_many_tiles(int64_t rows, int64_t cols) {
  return ((rows + kWideRows - 1) / kWideRows) * ((cols + kWideCols - 1) / kWideCols);
}

cudaError_t launch_fp8_amax_cast_many(const Fp8CastJob* jobs, int n, int64_t amax_blocks, int64_t tiles, DType dtype,
                                      bool e5m2, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBFloat16: return many_as<__nv_bfloat16>(jobs, n, amax_blocks, tiles, e5m2, stream);
    case DType::kFloat16: return many_as<__half>(jobs, n, amax_blocks, tiles, e5m2, stream);
    default: return many_as<float>(jobs, n, amax_blocks, tiles, e5m2, stream);
  }
}

cudaError_t launch_fp8_amax(const void* x, DType dtype, int64_t n, float* amax, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBFloat16: return amax_as<__nv_bfloat16>(x, n, amax, stream);
    case DType::kFloat16: return amax_as<__half>(x, n, amax, stream);
    default: return amax_as<float>(x, n, amax, stream);
  }
}

cudaError_t launch_fp8_cast(const void* x, DType dtype, int64_t rows, int64_t cols, bool e5m2, const float* amax,
                            void* out, void* out_t, float* inv_scale, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBFloat16: return cast_as<__nv_bfloat16>(x, rows, cols, e5m2, amax, out, out_t, inv_scale, stream);
    case DType::kFloat16: return cast_as<__half>(x, rows, cols, e5m2, amax, out, out_t, inv_scale, stream);
    default: return cast_as<float>(x, rows, cols, e5m2, amax, out, out_t, inv_scale, stream);
  }
}

}  // namespace gpubench::engine::fused
