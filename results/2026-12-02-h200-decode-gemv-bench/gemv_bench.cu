// One-token decode GEMV designs on sm_90, alone: how fast each reads a weight matrix of TinyLlama's and GPT-2's
// shapes (bf16, y = W x, one row of x). Why: the committed streamed GEMV (a ring of shared-memory slots fed by
// cp.async.bulk) streams even TinyLlama's 131 MB LM head at about half the copy rate, and a decode step is those
// products back to back. Each design is timed over 50 launches back to back, the weights rotated through copies that
// together exceed L2 many times over, with and without programmatic dependent launch (PDL), against the same
// bytes read by a plain streaming kernel, cudaMemcpy and cuBLAS' GEMV. Standalone on purpose: nvcc, CUDA runtime and
// cuBLAS only, so that it builds in seconds on a fresh machine.
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a gemv_bench.cu -lcublas -o gemv_bench && ./gemv_bench
//
// Designs:
//   tma  R rows per bulk copy (MODE: see tma_gemv), S KB of dynamic shared memory a block, one block per SM, NW warps,
//        (slot mod 8) as committed in src/engine/fused/decode_kernels.cu; "nocompute": the ring alone (a warp waits
//        for its slot and refills it).
//   ldg  W as one flat stream per warp: each warp owns a contiguous run of rows (or, "flat", of 512-byte steps, with
//        rows shared between two warps combined through fp32 atomics and a per-row counter), U 16-byte loads a lane in
//        flight and the next U issued before the current are used; x in shared memory; the first U issued before
//        griddepcontrol.wait.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (x);                                                                            \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

using bf16 = __nv_bfloat16;

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b, float acc) {
  float fa[8], fb[8];
  unpack8(a, fa);
  unpack8(b, fb);
#pragma unroll
  for (int e = 0; e < 8; ++e) acc = fmaf(fa[e], fb[e], acc);
  return acc;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ void grid_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void grid_release() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// ---- x into shared memory (all threads), then a barrier ----
__device__ __forceinline__ void load_x(const bf16* x, uint4* xs, int chunks) {
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) xs[c] = __ldcg(reinterpret_cast<const uint4*>(x) + c);
  __syncthreads();
}

// ---- tma: the committed design, plain, one row of x ----
__device__ __forceinline__ uint32_t saddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void bar_init(uint32_t b) { asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory"); }
__device__ __forceinline__ void bar_expect(uint32_t b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk(uint32_t dst, const void* src, uint32_t bytes, uint32_t b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(b)
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t b, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(b), "r"(parity)
                 : "memory");
  } while (done == 0);
}

