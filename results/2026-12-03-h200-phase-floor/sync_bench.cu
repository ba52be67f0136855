// The floor of one dependent phase of a batch-1 decode step on this GPU (issue #33), with no weights at all.
//
// A decode step is a chain of phases, each needing the whole output of the one before (the norm needs all of h, the
// output product all heads, ...). Whatever streams the weights, each phase at least: learns that the previous one is
// done, reads its vector (written by every SM), and writes its own part of the next. This measures that alone, for
// vectors of GPT-2's and TinyLlama's width, three ways:
//   chain     K kernels in one CUDA graph, each block: wait for the previous kernel, read x whole, sum it, write its
//             slice of the next x (a GEMV's shape: each block owns outputs); with and without programmatic dependent
//             launch (PDL: griddepcontrol, the next kernel's blocks resident before the wait);
//   barrier   one persistent kernel, one block an SM, K phases joined by an arrival counter (release add, acquire
//             spin), each phase as a chain kernel's body;
//   splitk    the barrier kernel, each block adding its part to every element of the next x (red.global.add: the
//             split-K form that lets a layer's later products start without a full exchange), the next phase reading
//             the sums.
// Prints microseconds a phase (median of 7 runs of K phases).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int kThreads = 256;

__device__ __forceinline__ float block_sum(float s) {
  __shared__ float part[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < kThreads / 32; ++w) t += part[w];
  __syncthreads();
  return t;
}

/// Reads x[0, n) (written by other SMs: through L2, never a stale L1 line), sums it.
__device__ __forceinline__ float read_all(const float* x, int n) {
  float s = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) s += __ldcg(x + i);
  return block_sum(s);
}

__device__ __forceinline__ void write_slice(float* y, int n, float s) {
  const int per = (n + gridDim.x - 1) / gridDim.x;
  for (int i = threadIdx.x; i < per; i += kThreads) {
    const int j = blockIdx.x * per + i;
    if (j < n) y[j] = s * 1e-9f + static_cast<float>(j);
  }
}

template <bool PDL>
__global__ void __launch_bounds__(kThreads) chain_kernel(const float* x, float* y, int n) {
  if (PDL) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  write_slice(y, n, read_all(x, n));
}

__device__ __forceinline__ void grid_arrive_and_wait(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    unsigned seen = 0;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

/// K phases over buffers xs[p] (p = 0..K), n floats each; splitk: every block adds to all of xs[p + 1].
template <bool SPLITK>
__global__ void __launch_bounds__(kThreads) barrier_kernel(float* xs, int n, int phases, unsigned* counter) {
  for (int p = 0; p < phases; ++p) {
    const float s = read_all(xs + static_cast<size_t>(p) * n, n);
    float* y = xs + static_cast<size_t>(p + 1) * n;
    if (SPLITK) {
      for (int i = threadIdx.x; i < n; i += kThreads) atomicAdd(y + i, s * 1e-9f + 1.0f);
    } else {
      write_slice(y, n, s);
    }
    grid_arrive_and_wait(counter, static_cast<unsigned>(gridDim.x) * static_cast<unsigned>(p + 1));
  }
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

float chain_us(bool pdl, int n, int grid, int phases, float* a, float* b) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int p = 0; p < phases; ++p) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kThreads);
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    const float* x = (p & 1) ? b : a;
    float* y = (p & 1) ? a : b;
    if (pdl) {
      CK(cudaLaunchKernelEx(&cfg, chain_kernel<true>, x, y, n));
    } else {
      CK(cudaLaunchKernelEx(&cfg, chain_kernel<false>, x, y, n));
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> us;
  for (int r = 0; r < 8; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) us.push_back(ms * 1e3f / static_cast<float>(phases));
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  return median(us);
}

float barrier_us(bool splitk, int n, int grid, int phases, float* xs, unsigned* counter) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> us;
  for (int r = 0; r < 8; ++r) {
    CK(cudaMemset(xs, 0, sizeof(float) * static_cast<size_t>(n) * (phases + 1)));
    CK(cudaMemset(counter, 0, sizeof(unsigned)));
    void* args[] = {&xs, &n, &phases, &counter};
    CK(cudaEventRecord(e0));
    if (splitk) {
      CK(cudaLaunchCooperativeKernel((void*)barrier_kernel<true>, dim3(grid), dim3(kThreads), args, 0, 0));
    } else {
      CK(cudaLaunchCooperativeKernel((void*)barrier_kernel<false>, dim3(grid), dim3(kThreads), args, 0, 0));
    }
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) us.push_back(ms * 1e3f / static_cast<float>(phases));
  }
  return median(us);
}

int main(int argc, char** argv) {
  const int phases = argc > 1 ? std::atoi(argv[1]) : 200;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; %d phases a run, median of 7 runs; microseconds a phase\n", prop.name, sms, phases);
  float *a, *b, *xs;
  unsigned* counter;
  CK(cudaMalloc(&a, sizeof(float) * 8192));
  CK(cudaMalloc(&b, sizeof(float) * 8192));
  CK(cudaMemset(a, 0, sizeof(float) * 8192));
  CK(cudaMemset(b, 0, sizeof(float) * 8192));
  CK(cudaMalloc(&xs, sizeof(float) * 8192 * (static_cast<size_t>(phases) + 1)));
  CK(cudaMalloc(&counter, sizeof(unsigned)));
  std::printf("%-34s %10s %10s\n", "form", "n=768", "n=2048");
  struct Row {
    const char* name;
    int grid_per_sm;
    int kind;  // 0 chain, 1 chain PDL, 2 barrier, 3 splitk
  };
  const Row rows[] = {{"chain, plain launches, 1 block/SM", 1, 0}, {"chain, PDL, 1 block/SM", 1, 1},
                      {"chain, PDL, 2 blocks/SM", 2, 1},           {"barrier (persistent), 1 block/SM", 1, 2},
                      {"split-K barrier (red.add), 1 block/SM", 1, 3}};
  for (const Row& r : rows) {
    float v[2];
    const int ns[2] = {768, 2048};
    for (int i = 0; i < 2; ++i) {
      const int grid = sms * r.grid_per_sm;
      v[i] = r.kind < 2 ? chain_us(r.kind == 1, ns[i], grid, phases, a, b)
                        : barrier_us(r.kind == 3, ns[i], grid, phases, xs, counter);
    }
    std::printf("%-34s %10.3f %10.3f\n", r.name, v[0], v[1]);
  }
  CK(cudaGetLastError());
  return 0;
}
