// GPT-2's layer products (batch 1, bf16 weights) as an ideal chain of PDL kernels, to bound what its decode step can
// reach on this GPU (issue #33). Each kernel owns n / grid output rows; before its griddepcontrol.wait it copies its
// rows' weights whole into shared memory (cp.async: at most 36 KB a block at GPT-2's sizes), so that after the wait
// only the dependent part is left: read x (written by every SM), one warp a row from shared memory, the warp's sum,
// the store. Per layer q/k/v (768 -> 2,304), output (768 -> 768), fc (768 -> 3,072) and projection (3,072 -> 768),
// 12 layers, each with its own weights (170 MB in all, ~3x L2), captured in one CUDA graph and replayed. No attention,
// norms, biases, activations, embeddings or LM head: every one of those only adds to a real step.
// Prints the step's time, microseconds a phase, and the bytes' time at the measured device-to-device copy rate.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

constexpr int kThreads = 256, kWarps = kThreads / 32, kMaxK = 3072;

__global__ void __launch_bounds__(kThreads) gemv_phase(const __nv_bfloat16* __restrict__ w, int n, int k,
                                                       const float* __restrict__ x, float* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float xs[kMaxK];
  const int per = (n + gridDim.x - 1) / gridDim.x, r0 = blockIdx.x * per, r1 = min(n, r0 + per);
  const int chunks = max(0, r1 - r0) * k / 8;  // 16-byte chunks of this block's rows
  const char* src = reinterpret_cast<const char*>(w + static_cast<size_t>(r0) * k);
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  for (int i = threadIdx.x; i < chunks; i += kThreads) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(base + 16u * i), "l"(src + 16ull * i) : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int i = threadIdx.x; i < k; i += kThreads) xs[i] = __ldcg(x + i);
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint4* rows = reinterpret_cast<const uint4*>(smem);
  for (int r = r0 + warp; r < r1; r += kWarps) {
    float acc = 0;
    const uint4* row = rows + static_cast<size_t>(r - r0) * (k / 8);
    for (int c = lane; c < k / 8; c += 32) {
      const uint4 v = row[c];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __bfloat1622float2(h[e]);
        acc = fmaf(f.x, xs[c * 8 + 2 * e], acc);
        acc = fmaf(f.y, xs[c * 8 + 2 * e + 1], acc);
      }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[r] = acc * 1e-3f;
  }
}

__global__ void fill(__nv_bfloat16* w, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const unsigned h = (static_cast<unsigned>(i) ^ seed) * 2654435761u;
    w[i] = __float2bfloat16(static_cast<float>(h >> 8) / 16777216.0f - 0.5f);
  }
}

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 12;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct Product {
    int k, n;
  };
  const Product products[] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
  size_t per_layer = 0, most_smem = 0;
  for (const Product& p : products) {
    per_layer += static_cast<size_t>(p.k) * p.n;
    most_smem = std::max(most_smem, static_cast<size_t>((p.n + sms - 1) / sms) * p.k * 2);
  }
  __nv_bfloat16* w;
  CK(cudaMalloc(&w, per_layer * layers * 2));
  fill<<<1024, 256>>>(w, per_layer * layers, 7u);
  float *xa, *xb;
  CK(cudaMalloc(&xa, kMaxK * 4));
  CK(cudaMalloc(&xb, kMaxK * 4));
  CK(cudaMemset(xa, 0, kMaxK * 4));
  CK(cudaMemset(xb, 0, kMaxK * 4));
  CK(cudaFuncSetAttribute(gemv_phase, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most_smem)));
  // the device-to-device copy rate (read + write), as gpubench's roofline divides by
  const size_t copy_bytes = size_t{1} << 30;
  void *ca, *cb;
  CK(cudaMalloc(&ca, copy_bytes));
  CK(cudaMalloc(&cb, copy_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best_copy = 1e9f;
  for (int i = 0; i < 6; ++i) {
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(cb, ca, copy_bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) best_copy = std::min(best_copy, ms);
  }
  const double copy_gbs = 2.0 * copy_bytes / (best_copy * 1e-3) / 1e9;
  CK(cudaFree(ca));
  CK(cudaFree(cb));

  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  int phases = 0;
  size_t offset = 0;
  for (int l = 0; l < layers; ++l) {
    for (const Product& p : products) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(sms);
      cfg.blockDim = dim3(kThreads);
      cfg.dynamicSmemBytes = static_cast<size_t>((p.n + sms - 1) / sms) * p.k * 2;
      cfg.stream = s;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      const float* x = (phases & 1) ? xb : xa;
      float* y = (phases & 1) ? xa : xb;
      CK(cudaLaunchKernelEx(&cfg, gemv_phase, static_cast<const __nv_bfloat16*>(w + offset), p.n, p.k, x, y));
      offset += static_cast<size_t>(p.k) * p.n;
      ++phases;
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  std::vector<float> us;
  for (int r = 0; r < 60; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 10) us.push_back(ms * 1e3f);
  }
  std::sort(us.begin(), us.end());
  const double bytes = 2.0 * per_layer * layers;
  const double med = us[us.size() / 2];
  std::printf("GPT-2 products, %d layers, %d PDL kernels (one block an SM, %zu B of shared memory at most), "
              "%.1f MB of weights\n", layers, phases, most_smem, bytes / 1e6);
  std::printf("step median %.2f us (min %.2f, max %.2f over 50 replays): %.3f us a phase\n", med, us.front(),
              us.back(), med / phases);
  std::printf("copy rate %.0f GB/s (read + write): the weights' time %.2f us; the chain reads them at %.0f GB/s\n",
              copy_gbs, bytes / copy_gbs * 1e-3, bytes / med * 1e-3);
  CK(cudaGetLastError());
  return 0;
}
