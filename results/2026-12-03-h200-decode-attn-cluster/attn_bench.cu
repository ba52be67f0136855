// Decode attention's cluster form (decode_kernels.cu: decode_attention_cluster) against the form whose last block
// combines the splits (decode_attention), standalone (CUDA runtime only):
//  1. correctness: both forms and a host fp32 reference over random caches, several shapes, positions and cluster
//     limits. Before each attention a kernel that lets it start at once and only then (after ~20 us) writes the new
//     position's k/v row runs, so the cluster form's copies made before its wait see that row stale and must read it
//     again after the wait. Then the cluster form from a q/k/v product (GPT-2's path): the row at the position
//     overwritten with other values first, the attention must use the product's and write them into the cache;
//  2. timing: TinyLlama's multi-kernel decode step (decode_kernels.cu's launchers in decoder.cpp's order, 22
//     layers) with each attention, as CUDA graphs, alternated; and the attention alone, 22 launches a graph.
//   attn_bench [layers] [window] [pos] [rounds] [replays]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fused/decode_kernels.h"

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

__global__ void fill(bf16* p, int64_t n, uint32_t seed, float scale, float offset) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 2246822519u ^ (uint32_t)(i >> 32) * 3266489917u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
    const float u = (h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    p[i] = __float2bfloat16(offset + scale * u);
  }
}

/// Lets the next (programmatic) kernel start at once, sleeps, then writes row `*pos` of both caches from `src_k/v`
/// ([batch, kv_heads, d]): the attention that follows must wait for it and see the new values.
__global__ void late_writer(const bf16* src_k, const bf16* src_v, bf16* kc, bf16* vc, const int64_t* pos,
                            int64_t positions, int64_t row, int batch) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __nanosleep(20000);
  __nanosleep(20000);
  const int64_t p = *pos;
  for (int64_t i = threadIdx.x; i < batch * row; i += blockDim.x) {
    const int64_t b = i / row, e = i % row;
    kc[(b * positions + p) * row + e] = src_k[i];
    vc[(b * positions + p) * row + e] = src_v[i];
  }
}

static void launch_late_writer(const bf16* sk, const bf16* sv, bf16* kc, bf16* vc, const int64_t* pos,
                               int64_t positions, int64_t row, int batch, cudaStream_t st) {
  late_writer<<<1, 256, 0, st>>>(sk, sv, kc, vc, pos, positions, row, batch);
  CHECK(cudaGetLastError());
}

