// The decode GEMV (src/engine/fused/decode_kernels.cu) against cuBLAS on TinyLlama's and GPT-2's decode shapes, one
// token (m = 1) and 8, bf16: GB/s of weights read, each shape over enough weight copies (> 400 MB) that L2 holds none.
// Build and run on the GPU machine from the repository root:
//   nvcc -std=c++17 -O3 -arch=sm_90 -Isrc/engine results/2026-12-01-h200-fused-decode/gemv_bench.cu \
//        src/engine/fused/decode_kernels.cu -lcublas -o /tmp/gemv_bench && /tmp/gemv_bench
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "fused/decode_kernels.h"

using namespace gpubench::engine::fused;

struct Shape {
  const char* name;
  int64_t n, k;
  bool glu;
};

int main() {
  const Shape shapes[] = {{"llama qkv", 2560, 2048, false},   {"llama o", 2048, 2048, false},
                          {"llama gate+up", 5632, 2048, true}, {"llama down", 2048, 5632, false},
                          {"llama head", 32000, 2048, false},  {"gpt2 c_attn", 2304, 768, false},
                          {"gpt2 proj", 768, 768, false},      {"gpt2 fc", 3072, 768, false},
                          {"gpt2 mlp proj", 768, 3072, false}, {"gpt2 head", 50257, 768, false}};
  cublasHandle_t h;
  cublasCreate(&h);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::printf("%-14s %2s %9s %10s %9s %9s %9s %9s %9s\n", "shape", "m", "MB", "cuBLAS", "auto", "split1", "split2",
              "split4", "split8");
  for (const int64_t m : {1, 8}) {
    for (const Shape& s : shapes) {
      const int64_t per = s.n * s.k * (s.glu ? 2 : 1) * 2;
      const int copies = static_cast<int>(400'000'000 / per + 2);
      std::vector<void*> w(copies * 2);
      for (auto& p : w) {
        cudaMalloc(&p, s.n * s.k * 2);
        cudaMemset(p, 0, s.n * s.k * 2);
      }
      void *x, *out;
      cudaMalloc(&x, m * s.k * 2);
      cudaMemset(x, 0, m * s.k * 2);
      cudaMalloc(&out, m * s.n * 4 * 2);
      auto time = [&](auto&& launch) {
        for (int i = 0; i < 10; ++i) launch(i % copies);
        cudaEventRecord(a);
        const int reps = 200;
        for (int i = 0; i < reps; ++i) launch(i % copies);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        return per / (ms / reps * 1e-3) / 1e9;  // GB/s
      };
      const float one = 1, zero = 0;
      const double blas = time([&](int c) {
        for (int g = 0; g < (s.glu ? 2 : 1); ++g) {
          cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.n, m, s.k, &one, w[2 * c + g], CUDA_R_16BF, s.k, x, CUDA_R_16BF,
                       s.k, &zero, static_cast<char*>(out) + g * m * s.n * 2, CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
        }
      });
      double ours[5];
      const int splits[5] = {0, 1, 2, 4, 8};
      for (int v = 0; v < 5; ++v) {
        ours[v] = time([&](int c) {
          DecodeWeights dw;
          dw.w[0] = w[2 * c];
          dw.rows[0] = s.n;
          dw.count = 1;
          if (s.glu) {
            dw.w[1] = w[2 * c + 1];
            dw.rows[1] = s.n;
            dw.count = 2;
          }
          launch_decode_gemv(x, s.k, dw, nullptr, nullptr, out, DType::kBFloat16, m, s.n, s.k,
                             s.glu ? DecodeActivation::kSwiglu : DecodeActivation::kNone, nullptr, splits[v]);
        });
      }
      std::printf("%-14s %2lld %9.1f %10.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", s.name, static_cast<long long>(m),
                  per / 1e6, blas, ours[0], ours[1], ours[2], ours[3], ours[4]);
      for (auto& p : w) cudaFree(p);
      cudaFree(x);
      cudaFree(out);
    }
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("status: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
