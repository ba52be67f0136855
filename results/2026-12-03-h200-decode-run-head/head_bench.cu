// The run GEMV with a "head": each warp copies the first HEAD whole rows of its run into shared memory by bulk
// asynchronous copies before its wait for the previous kernel (as the streamed GEMV does with its ring), computes
// them from there after the wait, and streams the rest of its run into registers as decode_run_gemv does. Why: alone
// on the H200 (results/2026-12-02-h200-decode-gemv-bench) a kernel that requests ~220 KB an SM of its own weights
// before its wait read TinyLlama's gate/up in 11.3 us chained with PDL, against 14.5 us without PDL, while the run
// GEMV, which requests only its first four 16-byte loads a lane before its wait, gains ~1.2 us from PDL (15.4 ->
// 14.2). Here in TinyLlama's whole multi-kernel decode step (decode_kernels.cu's launchers in decoder.cpp's order, 22
// layers, the cluster attention), each variant a CUDA graph, alternated:
//   baseline    the committed path
//   gu head N   gate/up by the head variant, N rows (of gate and of up) a warp
//   down head N down by the head variant
//   o ring B    the output product's streamed GEMV with B KB of shared memory instead of 110 (its weights need ~66),
//               so that two head blocks of gate/up fit an SM beside it and start during it
// Added after call 1: the streamed GEMV with its ring read by one 16-byte shared load a lane (stream_v4_gemv, made by
// build.sh from decode_stream_gemv's source: nvcc compiles the committed one's ring reads to four 4-byte loads at a
// 16-byte lane stride, 4-way bank conflicts) for q/k/v and the output product, and streamed gate/up and down.
// Correctness: every variant's hidden state and logits after a step equal the baseline's bit for bit (the head rows
// are summed in the run GEMV's order; v4 changes only how the same values are loaded; the streamed and run GEMVs
// sum a row in the same order).
// This translation unit includes decode_kernels.cu itself, for its internals (StreamArgs, stage_x, the epilogue).
//   head_bench [layers] [window] [pos] [rounds] [replays]
#include "fused/decode_kernels.cu"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gpubench::engine::fused;
using bf16 = __nv_bfloat16;

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace gpubench::engine::fused {
namespace {

/// decode_run_gemv (M = 1) with each warp's first `head` rows copied into shared memory before the wait.
template <typename T, int MODE>
__global__ void __launch_bounds__(kStreamWarps * 32, kRunBlocksPerSm) run_head_gemv(const StreamArgs a, int head) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int M = 1, kRows = MODE == kStreamSwiglu ? 2 : 1, D = kRunDepth;
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t k = a.k, chunks = k / 8, per_row = (chunks + 31) / 32;
  const uint32_t row_bytes = static_cast<uint32_t>(k * sizeof(T));
  const uint32_t bars = smem_address(smem);                         // kStreamWarps mbarriers
  T* xs = reinterpret_cast<T*>(smem + 128);                           // x, then each warp's head rows
  unsigned char* heads = smem + 128 + stream_align(M * k * static_cast<int64_t>(sizeof(T)));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kStreamWarps;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kStreamWarps + warp;
  const int64_t j0 = a.n * w / warps, j1 = a.n * (w + 1) / warps;
  const int h = static_cast<int>(j1 - j0 < head ? j1 - j0 : head);
  unsigned char* mine = heads + static_cast<int64_t>(warp) * head * kRows * row_bytes;
  auto rows_of = [&](int64_t j, const T** p) {
    if constexpr (MODE == kStreamSwiglu) {
      p[0] = static_cast<const T*>(a.w.w[0]) + j * k;
      p[1] = static_cast<const T*>(a.w.w[1]) + j * k;
    } else {
      p[0] = weight_row<T>(a.w, j, k);
    }
  };
  if (lane == 0 && h > 0) {  // the head: whole rows, before the wait (weights only)
    const uint32_t bar = bars + 8 * warp;
    barrier_init(bar);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    barrier_expect(bar, static_cast<uint32_t>(h) * kRows * row_bytes);
    for (int r = 0; r < h; ++r) {
      const T* p[kRows];
      rows_of(j0 + r, p);
#pragma unroll
      for (int o = 0; o < kRows; ++o) {
        bulk_copy(smem_address(mine + (static_cast<int64_t>(r) * kRows + o) * row_bytes), p[o], row_bytes, bar);
      }
    }
  }
  // The rest of the run as decode_run_gemv streams it.
  const int64_t steps = (j1 - j0 - h) * per_row;
  const T* lrow[kRows];
  int64_t lj = j0 + h, lt = 0, issued = 0;
  if (steps > 0) rows_of(lj, lrow);
  auto issue = [&](uint4 (&dst)[D][kRows]) {
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (issued < steps) {
        const int64_t c = lt * 32 + lane;
#pragma unroll
        for (int o = 0; o < kRows; ++o) dst[u][o] = c < chunks ? load_once(lrow[o] + 8 * c) : make_uint4(0, 0, 0, 0);
        ++issued;
        if (++lt == per_row) {
          lt = 0;
          if (++lj < j1) rows_of(lj, lrow);
        }
      }
    }
  };
  uint4 buf[D][kRows];
  issue(buf);
  wait_for_previous_kernel();
  let_next_kernel_start();
  stage_x<T, M>(a, xs);

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  auto finish_row = [&](float (&acc)[kRows][M], int64_t j) {
#pragma unroll
    for (int o = 0; o < kRows; ++o) acc[o][0] = warp_sum(acc[o][0]);
    if (lane == 0) {
      gemv_epilogue<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
          acc[0][0], acc[kRows - 1][0], static_cast<const T*>(a.bias), static_cast<const T*>(a.residual),
          static_cast<T*>(a.out), a.n, j, 0);
    }
#pragma unroll
    for (int o = 0; o < kRows; ++o) acc[o][0] = 0.0f;
  };
  float acc[kRows][M];
