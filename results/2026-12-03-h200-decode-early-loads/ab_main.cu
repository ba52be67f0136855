// Whole decode steps (TinyLlama-1.1B and GPT-2 shapes, one sequence, random weights) by several versions of
// decode_kernels.cu linked into one binary (build.sh compiles each into a namespace of its own), each a CUDA graph,
// replayed alternately. Correctness: every variant's hidden state and logits after one step equal the first's bit
// for bit. Timing: medians of per-replay times, and means of each round's total.
//   ab_bench [tiny_layers] [gpt2_layers] [window] [pos] [rounds] [replays]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ab_common.h"

AB_DECLARE(v_old)
AB_DECLARE(v_early)
AB_DECLARE(v_new)

// The variants' names in the tables (another experiment's build.sh may link other kernels into the same slots).
#ifndef AB_LABEL_OLD
#define AB_LABEL_OLD "old (370b866)"
#define AB_LABEL_EARLY "early loads"
#define AB_LABEL_NEW "early loads + evict_first"
#endif

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

namespace {
cudaStream_t st;
uint32_t seed = 100;
bf16* weight(int64_t n, float scale, float offset = 0.0f) {
  bf16* p = nullptr;
  CHECK(cudaMalloc(&p, n * 2));
  fill<<<1024, 256, 0, st>>>(p, n, seed++, scale, offset);
  CHECK(cudaGetLastError());
  return p;
}
template <typename T>
T* buffer(int64_t n) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  CHECK(cudaMemset(p, 0, n * sizeof(T)));
  return p;
}
std::vector<uint16_t> bits(const bf16* p, int64_t n) {
  std::vector<uint16_t> b(n);
  CHECK(cudaMemcpy(b.data(), p, n * 2, cudaMemcpyDeviceToHost));
  return b;
}
double mid(std::vector<double> m) {
  std::sort(m.begin(), m.end());
  return m[m.size() / 2];
}

struct Variant {
  std::string name;
  std::function<void()> step;
};

/// Checks every variant against the first, then times them alternately; false if any differs.
bool compare(const char* title, std::vector<Variant>& vs, const bf16* h, int64_t dim, const bf16* logits,
             int64_t vocab, int rounds, int replays) {
  bool ok = true;
  std::printf("\n%s\n", title);
  vs.front().step();
  CHECK(cudaStreamSynchronize(st));
  const auto h_ref = bits(h, dim), l_ref = bits(logits, vocab);
  for (auto& v : vs) {
    v.step();
    CHECK(cudaStreamSynchronize(st));
    const bool same = bits(h, dim) == h_ref && bits(logits, vocab) == l_ref;
    std::printf("  %-28s %s\n", v.name.c_str(), same ? "same hidden state and logits" : "DIFFERENT");
    ok &= same;
  }
  struct Timed { cudaGraphExec_t exec; std::vector<double> medians, means; };
  std::vector<Timed> ts;
  for (auto& v : vs) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    v.step();
    CHECK(cudaStreamEndCapture(st, &g));
    Timed t{};
    CHECK(cudaGraphInstantiate(&t.exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    ts.push_back(t);
  }
  std::vector<cudaEvent_t> ev(replays + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (auto& t : ts) {
    for (int i = 0; i < 20; ++i) CHECK(cudaGraphLaunch(t.exec, st));
  }
  CHECK(cudaStreamSynchronize(st));
  for (int r = 0; r < rounds; ++r) {
    for (auto& t : ts) {
      CHECK(cudaEventRecord(ev[0], st));
      for (int i = 0; i < replays; ++i) {
        CHECK(cudaGraphLaunch(t.exec, st));
        CHECK(cudaEventRecord(ev[i + 1], st));
      }
      CHECK(cudaEventSynchronize(ev[replays]));
      std::vector<double> x(replays);
      for (int i = 0; i < replays; ++i) {
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        x[i] = ms * 1e3;
      }
      float all = 0;
      CHECK(cudaEventElapsedTime(&all, ev[0], ev[replays]));
      t.medians.push_back(mid(x));
      t.means.push_back(all * 1e3 / replays);
    }
  }
  std::printf("  %-28s %10s %10s %10s\n", "variant", "median us", "mean us", "vs first");
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& t = ts[i];
    std::printf("  %-28s %10.1f %10.1f %8.3fx (means %5.3fx)  rounds' medians %.1f-%.1f\n", vs[i].name.c_str(),
                mid(t.medians), mid(t.means), mid(ts[0].medians) / mid(t.medians), mid(ts[0].means) / mid(t.means),
                *std::min_element(t.medians.begin(), t.medians.end()),
                *std::max_element(t.medians.begin(), t.medians.end()));
  }
  for (auto& e : ev) CHECK(cudaEventDestroy(e));
  return ok;
}
}  // namespace