constexpr int kMaxSlots = 64;
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// MODE 0: as committed (one accumulator a row: a chain of k/32 dependent FMAs a lane); 1: no arithmetic (the ring
// alone); 2: eight accumulators a row (one per element of a 16-byte chunk); 3: the unit's rows from the slot into
// registers first (where a lane's share fits in 16 chunks), the slot refilled, then the arithmetic of 2.
// NW warps a block; slot s belongs to warp s mod NW.
template <int R, int MODE, int NW>
__global__ void __launch_bounds__(NW * 32) tma_gemv(const bf16* __restrict__ W, const bf16* __restrict__ x, bf16* y,
                                                    int n, int k, int smem_bytes) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int chunks = k / 8;
  const uint32_t row_bytes = k * 2, unit_bytes = R * row_bytes;
  const uint32_t bars = saddr(smem);
  uint4* xs = reinterpret_cast<uint4*>(smem + kMaxSlots * 8);
  unsigned char* ring = smem + kMaxSlots * 8 + ((k * 2 + 127) / 128) * 128;
  const int ring_slots = static_cast<int>((smem_bytes - (ring - smem)) / unit_bytes);
  const int units = (n + R - 1) / R;
  const int u0 = static_cast<int>(static_cast<int64_t>(units) * blockIdx.x / gridDim.x);
  const int u1 = static_cast<int>(static_cast<int64_t>(units) * (blockIdx.x + 1) / gridDim.x);
  const int count = u1 - u0;
  const int slots = imin(imin(ring_slots, kMaxSlots), count);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  auto request = [&](int slot, int u) {
    const int rows = imin(R, n - u * R);
    bar_expect(bars + 8 * slot, rows * row_bytes);
    bulk(saddr(ring + slot * unit_bytes), W + static_cast<int64_t>(u) * R * k, rows * row_bytes, bars + 8 * slot);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; ++s) bar_init(bars + 8 * s);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int s = 0; s < slots; ++s) request(s, u0 + s);
  }
  grid_wait();
  grid_release();
  load_x(x, xs, chunks);
  constexpr int kRegs = 16;
  const bool in_regs = MODE == 3 && R * chunks <= 32 * kRegs;
  for (int i = 0; i < count; ++i) {
    const int slot = i % slots;
    if (slot % NW != warp) continue;
    bar_wait(bars + 8 * slot, (i / slots) & 1);
    const uint4* wv = reinterpret_cast<const uint4*>(ring + slot * unit_bytes);
    const int u = u0 + i, rows = imin(R, n - u * R);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    uint4 held[kRegs];
    if (MODE == 3 && in_regs) {
#pragma unroll
      for (int j = 0; j < kRegs; ++j) {
        const int idx = lane + 32 * j;  // (row, chunk) = (idx / chunks, idx % chunks)
        if (idx < R * chunks) held[j] = wv[idx];
      }
    }
    if (MODE == 0) {
#pragma unroll 4
      for (int c = lane; c < chunks; c += 32) {
        const uint4 xv = xs[c];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (r < rows) acc[r] = dot8(wv[r * chunks + c], xv, acc[r]);
        }
      }
    } else if (MODE == 1) {
      acc[0] = __uint_as_float(wv[lane].x);
    } else if (!(MODE == 3 && in_regs)) {
      float a8[R][8];
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int e = 0; e < 8; ++e) a8[r][e] = 0.0f;
      }