#pragma unroll
  for (int o = 0; o < kRows; ++o) acc[o][0] = 0.0f;
  if (h > 0) {  // the head rows from shared memory, in the run GEMV's order
    barrier_wait(bars + 8 * warp, 0);
    const uint4* hv = reinterpret_cast<const uint4*>(mine);
    for (int r = 0; r < h; ++r) {
      for (int64_t t = 0; t < per_row; ++t) {
        const int64_t c = t * 32 + lane;
        if (c < chunks) {
          float wf[kRows][8], xf[8];
#pragma unroll
          for (int o = 0; o < kRows; ++o) unpack8<T>(hv[(static_cast<int64_t>(r) * kRows + o) * chunks + c], wf[o]);
          unpack8<T>(xv[c], xf);
#pragma unroll
          for (int o = 0; o < kRows; ++o) {
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[o][0] = fmaf(wf[o][e], xf[e], acc[o][0]);
          }
        }
      }
      finish_row(acc, j0 + r);
    }
  }
  int64_t j = j0 + h, t = 0;
  for (int64_t b = 0; b < steps; b += D) {
    uint4 next[D][kRows];
    issue(next);
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (b + u >= steps) break;
      const int64_t c = t * 32 + lane;
      if (c < chunks) {
        float wf[kRows][8], xf[8];
#pragma unroll
        for (int o = 0; o < kRows; ++o) unpack8<T>(buf[u][o], wf[o]);
        unpack8<T>(xv[c], xf);
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o][0] = fmaf(wf[o][e], xf[e], acc[o][0]);
        }
      }
      if (++t == per_row) {
        finish_row(acc, j);
        t = 0;
        ++j;
      }
    }
#pragma unroll
    for (int u = 0; u < D; ++u) {
#pragma unroll
      for (int o = 0; o < kRows; ++o) buf[u][o] = next[u][o];
    }
  }
#endif
}