static std::vector<float> host_of(const bf16* p, int64_t n) {
  std::vector<bf16> b(n);
  CHECK(cudaMemcpy(b.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (int64_t i = 0; i < n; ++i) f[i] = __bfloat162float(b[i]);
  return f;
}

/// One shape: both forms against the host reference at each position; false on a mismatch.
static bool check_shape(int64_t batch, int64_t hq, int64_t hk, int64_t d, int64_t window, std::vector<int64_t> poss,
                        cudaStream_t st) {
  const int64_t positions = window + 64, row = hk * d;
  bf16 *kc, *vc, *q, *out_split, *out_cluster, *out_fresh, *sk, *sv, *gk, *gv, *qkv;
  const int64_t width = (hq + 2 * hk) * d;
  CHECK(cudaMalloc(&kc, batch * positions * row * 2));
  CHECK(cudaMalloc(&vc, batch * positions * row * 2));
  CHECK(cudaMalloc(&q, batch * hq * d * 2));
  CHECK(cudaMalloc(&out_split, batch * hq * d * 2));
  CHECK(cudaMalloc(&out_cluster, batch * hq * d * 2));
  CHECK(cudaMalloc(&out_fresh, batch * hq * d * 2));
  CHECK(cudaMalloc(&gk, batch * row * 2));
  CHECK(cudaMalloc(&gv, batch * row * 2));
  CHECK(cudaMalloc(&qkv, batch * width * 2));
  CHECK(cudaMalloc(&sk, batch * row * 2));
  CHECK(cudaMalloc(&sv, batch * row * 2));
  fill<<<512, 256, 0, st>>>(kc, batch * positions * row, 11, 1.0f, 0.0f);
  fill<<<512, 256, 0, st>>>(vc, batch * positions * row, 12, 1.0f, 0.0f);
  fill<<<64, 256, 0, st>>>(q, batch * hq * d, 13, 2.0f, 0.0f);
  fill<<<64, 256, 0, st>>>(sk, batch * row, 14, 3.0f, 0.5f);  // the new row: unlike the stale one
  fill<<<64, 256, 0, st>>>(sv, batch * row, 15, 3.0f, 0.5f);
  fill<<<64, 256, 0, st>>>(gk, batch * row, 16, 9.0f, -2.0f);  // garbage the q/k/v path must replace
  fill<<<64, 256, 0, st>>>(gv, batch * row, 17, 9.0f, -2.0f);
  for (int64_t b = 0; b < batch; ++b) {
    CHECK(cudaMemcpyAsync(qkv + b * width, q + b * hq * d, hq * d * 2, cudaMemcpyDeviceToDevice, st));
    CHECK(cudaMemcpyAsync(qkv + b * width + hq * d, sk + b * row, row * 2, cudaMemcpyDeviceToDevice, st));
    CHECK(cudaMemcpyAsync(qkv + b * width + hq * d + row, sv + b * row, row * 2, cudaMemcpyDeviceToDevice, st));
  }
  int* used_k;
  CHECK(cudaMalloc(&used_k, batch * 4));
  int splits = 1, per_split = 1;
  decode_attention_splits(batch, hq, hk, window, &splits, &per_split);
  float *acc, *ml;
  int* counters;
  CHECK(cudaMalloc(&acc, batch * hq * splits * d * 4));
  CHECK(cudaMalloc(&ml, batch * hq * splits * 2 * 4));
  CHECK(cudaMalloc(&counters, batch * hk * 4));
  CHECK(cudaMemset(counters, 0, batch * hk * 4));
  int64_t* pos;
  CHECK(cudaMalloc(&pos, 8));
  bool ok = true;
  const DType bf = DType::kBFloat16;
  for (int max_cluster : {8, 16, 4}) {
    int cs = 0, cper = 0;
    if (!decode_attention_cluster_plan(hq, hk, d, window, &cs, &cper, kDecodeAttentionMinPerSplit, max_cluster)) {
      std::printf("  b%lld hq%lld hk%lld d%lld window %lld cluster<=%d: does not serve\n", (long long)batch,
                  (long long)hq, (long long)hk, (long long)d, (long long)window, max_cluster);
      continue;
    }
    for (int64_t p : poss) {
      if (p >= window) continue;
      CHECK(cudaMemcpyAsync(pos, &p, 8, cudaMemcpyHostToDevice, st));
      launch_late_writer(sk, sv, kc, vc, pos, positions, row, (int)batch, st);
      DecodeAttentionInput in;
      in.q = q; in.q_stride = hq * d; in.k_cache = kc; in.v_cache = vc;
      CHECK(launch_decode_attention_cluster(in, pos, out_cluster, bf, batch, positions, hq, hk, d, cs, cper, st));
      CHECK(launch_decode_attention(q, kc, vc, pos, out_split, acc, ml, counters, bf, batch, positions, hq, hk, d,
                                    splits, per_split, st));
      CHECK(cudaStreamSynchronize(st));
      const auto K = host_of(kc, batch * positions * row), V = host_of(vc, batch * positions * row);
      // the q/k/v product's path: garbage at the position first, then the attention from qkv
      launch_late_writer(gk, gv, kc, vc, pos, positions, row, (int)batch, st);
      CHECK(cudaMemsetAsync(used_k, 0, batch * 4, st));
      DecodeAttentionInput fin;
      fin.q = qkv; fin.q_stride = width; fin.k_cache = kc; fin.v_cache = vc; fin.fresh_k = qkv + hq * d;
      fin.fresh_v = qkv + hq * d + row; fin.fresh_stride = width; fin.used_k = used_k;
      CHECK(launch_decode_attention_cluster(fin, pos, out_fresh, bf, batch, positions, hq, hk, d, cs, cper, st));
      CHECK(cudaStreamSynchronize(st));
      bool fresh_ok = host_of(kc, batch * positions * row) == K && host_of(vc, batch * positions * row) == V;
      std::vector<int> used(batch);
      CHECK(cudaMemcpy(used.data(), used_k, batch * 4, cudaMemcpyDeviceToHost));
      for (int u : used) fresh_ok &= u == p + 1;
      const auto Q = host_of(q, batch * hq * d), A = host_of(out_split, batch * hq * d),
                 C = host_of(out_cluster, batch * hq * d), F = host_of(out_fresh, batch * hq * d);
      double err_a = 0, err_c = 0, mx = 0;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t h = 0; h < hq; ++h) {
          const int64_t kh = h / (hq / hk);
          std::vector<double> s(p + 1);
          double m = -1e300;
          for (int64_t t = 0; t <= p; ++t) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e) dot += Q[(b * hq + h) * d + e] * K[((b * positions + t) * hk + kh) * d + e];
            s[t] = dot / std::sqrt((double)d);
            m = std::max(m, s[t]);
          }
          double l = 0;
          for (auto& x : s) l += (x = std::exp(x - m));
          for (int64_t e = 0; e < d; ++e) {
            double o = 0;
            for (int64_t t = 0; t <= p; ++t) o += s[t] * V[((b * positions + t) * hk + kh) * d + e];
            o /= l;
            const int64_t i = (b * hq + h) * d + e;
            err_a = std::max(err_a, std::fabs(A[i] - o));
            err_c = std::max(err_c, std::fabs(C[i] - o));
            fresh_ok &= F[i] == C[i];
            mx = std::max(mx, std::fabs(o));
          }
        }
      }
      const bool good = err_c <= 0.02 * std::max(mx, 1.0) && err_c <= 2 * err_a + 0.01 && fresh_ok;
      ok &= good;
      std::printf("  b%lld hq%lld hk%lld d%lld window %lld cluster %d x %d, pos %lld: max |err| cluster %.4g, last-block "
                  "%.4g (max |ref| %.3g); from q/k/v: %s %s\n",
                  (long long)batch, (long long)hq, (long long)hk, (long long)d, (long long)window, cs, cper, (long long)p,
                  err_c, err_a, mx, fresh_ok ? "same output, cache written" : "DIFFERS", good ? "ok" : "MISMATCH");
    }
  }
  for (void* ptr : {(void*)kc, (void*)vc, (void*)q, (void*)out_split, (void*)out_cluster, (void*)sk, (void*)sv,
                    (void*)acc, (void*)ml, (void*)counters, (void*)pos, (void*)out_fresh, (void*)gk, (void*)gv, (void*)qkv,
                    (void*)used_k}) {
    CHECK(cudaFree(ptr));
  }
  return ok;
}

