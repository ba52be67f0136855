// read_bench: how fast a decode product's weights stream on this GPU for three ways of dividing them among warps,
// with and without the GEMV's arithmetic (issue #33; results/2026-12-03-h200-decode-read-pattern/README.md).
//
// Every kernel is the run GEMV's shape (src/engine/fused/decode_kernels.cu): 2 blocks of 8 warps an SM, each lane
// reading 16 bytes a step (a warp: 512 contiguous bytes), 4 steps in flight and the next 4 issued before they are
// used, L2 evict_first, loads that skip L1. Only which steps a warp reads, in what order, differs:
//   runs      each warp a contiguous run of whole rows (the run GEMV's division)
//   blocks    each block a contiguous run of whole rows; its 8 warps take its steps in turn (step i to warp i % 8),
//             so a block's warps read neighbouring 512-byte pieces at once
//   sweep     every step of the matrix in turn over all warps of the grid (step i to warp i % warps): the grid sweeps
//             the matrix front to back, as a copy does
// "runs+fma" is `runs` with the GEMV's arithmetic (x in shared memory, unpacked, fp32 FMAs, a warp sum per row and the
// output written); the others only fold the words they read into one value, so that the loads are kept.
// Products (bf16, TinyLlama's): gate/up (two 5632 x 2048 matrices read side by side, as SwiGLU's), down (2048 x 5632),
// output (2048 x 2048), LM head (32000 x 2048). Each launch reads its matrices at a different place of a 1 GiB pool,
// so that L2 (60 MB) holds none of them, as in a decode step that streams 2.2 GB.
//
//   read_bench [rounds] [launches]     (default 3 rounds of 40 launches a product and pattern)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../src/engine/fused/decode_device.cuh"

#define CHECK(x)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (x);                                                                            \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