/// The run GEMV's grid (run_launch's) and the streamed GEMV's (stream_launch's) for n outputs.
int64_t run_blocks(int64_t n) {
  return std::min<int64_t>(int64_t{device::multiprocessors()} * kRunBlocksPerSm, (n + kStreamWarps - 1) / kStreamWarps);
}
int64_t stream_blocks(int64_t n) { return std::min<int64_t>(device::multiprocessors(), n); }

template <int MODE>
cudaError_t launch_run_head(StreamArgs a, int head, cudaStream_t stream) {
  auto kernel = run_head_gemv<__nv_bfloat16, MODE>;
  const int rows = MODE == kStreamSwiglu ? 2 : 1;
  const size_t smem = 128 + stream_align(a.k * 2) + static_cast<size_t>(kStreamWarps) * head * rows * a.k * 2;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(run_blocks(a.n))), dim3(kStreamWarps * 32), smem,
                            stream, a, head);
}

/// 16 bytes of shared memory as one ld.shared.v4 (p 16-byte aligned).
__device__ __forceinline__ uint4 lds128(const uint4* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))));
  return v;
}

/// stream_v4_gemv: decode_stream_gemv with its ring reads by lds128 (build.sh makes stream_v4.inc from the source).
template <typename T, int M, int MODE>
#include "stream_v4.inc"

/// stream_launch with stream_v4_gemv (v4) or decode_stream_gemv, M = 1, bf16.
template <int MODE>
cudaError_t launch_stream(StreamArgs a, int64_t units, bool v4, cudaStream_t stream) {
  void (*kernel)(const StreamArgs) =
      v4 ? stream_v4_gemv<__nv_bfloat16, 1, MODE> : decode_stream_gemv<__nv_bfloat16, 1, MODE>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kStreamSmemBytes);
  if (e != cudaSuccess) return e;
  a.slots = stream_slots(1, a.k, MODE >= kStreamSwiglu ? 2 : 1);
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(std::min<int64_t>(device::multiprocessors(), units))),
                            dim3(kStreamWarps * 32), kStreamSmemBytes, stream, a);
}

/// The streamed GEMV (plain, M = 1) with `bytes` of shared memory instead of kStreamSmemBytes.
cudaError_t launch_stream_small(StreamArgs a, int bytes, cudaStream_t stream) {
  auto kernel = decode_stream_gemv<__nv_bfloat16, 1, kStreamPlain>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kStreamSmemBytes);
  if (e != cudaSuccess) return e;
  const int64_t ring = bytes - kStreamBarrierBytes - stream_align(a.k * 2);
  a.slots = static_cast<int>(std::min<int64_t>(ring / (a.k * 2), kStreamMaxSlots));
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(stream_blocks(a.n))), dim3(kStreamWarps * 32),
                            static_cast<size_t>(bytes), stream, a);
}

}  // namespace
}  // namespace gpubench::engine::fused

__global__ void fill(bf16* p, int64_t n, uint32_t seed, float scale, float offset) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 2246822519u ^ (uint32_t)(i >> 32) * 3266489917u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
    const float u = (h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    p[i] = __float2bfloat16(offset + scale * u);
  }
}

struct Variant {
  std::string name;
  int gu_head = 0, down_head = 0, o_smem = 0;  // 0: as committed
  // the streamed GEMV with 16-byte ring reads for q/k/v and the output product (as committed: streamed), and the
  // streamed GEMV (1: as committed, 2: with 16-byte ring reads) for gate/up and down instead of the run GEMV
  bool qkv_v4 = false, o_v4 = false;
  int gu_stream = 0, down_stream = 0;
};

