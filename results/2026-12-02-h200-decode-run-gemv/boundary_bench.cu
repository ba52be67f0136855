// What a kernel boundary costs in a decode step's CUDA graph on sm_90: chains of 110 kernels (a TinyLlama step's 22
// layers x 5) that do nothing but the decode kernels' handshake (griddepcontrol.wait, then launch_dependents, then
// one value a block written that the next kernel's blocks read), captured once and replayed, with and without
// programmatic dependent launch, for grids of 40 (the attention at batch 1), 132 (a streamed GEMV) and 264 blocks (a
// run GEMV). The time a replay takes over the kernels in it is the floor each boundary adds to a step, whatever its
// kernels compute. Standalone: nvcc and the CUDA runtime only.
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a boundary_bench.cu -o boundary_bench && ./boundary_bench
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

/// Block b reads what block b of the previous kernel wrote (in[b]) after the wait, and writes out[b] = in[b] + 1.
__global__ void __launch_bounds__(256) handshake(const int* in, int* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) out[blockIdx.x] = __ldcg(in + blockIdx.x) + 1;
}

int main() {
  constexpr int kKernels = 110, kReplays = 50;
  int *a, *b;
  CHECK(cudaMalloc(&a, 4096 * sizeof(int)));
  CHECK(cudaMalloc(&b, 4096 * sizeof(int)));
  CHECK(cudaMemset(a, 0, 4096 * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::printf("%6s %5s %12s %12s\n", "blocks", "pdl", "us/replay", "us/kernel");
  for (const int blocks : {40, 132, 264}) {
    for (const bool pdl : {false, true}) {
      cudaGraph_t g;
      CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < kKernels; ++i) {
        cudaLaunchConfig_t c = {};
        c.gridDim = dim3(blocks);
        c.blockDim = dim3(256);
        c.stream = s;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        if (pdl) {
          c.attrs = attr;
          c.numAttrs = 1;
        }
        CHECK(cudaLaunchKernelEx(&c, handshake, static_cast<const int*>(i % 2 ? b : a), i % 2 ? a : b));
      }
      CHECK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t x;
      CHECK(cudaGraphInstantiate(&x, g, 0));
      for (int i = 0; i < 5; ++i) CHECK(cudaGraphLaunch(x, s));
      CHECK(cudaEventRecord(e0, s));
      for (int i = 0; i < kReplays; ++i) CHECK(cudaGraphLaunch(x, s));
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      const double us = 1000.0 * ms / kReplays;
      std::printf("%6d %5s %12.1f %12.2f\n", blocks, pdl ? "yes" : "no", us, us / kKernels);
      CHECK(cudaGraphExecDestroy(x));
      CHECK(cudaGraphDestroy(g));
    }
  }
  int v = 0;
  CHECK(cudaMemcpy(&v, a, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("# chain value %d (each replay adds %d)\n", v, kKernels);
  return 0;
}