struct Arena {
  char* base = nullptr;
  size_t used = 0, size = 0;
  bf16* take(int64_t n) {
    bf16* p = reinterpret_cast<bf16*>(base + used);
    used += (n * 2 + 255) / 256 * 256;
    if (used > size) { std::fprintf(stderr, "arena too small\n"); std::exit(1); }
    return p;
  }
};

int main(int argc, char** argv) {
  const int64_t layers = argc > 1 ? std::atoll(argv[1]) : 22;
  const int64_t window = argc > 2 ? std::atoll(argv[2]) : 640;
  const int64_t pos0 = argc > 3 ? std::atoll(argv[3]) : 576;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const int replays = argc > 5 ? std::atoi(argv[5]) : 200;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("device %s, %d SMs; cluster limit by default %d\n", prop.name, prop.multiProcessorCount,
              kDecodeAttentionMaxCluster);

  // ---- 1. correctness -------------------------------------------------------------------------------------------
  bool ok = true;
  ok &= check_shape(1, 32, 4, 64, 640, {0, 1, 63, 64, 79, 80, 81, 300, 576, 639}, st);   // TinyLlama
  ok &= check_shape(1, 12, 12, 64, 640, {0, 5, 80, 511, 600}, st);                        // GPT-2
  ok &= check_shape(2, 32, 8, 128, 1024, {0, 127, 128, 700, 1023}, st);                    // group 4, d 128
  ok &= check_shape(4, 32, 4, 64, 2048, {3, 1000, 2047}, st);                              // longer, 4 sequences
  ok &= check_shape(1, 8, 1, 128, 4096, {4095, 2000}, st);                                 // a split that must grow
  ok &= check_shape(8, 16, 16, 64, 192, {0, 100, 191}, st);                                // 8 sequences, short
  // few splits over wide groups: more outputs a block combines than it has threads (call 1's kernel missed these)
  ok &= check_shape(1, 32, 4, 64, 64, {0, 37, 63}, st);
  ok &= check_shape(3, 32, 1, 128, 1536, {150, 1500}, st);
  std::printf("correctness: %s\n", ok ? "PASS" : "FAIL");

  // ---- 2. timing: TinyLlama's step with each attention ----------------------------------------------------------
  const int64_t dim = 2048, ffn = 5632, hq = 32, hk = 4, d = 64, vocab = 32000, positions = 2048;
  struct Layer { bf16 *n1, *wq, *wk, *wv, *wo, *n2, *wg, *wu, *wd, *kc, *vc; };
  const int64_t per_layer = 2 * dim + hq * d * dim + 2 * hk * d * dim + dim * hq * d + 3 * ffn * dim +
                            2 * positions * hk * d;
  Arena arena;
  arena.size = (size_t)(layers * per_layer + 2 * vocab * dim + dim + 2 * positions * d) * 2 + 1024 * 256 * layers;
  CHECK(cudaMalloc(&arena.base, arena.size));
  uint32_t seed = 100;
  auto weight = [&](int64_t n, float scale, float offset = 0.0f) {
    bf16* p = arena.take(n);
    fill<<<1024, 256, 0, st>>>(p, n, seed++, scale, offset);
    CHECK(cudaGetLastError());
    return p;
  };
  std::vector<Layer> L(layers);
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
  int splits = 1, per_split = 1;
  decode_attention_splits(1, hq, hk, window, &splits, &per_split);
  float *acc, *ml, *sv;
  int64_t* si;
  int* counters;
  CHECK(cudaMalloc(&acc, hq * splits * d * 4)); CHECK(cudaMalloc(&ml, hq * splits * 2 * 4));
  CHECK(cudaMalloc(&counters, hk * 4)); CHECK(cudaMemset(counters, 0, hk * 4));
  CHECK(cudaMalloc(&sv, decode_argmax_scratch(1) * 4)); CHECK(cudaMalloc(&si, decode_argmax_scratch(1) * 8));
  const DType bf = DType::kBFloat16;
  // attention variants: 0 = the last block combines; n > 0 = clusters of up to n splits
  auto attention = [&](int variant, const Layer& l) {
    if (variant == 0) {
      CHECK(launch_decode_attention(q, l.kc, l.vc, pos, attn, acc, ml, counters, bf, 1, positions, hq, hk, d, splits,
                                    per_split, st));
      return;
    }
    int cs = 0, cper = 0;
    if (!decode_attention_cluster_plan(hq, hk, d, window, &cs, &cper, kDecodeAttentionMinPerSplit, variant)) {
      std::fprintf(stderr, "cluster form does not serve\n");
      std::exit(1);
    }
    DecodeAttentionInput in;
    in.q = q; in.q_stride = hq * d; in.k_cache = l.kc; in.v_cache = l.vc;
    CHECK(launch_decode_attention_cluster(in, pos, attn, bf, 1, positions, hq, hk, d, cs, cper, st));
  };
  auto step = [&](int variant) {
    CHECK(cudaMemcpyAsync(h, embed + t0 * dim, dim * 2, cudaMemcpyDeviceToDevice, st));
    for (const auto& l : L) {
      DecodeWeights qkv;
      qkv.w[0] = l.wq; qkv.w[1] = l.wk; qkv.w[2] = l.wv;
      qkv.rows[0] = hq * d; qkv.rows[1] = hk * d; qkv.rows[2] = hk * d; qkv.count = 3;
      DecodeCacheWrite cw;
      cw.cos = cos_t; cw.sin = sin_t; cw.pos = pos; cw.q_out = q; cw.k_cache = l.kc; cw.v_cache = l.vc;
      cw.positions = positions; cw.q_heads = hq; cw.kv_heads = hk; cw.head_dim = d;
      DecodeInputNorm n1;
      n1.weight = l.n1; n1.eps = 1e-5f; n1.rms = true;
      CHECK(launch_decode_stream_qkv_to_cache(h, dim, qkv, nullptr, cw, bf, 1, dim, st, n1));
      attention(variant, l);
      DecodeWeights wo;
      wo.w[0] = l.wo; wo.rows[0] = dim; wo.count = 1;
      CHECK(launch_decode_stream_gemv(attn, hq * d, wo, nullptr, h, h2, bf, 1, dim, hq * d, DecodeActivation::kNone, st));
      DecodeWeights gu;
      gu.w[0] = l.wg; gu.w[1] = l.wu; gu.rows[0] = gu.rows[1] = ffn; gu.count = 2;
      DecodeInputNorm n2;
      n2.weight = l.n2; n2.eps = 1e-5f; n2.rms = true;
      CHECK(launch_decode_run_gemv(h2, dim, gu, nullptr, nullptr, mlp, bf, 1, ffn, dim, DecodeActivation::kSwiglu, st, n2));
      DecodeWeights wd;
      wd.w[0] = l.wd; wd.rows[0] = dim; wd.count = 1;
      CHECK(launch_decode_run_gemv(mlp, ffn, wd, nullptr, h2, h, bf, 1, dim, ffn, DecodeActivation::kNone, st));
    }
    DecodeWeights lm;
    lm.w[0] = lm_head; lm.rows[0] = vocab; lm.count = 1;
    DecodeInputNorm nf;
    nf.weight = final_norm; nf.eps = 1e-5f; nf.rms = true;
    CHECK(launch_decode_run_gemv(h, dim, lm, nullptr, nullptr, logits, bf, 1, vocab, dim, DecodeActivation::kNone, st, nf));
    CHECK(launch_decode_argmax(logits, bf, 1, vocab, sv, si, token, st));
  };
  auto attention_only = [&](int variant) {
    for (const auto& l : L) attention(variant, l);
  };
  // the two steps' results agree (the same hidden state after the step, as far as bf16 rounding lets them)
  step(0);
  CHECK(cudaStreamSynchronize(st));
  const auto h_split = host_of(h, dim);
  step(kDecodeAttentionMaxCluster);
  CHECK(cudaStreamSynchronize(st));
  const auto h_cluster = host_of(h, dim);
  double diff = 0, mag = 0;
  for (int64_t i = 0; i < dim; ++i) {
    diff = std::max(diff, (double)std::fabs(h_split[i] - h_cluster[i]));
    mag = std::max(mag, (double)std::fabs(h_split[i]));
  }
  std::printf("step's hidden state, cluster vs last-block attention: max |diff| %.4g of max %.4g\n", diff, mag);

  auto capture = [&](auto&& body, cudaGraphExec_t* exec) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    body();
    CHECK(cudaStreamEndCapture(st, &g));
    CHECK(cudaGraphInstantiate(exec, g, 0));
    CHECK(cudaGraphDestroy(g));
  };
  struct Variant { std::string name; cudaGraphExec_t exec; std::vector<double> medians, means; };
  std::vector<Variant> vs;
  const int variants[] = {0, 8, 16};
  for (int v : variants) {
    Variant x{std::string("step, ") + (v == 0 ? "last-block attention" : "cluster attention <= " + std::to_string(v)),
              nullptr, {}, {}};
    capture([&] { step(v); }, &x.exec);
    vs.push_back(x);
  }
  for (int v : variants) {
    Variant x{std::string("attention x") + std::to_string(layers) + ", " +
                  (v == 0 ? "last-block" : "cluster <= " + std::to_string(v)),
              nullptr, {}, {}};
    capture([&] { attention_only(v); }, &x.exec);
    vs.push_back(x);
  }
  std::vector<cudaEvent_t> ev(replays + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (auto& v : vs) {
    for (int i = 0; i < 20; ++i) CHECK(cudaGraphLaunch(v.exec, st));
  }
  CHECK(cudaStreamSynchronize(st));
  for (int r = 0; r < rounds; ++r) {
    for (auto& v : vs) {
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
  std::printf("\nTinyLlama shapes, %lld layers, window %lld, pos %lld; %d rounds of %d replays, alternated\n",
              (long long)layers, (long long)window, (long long)pos0, rounds, replays);
  std::printf("%-40s %10s %10s %12s\n", "graph", "median us", "mean us", "vs first");
  auto mid = [](std::vector<double> m) { std::sort(m.begin(), m.end()); return m[m.size() / 2]; };
  for (size_t i = 0; i < vs.size(); ++i) {
    const auto& base = vs[i < 3 ? 0 : 3];
    const auto& v = vs[i];
    std::printf("%-40s %10.1f %10.1f %6.3fx (means %5.3fx)  rounds' medians %.1f-%.1f\n", v.name.c_str(),
                mid(v.medians), mid(v.means), mid(base.medians) / mid(v.medians), mid(base.means) / mid(v.means),
                *std::min_element(v.medians.begin(), v.medians.end()),
                *std::max_element(v.medians.begin(), v.medians.end()));
  }
  return ok ? 0 : 3;
}