#pragma unroll 4
      for (int c = lane; c < chunks; c += 32) {
        float xf[8];
        unpack8(xs[c], xf);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (r < rows) {
            float wf[8];
            unpack8(wv[r * chunks + c], wf);
#pragma unroll
            for (int e = 0; e < 8; ++e) a8[r][e] = fmaf(wf[e], xf[e], a8[r][e]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        acc[r] = ((a8[r][0] + a8[r][1]) + (a8[r][2] + a8[r][3])) + ((a8[r][4] + a8[r][5]) + (a8[r][6] + a8[r][7]));
      }
    }
    __syncwarp();
    if (lane == 0 && i + slots < count) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      request(slot, u + slots);
    }
    if (MODE == 3 && in_regs) {
      float a8[R][8];
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int e = 0; e < 8; ++e) a8[r][e] = 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kRegs; ++j) {
        const int idx = lane + 32 * j, r = idx / chunks, c = idx % chunks;
        if (idx < R * chunks) {
          float xf[8], wf[8];
          unpack8(xs[c], xf);
          unpack8(held[j], wf);
#pragma unroll
          for (int rr = 0; rr < R; ++rr) {
            if (rr == r) {
#pragma unroll
              for (int e = 0; e < 8; ++e) a8[rr][e] = fmaf(wf[e], xf[e], a8[rr][e]);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        acc[r] = ((a8[r][0] + a8[r][1]) + (a8[r][2] + a8[r][3])) + ((a8[r][4] + a8[r][5]) + (a8[r][6] + a8[r][7]));
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      acc[r] = warp_sum(acc[r]);
      if (lane == 0 && r < rows) y[u * R + r] = __float2bfloat16(acc[r]);
    }
  }
}

// ---- ldg: each warp streams a contiguous run of W as 512-byte steps (32 lanes x 16 bytes) ----
// FLAT: runs are split by steps (balanced to the step), rows crossing a warp boundary are added in fp32 scratch
// (atomicAdd) and the last of their warps (a counter per row) writes them; otherwise runs are whole rows.
template <int U, bool FLAT, bool SPLIT = false>
__global__ void __launch_bounds__(256) ldg_gemv(const bf16* __restrict__ W, const bf16* __restrict__ x, bf16* y,
                                                 float* scratch, int* counters, int n, int k) {
  extern __shared__ __align__(16) uint4 xs[];
  const int spr = k / 256;  // steps a row
  const int64_t total_warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int64_t w = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const int64_t S = static_cast<int64_t>(n) * spr;
  int64_t s0, s1;
  if (FLAT) {
    s0 = S * w / total_warps;
    s1 = S * (w + 1) / total_warps;
  } else {
    s0 = n * w / total_warps * spr;
    s1 = n * (w + 1) / total_warps * spr;
  }
  const uint4* src = reinterpret_cast<const uint4*>(W) + s0 * 32 + lane;
  const int64_t steps = s1 - s0;
  uint4 buf[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (u < steps) buf[u] = ld_stream(src + u * 32);
  }
  grid_wait();
  grid_release();
  load_x(x, xs, k / 8);
  float acc = 0.0f, a8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t row = s0 / spr;
  int in_row = static_cast<int>(s0 % spr);  // the step's index within its row
  bool row_whole = in_row == 0;             // this warp holds the row from its first step
  for (int64_t b = 0; b < steps; b += U) {
    uint4 nxt[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (b + U + u < steps) nxt[u] = ld_stream(src + (b + U + u) * 32);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (b + u < steps) {
        if (SPLIT) {
          float wf[8], xf[8];
          unpack8(buf[u], wf);
          unpack8(xs[in_row * 32 + lane], xf);
#pragma unroll
          for (int e = 0; e < 8; ++e) a8[e] = fmaf(wf[e], xf[e], a8[e]);
        } else {
          acc = dot8(buf[u], xs[in_row * 32 + lane], acc);
        }
        const bool row_end = ++in_row == spr;
        const bool run_end = b + u + 1 == steps;
        if (row_end || run_end) {
          if (SPLIT) {
            acc = ((a8[0] + a8[1]) + (a8[2] + a8[3])) + ((a8[4] + a8[5]) + (a8[6] + a8[7]));
#pragma unroll
            for (int e = 0; e < 8; ++e) a8[e] = 0.0f;
          }
          acc = warp_sum(acc);
          if (!FLAT || (row_whole && row_end)) {
            if (lane == 0) y[row] = __float2bfloat16(acc);
          } else if (lane == 0) {
            // Warps sharing the row: those whose runs meet it. owner(s) = ceil((s + 1) T / S) - 1.
            const int64_t first = ((row * spr + 1) * total_warps + S - 1) / S - 1;
            const int64_t last = (((row + 1) * spr) * total_warps + S - 1) / S - 1;
            atomicAdd(scratch + row, acc);
            __threadfence();
            if (atomicAdd(counters + row, 1) == static_cast<int>(last - first)) {
              __threadfence();
              y[row] = __float2bfloat16(__ldcg(scratch + row));
              scratch[row] = 0.0f;
              counters[row] = 0;
            }
          }
          acc = 0.0f;
          if (row_end) {
            ++row;
            in_row = 0;
            row_whole = true;
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) buf[u] = nxt[u];
  }
}

// ---- read: the same bytes summed (the streaming ceiling of plain loads) ----
__global__ void __launch_bounds__(256) read_all(const uint4* __restrict__ p, int64_t count, unsigned* sink) {
  unsigned v = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    uint4 a = ld_stream(p + i), b = ld_stream(p + i + stride), c = ld_stream(p + i + 2 * stride),
          d = ld_stream(p + i + 3 * stride);
    v ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < count; i += stride) v ^= ld_stream(p + i).x;
  if (v == 0x12345678u) *sink = v;
}

struct Shape {
  const char* name;
  int n, k;
};

int sms = 0;
cudaStream_t stream;

template <typename... P, typename... A>
void launch(void (*kernel)(P...), int grid, int block, size_t smem, bool pdl, A... args) {
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(grid);
  c.blockDim = dim3(block);
  c.dynamicSmemBytes = smem;
  c.stream = stream;
  cudaLaunchAttribute a[1];
  a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a[0].val.programmaticStreamSerializationAllowed = 1;
  if (pdl) {
    c.attrs = a;
    c.numAttrs = 1;
  }
  CHECK(cudaLaunchKernelEx(&c, kernel, static_cast<P>(args)...));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  sms = prop.multiProcessorCount;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas;
  cublasCreate(&blas);
  cublasSetStream(blas, stream);
  std::printf("# %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);

  const int64_t pool_bytes = int64_t{1600} << 20;
  bf16* pool;
  CHECK(cudaMalloc(&pool, pool_bytes));
  {  // random bf16 in [-1, 1)
    std::vector<uint16_t> h(pool_bytes / 2 / 64);
    uint32_t s = 12345;
    for (auto& v : h) {
      s = s * 1664525u + 1013904223u;
      const float f = static_cast<float>(s >> 8) / 8388608.0f - 1.0f;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v = static_cast<uint16_t>(bits >> 16);
    }
    for (int i = 0; i < 64; ++i) CHECK(cudaMemcpy(pool + i * h.size(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  }
  bf16 *x, *y, *yref, *dst;
  float* scratch;
  int* counters;
  unsigned* sink;
  CHECK(cudaMalloc(&x, 16 << 10));
  CHECK(cudaMalloc(&y, 256 << 10));
  CHECK(cudaMalloc(&yref, 256 << 10));
  CHECK(cudaMalloc(&dst, int64_t{200} << 20));
  CHECK(cudaMalloc(&scratch, 256 << 10));
  CHECK(cudaMalloc(&counters, 256 << 10));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(scratch, 0, 256 << 10));
  CHECK(cudaMemset(counters, 0, 256 << 10));
  CHECK(cudaMemcpy(x, pool + 777, 16 << 10, cudaMemcpyDeviceToDevice));

  const Shape shapes[] = {{"llama.qkv", 2560, 2048}, {"llama.o", 2048, 2048},    {"llama.gate_up", 11264, 2048},
                          {"llama.down", 2048, 5632}, {"llama.lm_head", 32000, 2048}, {"gpt2.qkv", 2304, 768},
                          {"gpt2.o", 768, 768},       {"gpt2.fc1", 3072, 768},   {"gpt2.fc2", 768, 3072},
                          {"gpt2.lm_head", 50257, 768}};
  auto raise = [](auto kernel) { CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024)); };
  raise(tma_gemv<1, 0, 8>);
  raise(tma_gemv<1, 2, 8>);
  raise(tma_gemv<1, 3, 8>);
  raise(tma_gemv<1, 2, 16>);
  raise(tma_gemv<1, 3, 16>);
  raise(tma_gemv<2, 2, 8>);
  raise(tma_gemv<2, 3, 8>);
  raise(tma_gemv<2, 2, 16>);
  raise(tma_gemv<4, 1, 8>);
  raise(tma_gemv<4, 2, 8>);
  raise(tma_gemv<4, 2, 16>);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::printf("%-14s %-28s %4s %9s %9s %8s\n", "shape", "design", "pdl", "us", "GB/s", "maxerr");
  for (const Shape& sh : shapes) {
    const int64_t bytes = int64_t{sh.n} * sh.k * 2;
    const int64_t stride = (bytes + 4095) / 4096 * 4096 / 2;  // elements between copies
    const int copies = static_cast<int>(std::min<int64_t>(64, std::max<int64_t>(2, (int64_t{700} << 20) / bytes)));
    auto weights = [&](int i) { return pool + (i % copies) * stride; };
    // the reference: cuBLAS on copy 0
    auto blas_gemv = [&](const bf16* w, bf16* out) {
      const float one = 1.0f, zero = 0.0f;
      cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, sh.n, 1, sh.k, &one, w, CUDA_R_16BF, sh.k, x, CUDA_R_16BF, sh.k,
                   &zero, out, CUDA_R_16BF, sh.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    blas_gemv(weights(0), yref);
    CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> ref(sh.n);
    CHECK(cudaMemcpy(ref.data(), yref, sh.n * 2, cudaMemcpyDeviceToHost));
    auto to_f = [](uint16_t b) {
      uint32_t u = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    };
    auto measure = [&](const std::string& name, bool pdl, bool check, auto&& run) {
      if (check) {
        CHECK(cudaMemset(y, 0, sh.n * 2));
        run(0);
        CHECK(cudaStreamSynchronize(stream));
      }
      double err = 0.0;
      if (check) {
        std::vector<uint16_t> got(sh.n);
        CHECK(cudaMemcpy(got.data(), y, sh.n * 2, cudaMemcpyDeviceToHost));
        for (int i = 0; i < sh.n; ++i) err = std::max(err, static_cast<double>(std::fabs(to_f(got[i]) - to_f(ref[i]))));
      }
      for (int i = 1; i < 6; ++i) run(i);
      CHECK(cudaEventRecord(e0, stream));
      for (int i = 0; i < reps; ++i) run(i + 6);
      CHECK(cudaEventRecord(e1, stream));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      const double us = 1000.0 * ms / reps;
      std::printf("%-14s %-28s %4s %9.2f %9.1f %8s\n", sh.name, name.c_str(), pdl ? "pdl" : "-", us, bytes / us / 1e3,
                  check ? std::to_string(err).substr(0, 8).c_str() : "");
    };
    measure("memcpy (read+write)/2", false, false, [&](int i) {
      CHECK(cudaMemcpyAsync(dst, weights(i), std::min<int64_t>(bytes, int64_t{200} << 20), cudaMemcpyDeviceToDevice, stream));
    });
    measure("read (plain loads)", false, false, [&](int i) {
      launch(read_all, sms * 4, 256, 0, false, reinterpret_cast<const uint4*>(weights(i)), bytes / 16, sink);
    });
    measure("cublas", false, true, [&](int i) { blas_gemv(weights(i), y); });
    for (bool pdl : {false, true}) {
      auto tma = [&](const char* name, auto kernel, int warps, int smem) {
        measure(std::string(name) + " " + std::to_string(smem / 1024) + "KB", pdl, std::strstr(name, "nocompute") == nullptr,
                [&](int i) { launch(kernel, sms, warps * 32, smem, pdl, weights(i), x, y, sh.n, sh.k, smem); });
      };
      const int S1 = 110 * 1024, S2 = 220 * 1024;
      tma("tma R1 chain w8", tma_gemv<1, 0, 8>, 8, S1);
      tma("tma R1 split w8", tma_gemv<1, 2, 8>, 8, S1);
      tma("tma R1 regs w8", tma_gemv<1, 3, 8>, 8, S1);
      tma("tma R1 split w16", tma_gemv<1, 2, 16>, 16, S1);
      tma("tma R1 split w16", tma_gemv<1, 2, 16>, 16, S2);
      tma("tma R1 regs w16", tma_gemv<1, 3, 16>, 16, S2);
      tma("tma R2 split w8", tma_gemv<2, 2, 8>, 8, S1);
      tma("tma R2 split w8", tma_gemv<2, 2, 8>, 8, S2);
      tma("tma R2 regs w8", tma_gemv<2, 3, 8>, 8, S2);
      tma("tma R2 split w16", tma_gemv<2, 2, 16>, 16, S2);
      tma("tma R4 split w8", tma_gemv<4, 2, 8>, 8, S2);
      tma("tma R4 split w16", tma_gemv<4, 2, 16>, 16, S2);
      tma("tma R4 nocompute w8", tma_gemv<4, 1, 8>, 8, S2);
      const size_t xbytes = sh.k * 2;
      for (int per_sm : {2, 4}) {
        const int grid = sms * per_sm;
        const std::string g = " x" + std::to_string(per_sm);
        measure("ldg rows U4 chain" + g, pdl, true, [&](int i) {
          launch(ldg_gemv<4, false>, grid, 256, xbytes, pdl, weights(i), x, y, scratch, counters, sh.n, sh.k);
        });
        measure("ldg rows U4 split" + g, pdl, true, [&](int i) {
          launch(ldg_gemv<4, false, true>, grid, 256, xbytes, pdl, weights(i), x, y, scratch, counters, sh.n, sh.k);
        });
        measure("ldg rows U8 split" + g, pdl, true, [&](int i) {
          launch(ldg_gemv<8, false, true>, grid, 256, xbytes, pdl, weights(i), x, y, scratch, counters, sh.n, sh.k);
        });
      }
    }
  }
  return 0;
}