int main(int argc, char** argv) {
  const int64_t tiny_layers = argc > 1 ? std::atoll(argv[1]) : 22;
  const int64_t gpt2_layers = argc > 2 ? std::atoll(argv[2]) : 12;
  const int64_t window = argc > 3 ? std::atoll(argv[3]) : 640;
  const int64_t pos0 = argc > 4 ? std::atoll(argv[4]) : 576;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 5;
  const int replays = argc > 6 ? std::atoi(argv[6]) : 200;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs, L2 %d MB; window %lld, position %lld, %d rounds of %d replays\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, (long long)window, (long long)pos0, rounds, replays);
  const size_t scratch = v_new::argmax_scratch();
  bool ok = true;
  {
    Tiny m;
    using M = Tiny;
    m.positions = window;
    m.window = window;
    m.layers.resize(tiny_layers);
    for (auto& l : m.layers) {
      l.n1 = weight(M::dim, 0.1f, 1.0f);
      l.wq = weight(M::hq * M::d * M::dim, 0.035f);
      l.wk = weight(M::hk * M::d * M::dim, 0.035f);
      l.wv = weight(M::hk * M::d * M::dim, 0.035f);
      l.wo = weight(M::dim * M::hq * M::d, 0.035f);
      l.n2 = weight(M::dim, 0.1f, 1.0f);
      l.wg = weight(M::ffn * M::dim, 0.035f);
      l.wu = weight(M::ffn * M::dim, 0.035f);
      l.wd = weight(M::dim * M::ffn, 0.02f);
      l.kc = weight(m.positions * M::hk * M::d, 1.0f);
      l.vc = weight(m.positions * M::hk * M::d, 1.0f);
    }
    m.embed = weight(M::vocab * M::dim, 0.02f);
    m.final_norm = weight(M::dim, 0.1f, 1.0f);
    m.lm_head = weight(M::vocab * M::dim, 0.035f);
    m.cos = weight(m.positions * M::d, 0.5f, 0.5f);
    m.sin = weight(m.positions * M::d, 0.5f, 0.0f);
    m.h = buffer<bf16>(M::dim); m.h2 = buffer<bf16>(M::dim); m.q = buffer<bf16>(M::hq * M::d);
    m.attn = buffer<bf16>(M::hq * M::d); m.mlp = buffer<bf16>(M::ffn); m.logits = buffer<bf16>(M::vocab);
    m.token = buffer<int64_t>(1); m.pos = buffer<int64_t>(1);
    CHECK(cudaMemcpy(m.pos, &pos0, 8, cudaMemcpyHostToDevice));
    m.scratch_v = buffer<float>(scratch); m.scratch_i = buffer<int64_t>(scratch);
    std::vector<Variant> vs = {{AB_LABEL_OLD, [&] { v_old::tiny_step(m, st); }},
                               {AB_LABEL_EARLY, [&] { v_early::tiny_step(m, st); }},
                               {AB_LABEL_NEW, [&] { v_new::tiny_step(m, st); }},
                               {AB_LABEL_OLD ", again", [&] { v_old::tiny_step(m, st); }}};
    char title[128];
    std::snprintf(title, sizeof title, "TinyLlama shapes, %lld layers", (long long)tiny_layers);
    ok &= compare(title, vs, m.h, M::dim, m.logits, M::vocab, rounds, replays);
  }
  {
    Gpt2 m;
    using M = Gpt2;
    m.positions = window;
    m.window = window;
    m.layers.resize(gpt2_layers);
    for (auto& l : m.layers) {
      l.ln1w = weight(M::dim, 0.1f, 1.0f); l.ln1b = weight(M::dim, 0.1f);
      l.wqkv = weight(3 * M::dim * M::dim, 0.035f); l.bqkv = weight(3 * M::dim, 0.1f);
      l.wo = weight(M::dim * M::dim, 0.035f); l.bo = weight(M::dim, 0.1f);
      l.ln2w = weight(M::dim, 0.1f, 1.0f); l.ln2b = weight(M::dim, 0.1f);
      l.wfc = weight(M::ffn * M::dim, 0.035f); l.bfc = weight(M::ffn, 0.1f);
      l.wproj = weight(M::dim * M::ffn, 0.02f); l.bproj = weight(M::dim, 0.1f);
      l.kc = weight(m.positions * M::heads * M::d, 1.0f);
      l.vc = weight(m.positions * M::heads * M::d, 1.0f);
    }
    m.wte = weight(M::vocab * M::dim, 0.035f);
    m.lnfw = weight(M::dim, 0.1f, 1.0f); m.lnfb = weight(M::dim, 0.1f);
    m.h = buffer<bf16>(M::dim); m.h2 = buffer<bf16>(M::dim); m.qkv = buffer<bf16>(3 * M::dim);
    m.ctx = buffer<bf16>(M::dim); m.act = buffer<bf16>(M::ffn); m.logits = buffer<bf16>(M::vocab);
    m.token = buffer<int64_t>(1); m.pos = buffer<int64_t>(1);
    CHECK(cudaMemcpy(m.pos, &pos0, 8, cudaMemcpyHostToDevice));
    m.scratch_v = buffer<float>(scratch); m.scratch_i = buffer<int64_t>(scratch);
    std::vector<Variant> vs = {{AB_LABEL_OLD, [&] { v_old::gpt2_step(m, st); }},
                               {AB_LABEL_EARLY, [&] { v_early::gpt2_step(m, st); }},
                               {AB_LABEL_NEW, [&] { v_new::gpt2_step(m, st); }},
                               {AB_LABEL_OLD ", again", [&] { v_old::gpt2_step(m, st); }}};
    char title[128];
    std::snprintf(title, sizeof title, "GPT-2 shapes, %lld layers", (long long)gpt2_layers);
    ok &= compare(title, vs, m.h, M::dim, m.logits, M::vocab, rounds, replays);
  }
  std::printf("\ncorrectness: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 3;
}