namespace {
using gpubench::engine::fused::device::load_once;
using gpubench::engine::fused::device::unpack8;
using gpubench::engine::fused::device::warp_sum;
using gpubench::engine::fused::device::weight_policy;

constexpr int kWarps = 8, kBlocksPerSm = 2, kDepth = 4;
enum Pattern { kRuns = 0, kBlocks = 1, kSweep = 2, kRunsFma = 3 };

struct Args {
  const __nv_bfloat16* w[2];  // the matrices ([n, k] row-major); w[1] only for two-matrix products
  const __nv_bfloat16* x;     // k values
  float* out;                 // n values (kRunsFma), or one folded word per warp
  int64_t n, k;
};

template <int ROWS, int PATTERN>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) read_kernel(const Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t per_row = a.k / 256;  // 512-byte steps a row (k a multiple of 256)
  const int64_t steps_all = a.n * per_row;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t gw = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  // This warp's steps: first, first + stride, ..., count of them.
  int64_t first = 0, stride = 1, count = 0;
  if (PATTERN == kRuns || PATTERN == kRunsFma) {
    const int64_t j0 = a.n * gw / warps, j1 = a.n * (gw + 1) / warps;
    first = j0 * per_row;
    count = (j1 - j0) * per_row;
  } else if (PATTERN == kBlocks) {
    const int64_t j0 = a.n * blockIdx.x / gridDim.x, j1 = a.n * (blockIdx.x + 1) / gridDim.x;
    const int64_t s0 = j0 * per_row, s1 = j1 * per_row;
    first = s0 + warp;
    stride = kWarps;
    count = first < s1 ? (s1 - first + kWarps - 1) / kWarps : 0;
  } else {
    first = gw;
    stride = warps;
    count = gw < steps_all ? (steps_all - gw + warps - 1) / warps : 0;
  }
  const uint64_t policy = weight_policy(true);
  uint4 buf[kDepth][ROWS], next[kDepth][ROWS];
  int64_t issued = 0;
  auto issue = [&](uint4 (&dst)[kDepth][ROWS]) {
#pragma unroll
    for (int u = 0; u < kDepth; ++u) {
      if (issued < count) {
        const int64_t s = first + issued * stride;
#pragma unroll
        for (int o = 0; o < ROWS; ++o) dst[u][o] = load_once(a.w[o] + s * 256 + lane * 8, policy);
        ++issued;
      }
    }
  };
  issue(buf);
  __nv_bfloat16* xs = reinterpret_cast<__nv_bfloat16*>(smem);
  if (PATTERN == kRunsFma) {
    for (int64_t c = threadIdx.x; c < a.k / 8; c += kWarps * 32) {
      reinterpret_cast<uint4*>(xs)[c] = reinterpret_cast<const uint4*>(a.x)[c];
    }
    __syncthreads();
  }
  uint32_t fold = 0;
  float acc[ROWS] = {};
  int64_t t = 0, j = first / per_row;  // kRunsFma: the step within row j
  for (int64_t b = 0; b < count; b += kDepth) {
    issue(next);
#pragma unroll
    for (int u = 0; u < kDepth; ++u) {
      if (b + u >= count) break;
      if (PATTERN == kRunsFma) {
        float xf[8];
        unpack8<__nv_bfloat16>(reinterpret_cast<const uint4*>(xs)[t * 32 + lane], xf);
#pragma unroll
        for (int o = 0; o < ROWS; ++o) {
          float wf[8];
          unpack8<__nv_bfloat16>(buf[u][o], wf);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o] = fmaf(wf[e], xf[e], acc[o]);
        }
        if (++t == per_row) {
          float v = 0.0f;
#pragma unroll
          for (int o = 0; o < ROWS; ++o) v += warp_sum(acc[o]);
          if (lane == 0) a.out[j] = v;
#pragma unroll
          for (int o = 0; o < ROWS; ++o) acc[o] = 0.0f;
          t = 0;
          ++j;
        }
      } else {
#pragma unroll
        for (int o = 0; o < ROWS; ++o) fold ^= buf[u][o].x ^ buf[u][o].y ^ buf[u][o].z ^ buf[u][o].w;
      }
    }
#pragma unroll
    for (int u = 0; u < kDepth; ++u) {
#pragma unroll
      for (int o = 0; o < ROWS; ++o) buf[u][o] = next[u][o];
    }
  }
  if (PATTERN != kRunsFma && fold == 0x9e3779b9u) a.out[gw] = 1.0f;  // keeps the loads; never true in practice
}

/// A grid-stride read of the same bytes, as fast as this GPU reads (a reference, not a GEMV).
__global__ void __launch_bounds__(256) plain_read(const uint4* p, int64_t words, float* out) {
  uint32_t fold = 0;
  const uint64_t policy = weight_policy(true);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = load_once(p + i, policy);
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (fold == 0x9e3779b9u) out[0] = 1.0f;
}

struct Product {
  const char* name;
  int rows;  // matrices read side by side
  int64_t n, k;
};