int main(int argc, char** argv) {
  const int64_t layers = argc > 1 ? std::atoll(argv[1]) : 22;
  const int64_t window = argc > 2 ? std::atoll(argv[2]) : 640;
  const int64_t pos0 = argc > 3 ? std::atoll(argv[3]) : 576;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const int replays = argc > 5 ? std::atoi(argv[5]) : 200;
  std::vector<Variant> variants = {{"baseline"}, {"gu head 1", 1}, {"down head 1", 0, 1}};
  auto add = [&](const char* name, bool qkv, bool o, int gu, int down) {
    Variant v{name};
    v.qkv_v4 = qkv; v.o_v4 = o; v.gu_stream = gu; v.down_stream = down;
    variants.push_back(v);
  };
  add("q/k/v v4", true, false, 0, 0);
  add("output v4", false, true, 0, 0);
  add("q/k/v and output v4", true, true, 0, 0);
  add("gate/up streamed (as committed)", false, false, 1, 0);
  add("gate/up streamed v4", false, false, 2, 0);
  add("down streamed v4", false, false, 0, 2);
  add("gate/up and down streamed v4", false, false, 2, 2);
  add("all four streamed v4", true, true, 2, 2);
  variants.push_back({"baseline"});
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

  const int64_t dim = 2048, ffn = 5632, hq = 32, hk = 4, d = 64, vocab = 32000, positions = 2048;
  struct Layer { bf16 *n1, *wq, *wk, *wv, *wo, *n2, *wg, *wu, *wd, *kc, *vc; };
  std::vector<Layer> L(layers);
  uint32_t seed = 100;
  auto weight = [&](int64_t n, float scale, float offset = 0.0f) {
    bf16* p = nullptr;
    CHECK(cudaMalloc(&p, n * 2));
    fill<<<1024, 256, 0, st>>>(p, n, seed++, scale, offset);
    CHECK(cudaGetLastError());
    return p;
  };
  for (auto& l : L) {
    l.n1 = weight(dim, 0.1f, 1.0f);
    l.wq = weight(hq * d * dim, 0.035f);
    l.wk = weight(hk * d * dim, 0.035f);
    l.wv = weight(hk * d * dim, 0.035f);
    l.wo = weight(dim * hq * d, 0.035f);
    l.n2 = weight(dim, 0.1f, 1.0f);
    l.wg = weight(ffn * dim, 0.035f);
    l.wu = weight(ffn * dim, 0.035f);
    l.wd = weight(dim * ffn, 0.02f);
    l.kc = weight(positions * hk * d, 1.0f);
    l.vc = weight(positions * hk * d, 1.0f);
  }
  bf16* embed = weight(vocab * dim, 0.02f);
  bf16* final_norm = weight(dim, 0.1f, 1.0f);
  bf16* lm_head = weight(vocab * dim, 0.035f);
  bf16* cos_t = weight(positions * d, 0.5f, 0.5f);
  bf16* sin_t = weight(positions * d, 0.5f, 0.0f);
  int64_t *token, *pos;
  CHECK(cudaMalloc(&token, 8));
  CHECK(cudaMalloc(&pos, 8));
  const int64_t t0 = 1234;
  CHECK(cudaMemcpy(token, &t0, 8, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(pos, &pos0, 8, cudaMemcpyHostToDevice));
  bf16 *h, *h2, *q, *attn, *mlp, *logits;
  CHECK(cudaMalloc(&h, dim * 2)); CHECK(cudaMalloc(&h2, dim * 2)); CHECK(cudaMalloc(&q, hq * d * 2));
  CHECK(cudaMalloc(&attn, hq * d * 2)); CHECK(cudaMalloc(&mlp, ffn * 2)); CHECK(cudaMalloc(&logits, vocab * 2));
  float* sv;
  int64_t* si;
  CHECK(cudaMalloc(&sv, decode_argmax_scratch(1) * 4)); CHECK(cudaMalloc(&si, decode_argmax_scratch(1) * 8));
  const DType bf = DType::kBFloat16;
  int cs = 0, cper = 0;
  if (!decode_attention_cluster_plan(hq, hk, d, window, &cs, &cper)) {
    std::fprintf(stderr, "cluster form does not serve\n");
    return 1;
  }
  auto step = [&](const Variant& v) {
    CHECK(cudaMemcpyAsync(h, embed + t0 * dim, dim * 2, cudaMemcpyDeviceToDevice, st));
    for (const Layer& l : L) {
      DecodeWeights qkv;
      qkv.w[0] = l.wq; qkv.w[1] = l.wk; qkv.w[2] = l.wv;
      qkv.rows[0] = hq * d; qkv.rows[1] = hk * d; qkv.rows[2] = hk * d; qkv.count = 3;
      DecodeCacheWrite cw;
      cw.cos = cos_t; cw.sin = sin_t; cw.pos = pos; cw.q_out = q; cw.k_cache = l.kc; cw.v_cache = l.vc;
      cw.positions = positions; cw.q_heads = hq; cw.kv_heads = hk; cw.head_dim = d;
      DecodeInputNorm n1;
      n1.weight = l.n1; n1.eps = 1e-5f; n1.rms = true;
      if (v.qkv_v4) {
        StreamArgs a = stream_args(h, dim, qkv, nullptr, (hq + 2 * hk) * d, dim, n1);
        a.cache = cw;
        CHECK(launch_stream<kStreamQkvCache>(a, (hq + 2 * hk) * d / 2, true, st));
      } else {
        CHECK(launch_decode_stream_qkv_to_cache(h, dim, qkv, nullptr, cw, bf, 1, dim, st, n1));
      }
      DecodeAttentionInput in;
      in.q = q; in.q_stride = hq * d; in.k_cache = l.kc; in.v_cache = l.vc;
      CHECK(launch_decode_attention_cluster(in, pos, attn, bf, 1, positions, hq, hk, d, cs, cper, st));
      DecodeWeights wo;
      wo.w[0] = l.wo; wo.rows[0] = dim; wo.count = 1;
      if (v.o_v4) {
        StreamArgs a = stream_args(attn, hq * d, wo, nullptr, dim, hq * d, DecodeInputNorm{});
        a.residual = h;
        a.out = h2;
        CHECK(launch_stream<kStreamPlain>(a, dim, true, st));
      } else if (v.o_smem > 0) {
        StreamArgs a = stream_args(attn, hq * d, wo, nullptr, dim, hq * d, DecodeInputNorm{});
        a.residual = h;
        a.out = h2;
        CHECK(launch_stream_small(a, v.o_smem, st));
      } else {
        CHECK(launch_decode_stream_gemv(attn, hq * d, wo, nullptr, h, h2, bf, 1, dim, hq * d, DecodeActivation::kNone,
                                        st));
      }
      DecodeWeights gu;
      gu.w[0] = l.wg; gu.w[1] = l.wu; gu.rows[0] = gu.rows[1] = ffn; gu.count = 2;
      DecodeInputNorm n2;
      n2.weight = l.n2; n2.eps = 1e-5f; n2.rms = true;
      if (v.gu_stream > 0) {
        StreamArgs a = stream_args(h2, dim, gu, nullptr, ffn, dim, n2);
        a.out = mlp;
        CHECK(launch_stream<kStreamSwiglu>(a, ffn, v.gu_stream == 2, st));
      } else if (v.gu_head > 0) {
        StreamArgs a = stream_args(h2, dim, gu, nullptr, ffn, dim, n2);
        a.out = mlp;
        CHECK(launch_run_head<kStreamSwiglu>(a, v.gu_head, st));
      } else {
        CHECK(launch_decode_run_gemv(h2, dim, gu, nullptr, nullptr, mlp, bf, 1, ffn, dim, DecodeActivation::kSwiglu,
                                     st, n2));
      }
      DecodeWeights wd;
      wd.w[0] = l.wd; wd.rows[0] = dim; wd.count = 1;
      if (v.down_stream > 0) {
        StreamArgs a = stream_args(mlp, ffn, wd, nullptr, dim, ffn, DecodeInputNorm{});
        a.residual = h2;
        a.out = h;
        CHECK(launch_stream<kStreamPlain>(a, dim, v.down_stream == 2, st));
      } else if (v.down_head > 0) {
        StreamArgs a = stream_args(mlp, ffn, wd, nullptr, dim, ffn, DecodeInputNorm{});
        a.residual = h2;
        a.out = h;
        CHECK(launch_run_head<kStreamPlain>(a, v.down_head, st));
      } else {
        CHECK(launch_decode_run_gemv(mlp, ffn, wd, nullptr, h2, h, bf, 1, dim, ffn, DecodeActivation::kNone, st));
      }
    }
    DecodeWeights lmw;
    lmw.w[0] = lm_head; lmw.rows[0] = vocab; lmw.count = 1;
    DecodeInputNorm nf;
    nf.weight = final_norm; nf.eps = 1e-5f; nf.rms = true;
    CHECK(launch_decode_run_gemv(h, dim, lmw, nullptr, nullptr, logits, bf, 1, vocab, dim, DecodeActivation::kNone, st,
                                 nf));
    CHECK(launch_decode_argmax(logits, bf, 1, vocab, sv, si, token, st));
  };
  auto host_bits = [&](const bf16* p, int64_t n) {
    std::vector<uint16_t> b(n);
    CHECK(cudaMemcpy(b.data(), p, n * 2, cudaMemcpyDeviceToHost));
    return b;
  };

  bool ok = true;
  step(variants.front());
  CHECK(cudaStreamSynchronize(st));
  const auto h_ref = host_bits(h, dim), logits_ref = host_bits(logits, vocab);
  for (const auto& v : variants) {
    step(v);
    CHECK(cudaStreamSynchronize(st));
    const bool same = host_bits(h, dim) == h_ref && host_bits(logits, vocab) == logits_ref;
    std::printf("%-44s %s\n", v.name.c_str(), same ? "same hidden state and logits" : "DIFFERENT");
    ok &= same;
  }
  std::printf("correctness: %s\n", ok ? "PASS" : "FAIL");

  struct Timed { std::string name; cudaGraphExec_t exec; std::vector<double> medians, means; };
  std::vector<Timed> ts;
  for (const auto& v : variants) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    step(v);
    CHECK(cudaStreamEndCapture(st, &g));
    Timed x{v.name, nullptr, {}, {}};
    CHECK(cudaGraphInstantiate(&x.exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    ts.push_back(x);
  }
  std::vector<cudaEvent_t> ev(replays + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (auto& v : ts) {
    for (int i = 0; i < 20; ++i) CHECK(cudaGraphLaunch(v.exec, st));
  }
  CHECK(cudaStreamSynchronize(st));
  for (int r = 0; r < rounds; ++r) {
    for (auto& v : ts) {
      CHECK(cudaEventRecord(ev[0], st));
      for (int i = 0; i < replays; ++i) {
        CHECK(cudaGraphLaunch(v.exec, st));
        CHECK(cudaEventRecord(ev[i + 1], st));
      }
      CHECK(cudaEventSynchronize(ev[replays]));
      std::vector<double> t(replays);
      for (int i = 0; i < replays; ++i) {
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        t[i] = ms * 1e3;
      }
      float all = 0;
      CHECK(cudaEventElapsedTime(&all, ev[0], ev[replays]));
      std::sort(t.begin(), t.end());
      v.medians.push_back(t[replays / 2]);
      v.means.push_back(all * 1e3 / replays);
    }
  }
  std::printf("\nTinyLlama shapes, %lld layers, window %lld, pos %lld, cluster attention (%d splits); %d rounds of %d "
              "replays, alternated\n",
              (long long)layers, (long long)window, (long long)pos0, cs, rounds, replays);
  std::printf("%-44s %10s %10s %12s\n", "variant", "median us", "mean us", "vs first");
  auto mid = [](std::vector<double> m) { std::sort(m.begin(), m.end()); return m[m.size() / 2]; };
  for (const auto& v : ts) {
    std::printf("%-44s %10.1f %10.1f %6.3fx (means %5.3fx)  rounds' medians %.1f-%.1f\n", v.name.c_str(),
                mid(v.medians), mid(v.means), mid(ts[0].medians) / mid(v.medians), mid(ts[0].means) / mid(v.means),
                *std::min_element(v.medians.begin(), v.medians.end()),
                *std::max_element(v.medians.begin(), v.medians.end()));
  }
  return ok ? 0 : 3;
}
