// The whole-step decode kernel (src/engine/fused/decode_step_kernel.cu) against the multi-kernel step gpubench runs
// today (decode_kernels.cu's launchers in the order decoder.cpp issues them for one sequence), on random weights of a
// decoder's shapes (TinyLlama-1.1B by default): both results compared, then both steps timed as CUDA graphs,
// alternated, with the bandwidth bound from a measured device-to-device copy. Standalone: CUDA runtime only.
//   step_bench [layers] [window] [pos] [rounds] [replays]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fused/decode_kernels.h"
#include "fused/decode_step_kernel.h"

using namespace gpubench::engine::fused;
using bf16 = __nv_bfloat16;

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__global__ void fill(bf16* p, int64_t n, uint32_t seed, float scale, float offset) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 2246822519u ^ (uint32_t)(i >> 32) * 3266489917u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
    const float u = (h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    p[i] = __float2bfloat16(offset + scale * u);
  }
}

__global__ void embed_row(const bf16* embed, const int64_t* token, bf16* out, int64_t dim) {
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[i] = embed[*token * dim + i];
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
  const int64_t dim = 2048, ffn = 5632, hq = 32, hk = 4, d = 64, vocab = 32000, positions = 2048;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs; TinyLlama shapes, %lld layers, window %lld, pos %lld\n", prop.name,
              prop.multiProcessorCount, (long long)layers, (long long)window, (long long)pos0);

  // weights and caches
  const int64_t per_layer = 2 * dim + hq * d * dim + 2 * hk * d * dim + dim * hq * d + 3 * ffn * dim +
                            2 * positions * hk * d;
  const int64_t total = layers * per_layer + 2 * vocab * dim + dim + 2 * positions * d + 64 * layers;
  Arena arena;
  arena.size = (size_t)total * 2 + 1024 * 256;
  CHECK(cudaMalloc(&arena.base, arena.size));
  uint32_t seed = 1;
  auto init = [&](bf16* p, int64_t n, float scale, float offset) {
    fill<<<1024, 256>>>(p, n, seed++, scale, offset);
    CHECK(cudaGetLastError());
  };
  std::vector<DecodeStepLayer> L(layers);
  int64_t weight_bytes = 0;
  auto weight = [&](int64_t n, float scale, float offset = 0.0f) {
    bf16* p = arena.take(n);
    init(p, n, scale, offset);
    weight_bytes += n * 2;
    return p;
  };
  for (int64_t l = 0; l < layers; ++l) {
    L[l].attn_norm_w = weight(dim, 0.1f, 1.0f);
    L[l].wq = weight(hq * d * dim, 0.035f);
    L[l].wk = weight(hk * d * dim, 0.035f);
    L[l].wv = weight(hk * d * dim, 0.035f);
    L[l].wo = weight(dim * hq * d, 0.035f);
    L[l].mlp_norm_w = weight(dim, 0.1f, 1.0f);
    L[l].w_gate = weight(ffn * dim, 0.035f);
    L[l].w_up = weight(ffn * dim, 0.035f);
    L[l].w_down = weight(dim * ffn, 0.02f);
    bf16* kc = arena.take(positions * hk * d);
    bf16* vc = arena.take(positions * hk * d);
    init(kc, positions * hk * d, 1.0f, 0.0f);
    init(vc, positions * hk * d, 1.0f, 0.0f);
    L[l].k_cache = kc;
    L[l].v_cache = vc;
  }
  DecodeStepModel m;
  m.layers = layers; m.dim = dim; m.ffn = ffn; m.q_heads = hq; m.kv_heads = hk; m.head_dim = d; m.vocab = vocab;
  m.positions = positions; m.rms = true; m.eps = 1e-5f;
  m.embed = weight(vocab * dim, 0.02f);
  m.final_norm_w = weight(dim, 0.1f, 1.0f);
  m.lm_head = weight(vocab * dim, 0.035f);
  weight_bytes -= vocab * dim * 2;  // the embedding row read is one row, not the table
  {  // rotary tables
    std::vector<bf16> c(positions * d), s(positions * d);
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t e = 0; e < d / 2; ++e) {
        const double a = p * std::pow(10000.0, -2.0 * e / d);
        c[p * d + e] = c[p * d + e + d / 2] = __float2bfloat16((float)std::cos(a));
        s[p * d + e] = s[p * d + e + d / 2] = __float2bfloat16((float)std::sin(a));
      }
    }
    bf16* cs = arena.take(positions * d);
    bf16* sn = arena.take(positions * d);
    CHECK(cudaMemcpy(cs, c.data(), positions * d * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(sn, s.data(), positions * d * 2, cudaMemcpyHostToDevice));
    m.rope_cos = cs;
    m.rope_sin = sn;
  }
  DecodeStepLayer* dl = nullptr;
  CHECK(cudaMalloc(&dl, layers * sizeof(DecodeStepLayer)));
  CHECK(cudaMemcpy(dl, L.data(), layers * sizeof(DecodeStepLayer), cudaMemcpyHostToDevice));
  m.layer = dl;

  // state
  int64_t *token, *pos, *token_ref;
  CHECK(cudaMalloc(&token, 8));
  CHECK(cudaMalloc(&token_ref, 8));
  CHECK(cudaMalloc(&pos, 8));
  const int64_t t0 = 1234;
  CHECK(cudaMemcpy(pos, &pos0, 8, cudaMemcpyHostToDevice));
  bf16 *h, *h2, *q, *attn, *mlp, *logits, *logits_ref;
  CHECK(cudaMalloc(&h, dim * 2)); CHECK(cudaMalloc(&h2, dim * 2)); CHECK(cudaMalloc(&q, hq * d * 2));
  CHECK(cudaMalloc(&attn, hq * d * 2)); CHECK(cudaMalloc(&mlp, ffn * 2));
  CHECK(cudaMalloc(&logits, vocab * 2)); CHECK(cudaMalloc(&logits_ref, vocab * 2));
  float* part = nullptr;
  CHECK(cudaMalloc(&part, decode_step_part_floats(m, window) * 4));
  unsigned* sync = nullptr;
  CHECK(cudaMalloc(&sync, decode_step_sync_words(m) * 4));
  CHECK(cudaMemset(sync, 0, decode_step_sync_words(m) * 4));
  // reference scratch
  int splits = 1, per_split = 1;
  decode_attention_splits(1, hq, hk, window, &splits, &per_split);
  float *acc, *ml, *sv;
  int64_t* si;
  int* counters;
  CHECK(cudaMalloc(&acc, hq * splits * d * 4)); CHECK(cudaMalloc(&ml, hq * splits * 2 * 4));
  CHECK(cudaMalloc(&counters, hk * 4)); CHECK(cudaMemset(counters, 0, hk * 4));
  CHECK(cudaMalloc(&sv, decode_argmax_scratch(1) * 4)); CHECK(cudaMalloc(&si, decode_argmax_scratch(1) * 8));

  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const DType bf = DType::kBFloat16;
  auto reference = [&]() {
    embed_row<<<1, 256, 0, st>>>(static_cast<const bf16*>(m.embed), token_ref, h, dim);
    for (int64_t l = 0; l < layers; ++l) {
      DecodeWeights qkv;
      qkv.w[0] = L[l].wq; qkv.w[1] = L[l].wk; qkv.w[2] = L[l].wv;
      qkv.rows[0] = hq * d; qkv.rows[1] = hk * d; qkv.rows[2] = hk * d; qkv.count = 3;
      DecodeCacheWrite cw;
      cw.cos = m.rope_cos; cw.sin = m.rope_sin; cw.pos = pos; cw.q_out = q; cw.k_cache = L[l].k_cache;
      cw.v_cache = L[l].v_cache; cw.positions = positions; cw.q_heads = hq; cw.kv_heads = hk; cw.head_dim = d;
      DecodeInputNorm n1;
      n1.weight = L[l].attn_norm_w; n1.eps = 1e-5f; n1.rms = true;
      CHECK(launch_decode_stream_qkv_to_cache(h, dim, qkv, nullptr, cw, bf, 1, dim, st, n1));
      CHECK(launch_decode_attention(q, L[l].k_cache, L[l].v_cache, pos, attn, acc, ml, counters, bf, 1, positions, hq,
                                    hk, d, splits, per_split, st));
      DecodeWeights wo;
      wo.w[0] = L[l].wo; wo.rows[0] = dim; wo.count = 1;
      CHECK(launch_decode_stream_gemv(attn, hq * d, wo, nullptr, h, h2, bf, 1, dim, hq * d, DecodeActivation::kNone, st));
      DecodeWeights gu;
      gu.w[0] = L[l].w_gate; gu.w[1] = L[l].w_up; gu.rows[0] = gu.rows[1] = ffn; gu.count = 2;
      DecodeInputNorm n2;
      n2.weight = L[l].mlp_norm_w; n2.eps = 1e-5f; n2.rms = true;
      CHECK(launch_decode_run_gemv(h2, dim, gu, nullptr, nullptr, mlp, bf, 1, ffn, dim, DecodeActivation::kSwiglu, st, n2));
      DecodeWeights wd;
      wd.w[0] = L[l].w_down; wd.rows[0] = dim; wd.count = 1;
      CHECK(launch_decode_run_gemv(mlp, ffn, wd, nullptr, h2, h, bf, 1, dim, ffn, DecodeActivation::kNone, st));
    }
    DecodeWeights lm;
    lm.w[0] = m.lm_head; lm.rows[0] = vocab; lm.count = 1;
    DecodeInputNorm nf;
    nf.weight = m.final_norm_w; nf.eps = 1e-5f; nf.rms = true;
    CHECK(launch_decode_run_gemv(h, dim, lm, nullptr, nullptr, logits_ref, bf, 1, vocab, dim, DecodeActivation::kNone, st, nf));
    CHECK(launch_decode_argmax(logits_ref, bf, 1, vocab, sv, si, token_ref, st));
  };
  DecodeStepState s;
  s.token_in = token; s.pos = pos; s.token_out = token; s.logits = logits; s.hidden = h2; s.q = q; s.attn = attn;
  s.mlp = mlp; s.part = part; s.sync = sync; s.window = window;
  DecodeStepTuning tuning;
  auto mega = [&]() { CHECK(launch_decode_step(m, s, bf, st, tuning)); };

  // ---- correctness: one step each from the same token at pos0, the caches' row at pos0 compared --------------
  auto host_bf = [](const bf16* p, int64_t n) {
    std::vector<bf16> b(n);
    CHECK(cudaMemcpy(b.data(), p, n * 2, cudaMemcpyDeviceToHost));
    std::vector<float> f(n);
    for (int64_t i = 0; i < n; ++i) f[i] = __bfloat162float(b[i]);
    return f;
  };
  auto compare = [](const char* what, const std::vector<float>& a, const std::vector<float>& b) {
    double mx = 0, ma = 0;
    for (size_t i = 0; i < a.size(); ++i) { mx = std::max(mx, (double)std::fabs(a[i] - b[i])); ma = std::max(ma, (double)std::fabs(a[i])); }
    std::printf("  %-22s max |diff| %.4g of max |ref| %.4g (%.3g)\n", what, mx, ma, mx / std::max(ma, 1e-30));
    return mx / std::max(ma, 1e-30);
  };
  bool ok = true;
  for (int64_t pos_check : {pos0, int64_t{3}}) {
    CHECK(cudaMemcpy(pos, &pos_check, 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(token, &t0, 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(token_ref, &t0, 8, cudaMemcpyHostToDevice));
    reference();
    CHECK(cudaStreamSynchronize(st));
    std::vector<std::vector<float>> kref, vref;
    for (int64_t l = 0; l < layers; l += std::max<int64_t>(1, layers - 1)) {
      kref.push_back(host_bf(static_cast<bf16*>(L[l].k_cache) + pos_check * hk * d, hk * d));
      vref.push_back(host_bf(static_cast<bf16*>(L[l].v_cache) + pos_check * hk * d, hk * d));
    }
    const std::vector<float> href = host_bf(h, dim), lref = host_bf(logits_ref, vocab);
    int64_t tref = 0;
    CHECK(cudaMemcpy(&tref, token_ref, 8, cudaMemcpyDeviceToHost));
    mega();
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaGetLastError());
    std::printf("pos %lld:\n", (long long)pos_check);
    size_t i = 0;
    for (int64_t l = 0; l < layers; l += std::max<int64_t>(1, layers - 1), ++i) {
      ok &= compare(("k at pos, layer " + std::to_string(l)).c_str(),
                    kref[i], host_bf(static_cast<bf16*>(L[l].k_cache) + pos_check * hk * d, hk * d)) < 0.05;
      ok &= compare(("v at pos, layer " + std::to_string(l)).c_str(),
                    vref[i], host_bf(static_cast<bf16*>(L[l].v_cache) + pos_check * hk * d, hk * d)) < 0.05;
    }
    ok &= compare("hidden out", href, host_bf(h2, dim)) < 0.05;
    ok &= compare("logits", lref, host_bf(logits, vocab)) < 0.05;
    int64_t tm = 0;
    CHECK(cudaMemcpy(&tm, token, 8, cudaMemcpyDeviceToHost));
    const std::vector<float> lm = host_bf(logits, vocab);
    const int64_t host_arg = std::max_element(lm.begin(), lm.end()) - lm.begin();
    std::printf("  token: reference %lld, step kernel %lld (argmax of its logits on the host %lld)\n", (long long)tref,
                (long long)tm, (long long)host_arg);
    ok &= tm == host_arg;
    // a second step kernel launch: the counters must have been left zero
    mega();
    CHECK(cudaStreamSynchronize(st));
    int64_t tm2 = 0;
    CHECK(cudaMemcpy(&tm2, token, 8, cudaMemcpyDeviceToHost));
    std::printf("  second launch (from its own token): token %lld\n", (long long)tm2);
  }
  std::printf("correctness: %s\n", ok ? "PASS" : "FAIL");
  CHECK(cudaMemcpy(pos, &pos0, 8, cudaMemcpyHostToDevice));

  // ---- the bound: the copy rate, bytes read + written per second (as gpubench's roofline) -------------------
  double copy_gbs = 0;
  {
    const size_t bytes = size_t{1} << 30;
    char *a, *b;
    CHECK(cudaMalloc(&a, bytes)); CHECK(cudaMalloc(&b, bytes));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
    CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, st));
    for (int i = 0; i < 5; ++i) {
      CHECK(cudaEventRecord(e0, st));
      CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, st));
      CHECK(cudaEventRecord(e1, st));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      copy_gbs = std::max(copy_gbs, 2.0 * bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaFree(a)); CHECK(cudaFree(b));
  }
  const int64_t kv_bytes = layers * 2 * (pos0 + 1) * hk * d * 2;
  const double step_bytes = (double)weight_bytes + dim * 2 + kv_bytes;
  const double bound_us = step_bytes / (copy_gbs * 1e9) * 1e6;
  std::printf("copy rate %.0f GB/s; a step reads %.1f MB (weights %.1f, KV %.1f): bound %.1f us (%.0f tokens/s)\n",
              copy_gbs, step_bytes / 1e6, weight_bytes / 1e6, kv_bytes / 1e6, bound_us, 1e6 / bound_us);

  // ---- timing: graphs, alternated ---------------------------------------------------------------------------
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
  {
    Variant v{"multi-kernel step (today's)", nullptr, {}, {}};
    capture(reference, &v.exec);
    vs.push_back(v);
  }
  for (int least : {32, 64}) {
    tuning.min_split = least;
    Variant v{"step kernel, splits >= " + std::to_string(least), nullptr, {}, {}};
    capture(mega, &v.exec);
    vs.push_back(v);
  }
  tuning.min_split = 0;
  std::vector<cudaEvent_t> ev(replays + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (auto& v : vs) {  // warm-up
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
  std::printf("\n%-32s %10s %10s %10s %9s %9s\n", "step", "median us", "mean us", "tokens/s", "of bound", "vs today");
  const double base = [&] { auto m = vs[0].medians; std::sort(m.begin(), m.end()); return m[m.size() / 2]; }();
  const double base_mean = [&] { auto m = vs[0].means; std::sort(m.begin(), m.end()); return m[m.size() / 2]; }();
  for (auto& v : vs) {
    std::sort(v.medians.begin(), v.medians.end());
    std::sort(v.means.begin(), v.means.end());
    const double med = v.medians[v.medians.size() / 2], mean = v.means[v.means.size() / 2];
    std::printf("%-32s %10.1f %10.1f %10.1f %8.1f%% %5.3fx (means %5.3fx)  rounds' medians %.1f-%.1f\n", v.name.c_str(),
                med, mean, 1e6 / med, 100.0 * bound_us / med, base / med, base_mean / mean, v.medians.front(),
                v.medians.back());
  }

  // ---- where the step kernel's time goes: per phase, from the trace ----------------------------------------
  {
    const int G = prop.multiProcessorCount, P = (int)(5 * layers + 1);
    unsigned long long* tr = nullptr;
    CHECK(cudaMalloc(&tr, (size_t)2 * P * G * 8));
    std::vector<unsigned long long> t((size_t)2 * P * G);
    const char* kinds[] = {"q/k/v", "attention", "output", "gate/up", "down", "LM head"};
    const double bytes[] = {(double)(hq + 2 * hk) * d * dim * 2, 0.0, (double)dim * hq * d * 2, 2.0 * ffn * dim * 2,
                            (double)dim * ffn * 2, (double)vocab * dim * 2};
    double span[6] = {}, seen[6] = {}, work_med[6] = {}, work_max[6] = {}, first_work[6] = {};
    int count[6] = {};
    const int reps = 5;
    for (int r = 0; r < reps; ++r) {
      CHECK(cudaMemset(tr, 0, (size_t)2 * P * G * 8));
      s.trace = tr;
      mega();
      s.trace = nullptr;
      CHECK(cudaStreamSynchronize(st));
      CHECK(cudaMemcpy(t.data(), tr, t.size() * 8, cudaMemcpyDeviceToHost));
      auto at = [&](int slot, int b) { return t[(size_t)slot * G + b]; };
      unsigned long long start = ~0ull;
      for (int b = 0; b < G; ++b) start = std::min(start, at(0, b));
      unsigned long long ready = start;
      for (int i = 0; i < P; ++i) {
        const int kind = i == P - 1 ? 5 : i % 5;
        unsigned long long last = 0;
        std::vector<double> seen_b, work_b;
        for (int b = 0; b < G; ++b) {
          last = std::max(last, at(2 * i + 1, b));
          const unsigned long long w = at(2 * i, b);
          if (w != 0 && i > 0) {
            seen_b.push_back((double)w - (double)ready);
            work_b.push_back((double)at(2 * i + 1, b) - (double)w);
          }
        }
        std::sort(seen_b.begin(), seen_b.end());
        std::sort(work_b.begin(), work_b.end());
        span[kind] += (double)(last - ready);
        if (!seen_b.empty()) {
          seen[kind] += seen_b[seen_b.size() / 2];
          work_med[kind] += work_b[work_b.size() / 2];
          work_max[kind] += work_b.back();
          first_work[kind] += work_b.front();
        }
        ++count[kind];
        ready = last;
      }
      if (r == reps - 1) std::printf("\ntraced step: %.1f us from the first block's start to the last arrival\n", (ready - start) / 1e3);
    }
    std::printf("%-10s %6s %10s %12s %12s %12s %12s %10s\n", "phase", "count", "span us", "seen med us", "work min us",
                "work med us", "work max us", "GB/s");
    double sum = 0;
    for (int k = 0; k < 6; ++k) {
      const double n = count[k];
      if (n == 0) continue;
      sum += span[k] / reps;
      std::printf("%-10s %6d %10.2f %12.2f %12.2f %12.2f %12.2f %10.0f\n", kinds[k], count[k] / reps, span[k] / n / 1e3,
                  seen[k] / n / 1e3, first_work[k] / n / 1e3, work_med[k] / n / 1e3, work_max[k] / n / 1e3,
                  bytes[k] > 0 ? bytes[k] / (span[k] / n) : 0.0);
    }
    std::printf("phases' spans summed: %.1f us (per step, mean of %d traced steps)\n", sum / 1e3, reps);
  }
  return ok ? 0 : 3;
}