template <int ROWS>
void launch(int pattern, const Args& a, int sms, cudaStream_t st) {
  const dim3 grid(sms * kBlocksPerSm), block(kWarps * 32);
  const size_t smem = static_cast<size_t>(a.k) * 2;
  switch (pattern) {
    case kRuns: read_kernel<ROWS, kRuns><<<grid, block, 0, st>>>(a); break;
    case kBlocks: read_kernel<ROWS, kBlocks><<<grid, block, 0, st>>>(a); break;
    case kSweep: read_kernel<ROWS, kSweep><<<grid, block, 0, st>>>(a); break;
    default: read_kernel<ROWS, kRunsFma><<<grid, block, smem, st>>>(a); break;
  }
}
}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int launches = argc > 2 ? std::atoi(argv[2]) : 40;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const size_t pool_bytes = size_t{1} << 30;
  char* pool = nullptr;
  CHECK(cudaMalloc(&pool, pool_bytes));
  CHECK(cudaMemset(pool, 0x3c, pool_bytes));  // bf16 1.15-ish everywhere: finite sums
  float* out = nullptr;
  CHECK(cudaMalloc(&out, 64 << 20));
  __nv_bfloat16* x = nullptr;
  CHECK(cudaMalloc(&x, 32768 * 2));
  CHECK(cudaMemset(x, 0x3c, 32768 * 2));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  // The copy rate as gpubench's roofline measures it: bytes read + written by a device-to-device copy.
  {
    const size_t half = pool_bytes / 2;
    CHECK(cudaMemcpyAsync(pool + half, pool, half, cudaMemcpyDeviceToDevice, st));
    CHECK(cudaEventRecord(e0, st));
    for (int i = 0; i < 10; ++i) CHECK(cudaMemcpyAsync(pool + half, pool, half, cudaMemcpyDeviceToDevice, st));
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("device %s, %d SMs; copy rate (read + written) %.0f GB/s\n", prop.name, sms,
                2.0 * half * 10 / (ms * 1e-3) / 1e9);
  }
  CHECK(cudaFuncSetAttribute(read_kernel<1, kRunsFma>, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024));
  CHECK(cudaFuncSetAttribute(read_kernel<2, kRunsFma>, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024));

  const Product products[] = {{"gate/up", 2, 5632, 2048}, {"down", 1, 2048, 5632}, {"output", 1, 2048, 2048},
                              {"LM head", 1, 32000, 2048}};
  const char* names[] = {"runs", "blocks", "sweep", "runs+fma", "plain read"};
  std::printf("us a launch (median of %d rounds of %d launches, each a graph), and GB/s of weights read\n", rounds,
              launches);
  std::printf("%-8s %8s", "product", "MB");
  for (const char* nm : names) std::printf(" %20s", nm);
  std::printf("\n");
  for (const Product& p : products) {
    const size_t bytes = static_cast<size_t>(p.n * p.k * 2), all = bytes * p.rows;
    std::vector<std::vector<double>> us(5);
    for (int r = 0; r < rounds; ++r) {
      for (int pat = 0; pat < 5; ++pat) {  // patterns alternated within each round
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < launches; ++i) {
          // Each launch at its own place in the pool, 256-byte aligned, far from the last one.
          const size_t span = pool_bytes - all;
          const size_t at = ((static_cast<size_t>(i) * (all + (7u << 20))) % span) & ~size_t{255};
          if (pat == 4) {
            plain_read<<<sms * 8, 256, 0, st>>>(reinterpret_cast<const uint4*>(pool + at), all / 16, out);
            continue;
          }
          Args a;
          a.w[0] = reinterpret_cast<const __nv_bfloat16*>(pool + at);
          a.w[1] = reinterpret_cast<const __nv_bfloat16*>(pool + at + bytes);
          a.x = x;
          a.out = out;
          a.n = p.n;
          a.k = p.k;
          if (p.rows == 2) {
            launch<2>(pat, a, sms, st);
          } else {
            launch<1>(pat, a, sms, st);
          }
        }
        CHECK(cudaStreamEndCapture(st, &g));
        cudaGraphExec_t ge;
        CHECK(cudaGraphInstantiate(&ge, g, 0));
        CHECK(cudaGraphLaunch(ge, st));  // warm
        CHECK(cudaEventRecord(e0, st));
        CHECK(cudaGraphLaunch(ge, st));
        CHECK(cudaEventRecord(e1, st));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        us[pat].push_back(ms * 1e3 / launches);
        CHECK(cudaGraphExecDestroy(ge));
        CHECK(cudaGraphDestroy(g));
      }
    }
    std::printf("%-8s %8.1f", p.name, all / 1e6);
    for (int pat = 0; pat < 5; ++pat) {
      std::sort(us[pat].begin(), us[pat].end());
      const double m = us[pat][us[pat].size() / 2];
      std::printf("   %7.2f us %5.0f GB/s", m, all / (m * 1e-6) / 1e9);
    }
    std::printf("\n");
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
