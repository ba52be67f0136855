// L2 prefetch of a later kernel's weights in TinyLlama's multi-kernel decode step (decode_kernels.cu's launchers in
// decoder.cpp's order, 22 layers, the cluster attention), standalone (CUDA runtime only). Why: in a step of ~1.03 ms
// against a ~0.54 ms bound, the layer's ~88 MB of weights stream in ~21 us of its ~45; memory is idle while the
// q/k/v product's tail, the attention and the output product run. Here a kernel asks L2 for (the first part of each
// warp's run of) a later product's weights before its own wait (DecodePrefetch), so that the later product finds
// them there. Each configuration is a CUDA graph of the whole step; the graphs are alternated.
//  1. correctness: every configuration's hidden state after a step equals the plain step's bit for bit (a prefetch
//     never changes a result);
//  2. timing: rounds x replays of each graph, medians and means.
//   prefetch_bench [layers] [window] [pos] [rounds] [replays] [config ...]
//   config: comma-separated SOURCE>TARGET=FRACTION, SOURCE one of qkv, attn, o, gu, down; TARGET one of gu, down,
//   next (the next layer's q/k/v and output weights), lm (the LM head, from the last layer's down only), e.g.
//   "attn>gu=0.5,gu>down=0.5"; a fraction ending in L asks by 128-byte line prefetches from the threads instead of
//   the copy engine (DecodePrefetch::lines); "none" is the plain step.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
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

/// A configuration: fraction per (source kernel, target weights).
struct Config {
  std::string name;
  std::map<std::string, float> f;  // "attn>gu" -> 0.5
  std::map<std::string, bool> lines;  // "attn>gu=0.5L": by 128-byte line prefetches (DecodePrefetch::lines)
  float get(const char* key) const {
    auto it = f.find(key);
    return it == f.end() ? 0.0f : it->second;
  }
};

static Config parse(const std::string& s) {
  Config c{s, {}};
  if (s == "none") return c;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) { std::fprintf(stderr, "bad config item %s\n", item.c_str()); std::exit(2); }
    c.f[item.substr(0, eq)] = std::strtof(item.c_str() + eq + 1, nullptr);
    c.lines[item.substr(0, eq)] = item.back() == 'L';
    at = end + 1;
  }
  return c;
}

int main(int argc, char** argv) {
  const int64_t layers = argc > 1 ? std::atoll(argv[1]) : 22;
  const int64_t window = argc > 2 ? std::atoll(argv[2]) : 640;
  const int64_t pos0 = argc > 3 ? std::atoll(argv[3]) : 576;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const int replays = argc > 5 ? std::atoi(argv[5]) : 200;
  std::vector<Config> configs;
  for (int i = 6; i < argc; ++i) configs.push_back(parse(argv[i]));
  if (configs.empty()) {
    for (const char* s : {"none", "attn>gu=0.5", "attn>gu=1", "o>gu=0.5", "o>gu=1", "qkv>gu=0.5",
                          "attn>gu=0.5,gu>down=0.5", "attn>gu=1,gu>down=1", "attn>gu=0.5,down>next=1",
                          "attn>gu=0.5,gu>down=0.5,down>next=1", "attn>gu=1,gu>down=1,down>next=1",
                          "attn>gu=0.75,gu>down=0.5,down>next=1,down>lm=0.3"}) {
      configs.push_back(parse(s));
    }
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

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
  float* sv;
  int64_t* si;
  CHECK(cudaMalloc(&sv, decode_argmax_scratch(1) * 4)); CHECK(cudaMalloc(&si, decode_argmax_scratch(1) * 8));
  const DType bf = DType::kBFloat16;
  int cs = 0, cper = 0;
  if (!decode_attention_cluster_plan(hq, hk, d, window, &cs, &cper)) {
    std::fprintf(stderr, "cluster form does not serve\n");
    return 1;
  }
  // what each target is, as its reader reads it
  auto gate_up = [&](const Layer& l, float f) {
    DecodePrefetch p;
    p.weights.w[0] = l.wg; p.weights.w[1] = l.wu; p.weights.rows[0] = p.weights.rows[1] = ffn; p.weights.count = 2;
    p.k = dim; p.runs = decode_product_runs(true, ffn); p.fraction = f;
    return p;
  };
  auto down = [&](const Layer& l, float f) {
    DecodePrefetch p;
    p.weights.w[0] = l.wd; p.weights.rows[0] = dim; p.weights.count = 1;
    p.k = ffn; p.runs = decode_product_runs(true, dim); p.fraction = f;
    return p;
  };
  // the next layer's q/k/v and output weights: one prefetch of four blocks is not expressible (three at most), so
  // q, k, v here, and the output product's with them when there is room: q/k/v as the streamed GEMV reads them
  auto next_qkv = [&](const Layer& l, float f) {
    DecodePrefetch p;
    p.weights.w[0] = l.wq; p.weights.w[1] = l.wk; p.weights.w[2] = l.wv;
    p.weights.rows[0] = hq * d; p.weights.rows[1] = p.weights.rows[2] = hk * d; p.weights.count = 3;
    p.k = dim; p.runs = 1; p.fraction = f;
    return p;
  };
  auto lm = [&](float f) {
    DecodePrefetch p;
    p.weights.w[0] = lm_head; p.weights.rows[0] = vocab; p.weights.count = 1;
    p.k = dim; p.runs = decode_product_runs(true, vocab); p.fraction = f;
    return p;
  };
  auto step = [&](const Config& c) {
    CHECK(cudaMemcpyAsync(h, embed + t0 * dim, dim * 2, cudaMemcpyDeviceToDevice, st));
    for (size_t i = 0; i < L.size(); ++i) {
      const Layer& l = L[i];
      const Layer* nx = i + 1 < L.size() ? &L[i + 1] : nullptr;
      auto target = [&](const std::string& src) {  // the first target this source prefetches (one per kernel)
        for (const char* t : {"gu", "down", "next", "lm"}) {
          const std::string key = src + ">" + t;
          const float f = c.get(key.c_str());
          if (f <= 0.0f) continue;
          DecodePrefetch p;
          if (!std::strcmp(t, "gu")) p = gate_up(l, f);
          if (!std::strcmp(t, "down")) p = down(l, f);
          if (!std::strcmp(t, "next") && nx != nullptr) p = next_qkv(*nx, f);
          if (!std::strcmp(t, "lm") && nx == nullptr) p = lm(f);
          if (p.weights.count == 0) continue;
          p.lines = c.lines.count(key) > 0 && c.lines.at(key);
          return p;
        }
        return DecodePrefetch{};
      };
      DecodeWeights qkv;
      qkv.w[0] = l.wq; qkv.w[1] = l.wk; qkv.w[2] = l.wv;
      qkv.rows[0] = hq * d; qkv.rows[1] = hk * d; qkv.rows[2] = hk * d; qkv.count = 3;
      DecodeCacheWrite cw;
      cw.cos = cos_t; cw.sin = sin_t; cw.pos = pos; cw.q_out = q; cw.k_cache = l.kc; cw.v_cache = l.vc;
      cw.positions = positions; cw.q_heads = hq; cw.kv_heads = hk; cw.head_dim = d;
      DecodeInputNorm n1;
      n1.weight = l.n1; n1.eps = 1e-5f; n1.rms = true;
      CHECK(launch_decode_stream_qkv_to_cache(h, dim, qkv, nullptr, cw, bf, 1, dim, st, n1, target("qkv")));
      DecodeAttentionInput in;
      in.q = q; in.q_stride = hq * d; in.k_cache = l.kc; in.v_cache = l.vc;
      in.prefetch = target("attn");
      CHECK(launch_decode_attention_cluster(in, pos, attn, bf, 1, positions, hq, hk, d, cs, cper, st));
      DecodeWeights wo;
      wo.w[0] = l.wo; wo.rows[0] = dim; wo.count = 1;
      CHECK(launch_decode_stream_gemv(attn, hq * d, wo, nullptr, h, h2, bf, 1, dim, hq * d, DecodeActivation::kNone,
                                      st, DecodeInputNorm{}, target("o")));
      DecodeWeights gu;
      gu.w[0] = l.wg; gu.w[1] = l.wu; gu.rows[0] = gu.rows[1] = ffn; gu.count = 2;
      DecodeInputNorm n2;
      n2.weight = l.n2; n2.eps = 1e-5f; n2.rms = true;
      CHECK(launch_decode_run_gemv(h2, dim, gu, nullptr, nullptr, mlp, bf, 1, ffn, dim, DecodeActivation::kSwiglu, st,
                                   n2, target("gu")));
      DecodeWeights wd;
      wd.w[0] = l.wd; wd.rows[0] = dim; wd.count = 1;
      CHECK(launch_decode_run_gemv(mlp, ffn, wd, nullptr, h2, h, bf, 1, dim, ffn, DecodeActivation::kNone, st,
                                   DecodeInputNorm{}, target("down")));
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

  // ---- 1. correctness: the same hidden state and logits, bit for bit ----------------------------------------------
  bool ok = true;
  step(configs.front());
  CHECK(cudaStreamSynchronize(st));
  const auto h_ref = host_bits(h, dim), logits_ref = host_bits(logits, vocab);
  for (const auto& c : configs) {
    step(c);
    CHECK(cudaStreamSynchronize(st));
    const bool same = host_bits(h, dim) == h_ref && host_bits(logits, vocab) == logits_ref;
    std::printf("%-60s %s\n", c.name.c_str(), same ? "same hidden state and logits" : "DIFFERENT");
    ok &= same;
  }
  std::printf("correctness: %s\n", ok ? "PASS" : "FAIL");

  // ---- 2. timing -------------------------------------------------------------------------------------------------
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
  for (const auto& c : configs) {
    Variant x{c.name, nullptr, {}, {}};
    capture([&] { step(c); }, &x.exec);
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
  std::printf("\nTinyLlama shapes, %lld layers, window %lld, pos %lld, cluster attention (%d splits); %d rounds of %d "
              "replays, alternated\n",
              (long long)layers, (long long)window, (long long)pos0, cs, rounds, replays);
  std::printf("%-60s %10s %10s %12s\n", "prefetch (source>target=fraction)", "median us", "mean us", "vs none");
  auto mid = [](std::vector<double> m) { std::sort(m.begin(), m.end()); return m[m.size() / 2]; };
  for (const auto& v : vs) {
    const auto& base = vs[0];
    std::printf("%-60s %10.1f %10.1f %6.3fx (means %5.3fx)  rounds' medians %.1f-%.1f\n", v.name.c_str(),
                mid(v.medians), mid(v.means), mid(base.medians) / mid(v.medians), mid(base.means) / mid(v.means),
                *std::min_element(v.medians.begin(), v.medians.end()),
                *std::max_element(v.medians.begin(), v.medians.end()));
  }
  return ok ? 0 : 3;
}
