// mode: generate with `kernels: fused`: the decode step's operations (decode/decode_ops.h). On the CPU their ATen
// forms against the definitions; in the *_CUDA tests gpubench's decode kernels against those ATen forms, on shapes
// the kernels take and on shapes they hand back to ATen (rows beyond 8, a width not a multiple of 8).

#include <gtest/gtest.h>

#include <algorithm>

#include <torch/torch.h>

#include "decode/decode_ops.h"
#include "device.h"
#include "fused/fused_ops.h"
#include "gpubench/engine/engine.hpp"
#include "models/decoder.h"
#include "models/registry.h"

namespace gpubench::engine {
namespace {

using fused::DecodeAct;

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kCPU, at::kFloat) - b.to(at::kCPU, at::kFloat)).abs().max().item<double>();
}
double scale(const at::Tensor& a) { return a.to(at::kFloat).abs().max().item<double>() + 1e-12; }

TEST(DecodeOpsTest, DecodeLinearIsTheConcatenatedProductWithItsEpilogue) {
  torch::manual_seed(3);
  const at::Tensor x = torch::randn({3, 24}), r = torch::randn({3, 32});
  const at::Tensor wq = torch::randn({16, 24}), wk = torch::randn({8, 24}), wv = torch::randn({8, 24});
  const at::Tensor bias = torch::randn({32});
  const at::Tensor qkv = fused::decode_linear(x, {wq, wk, wv}, {}, DecodeAct::kNone, {});
  EXPECT_LT(max_diff(qkv, at::cat({x.matmul(wq.t()), x.matmul(wk.t()), x.matmul(wv.t())}, 1)), 1e-5);
  const at::Tensor wide = at::cat({wq, wk, wv}, 0);
  const at::Tensor g = fused::decode_linear(x, {wide}, bias, DecodeAct::kGeluTanh, r);
  EXPECT_LT(max_diff(g, at::gelu(x.matmul(wide.t()) + bias, "tanh") + r), 1e-5);
  const at::Tensor s = fused::decode_linear(x, {wq, wq * 0.5}, {}, DecodeAct::kSwiglu, {});
  EXPECT_LT(max_diff(s, at::silu(x.matmul(wq.t())) * x.matmul(wq.t()) * 0.5), 1e-5);
  EXPECT_THROW(fused::decode_linear(x, {wq}, {}, DecodeAct::kSwiglu, {}), std::invalid_argument);
}

TEST(DecodeOpsTest, QkvToCacheRotatesAsTheFusedRotaryAndWritesOnlyThePosition) {
  torch::manual_seed(5);
  const int64_t b = 2, hq = 4, hk = 2, d = 8, positions = 10;
  const at::Tensor qkv = torch::randn({b, (hq + 2 * hk) * d});
  const at::Tensor cos = torch::randn({positions, d}), sin = torch::randn({positions, d});
  at::Tensor kc = torch::zeros({b, positions, hk, d}), vc = torch::zeros({b, positions, hk, d});
  at::Tensor used = torch::zeros({b}, torch::kInt);
  const at::Tensor pos = torch::full({1}, 6, torch::kLong);
  const at::Tensor q = fused::decode_qkv_to_cache(qkv, hq, hk, cos, sin, pos, kc, vc, used);
  const auto [q_ref, k_ref] = fused::rotary(qkv.narrow(1, 0, hq * d).reshape({b, 1, hq, d}),
                                            qkv.narrow(1, hq * d, hk * d).reshape({b, 1, hk, d}),
                                            cos.narrow(0, 6, 1), sin.narrow(0, 6, 1));
  EXPECT_LT(max_diff(q, q_ref.squeeze(1)), 1e-6);
  EXPECT_LT(max_diff(kc.select(1, 6), k_ref.squeeze(1)), 1e-6);
  EXPECT_LT(max_diff(vc.select(1, 6), qkv.narrow(1, (hq + hk) * d, hk * d).reshape({b, hk, d})), 1e-6);
  EXPECT_EQ(kc.abs().sum(1).ne(0).sum().item<int64_t>(), kc.select(1, 6).ne(0).sum().item<int64_t>())
      << "no position but 6 written";
  EXPECT_TRUE(used.equal(torch::full({b}, 7, torch::kInt)));
  // Without tables (GPT-2): q, k and v as they are.
  at::Tensor kc2 = torch::zeros_like(kc), vc2 = torch::zeros_like(vc);
  const at::Tensor q2 = fused::decode_qkv_to_cache(qkv, hq, hk, {}, {}, pos, kc2, vc2, {});
  EXPECT_TRUE(q2.equal(qkv.narrow(1, 0, hq * d).reshape({b, hq, d})));
  EXPECT_THROW(fused::decode_qkv_to_cache(qkv.narrow(1, 0, 40), hq, hk, {}, {}, pos, kc2, vc2, {}),
               std::invalid_argument);
}

/// The one-launch q/k/v product into the cache is a kernel only: on the CPU it hands the work back (undefined), and
/// the caller's two steps run.
TEST(DecodeOpsTest, QkvProductIntoTheCacheIsLeftToTheTwoStepsOffTheGpu) {
  const at::Tensor x = torch::randn({1, 16}), w = torch::randn({32, 16});
  at::Tensor kc = torch::zeros({1, 4, 1, 8}), vc = torch::zeros_like(kc);
  const at::Tensor pos = torch::full({1}, 1, torch::kLong);
  const at::Tensor q = fused::decode_qkv_linear_to_cache(x, {w}, {}, {}, 2, 1, {}, {}, pos, kc, vc, {});
  EXPECT_FALSE(q.defined());
  EXPECT_EQ(kc.abs().sum().item<double>(), 0.0) << "nothing written";
}

/// So is the attention that takes q, k and v straight from the product: nothing is written on the CPU.
TEST(DecodeOpsTest, AttentionFromTheQkvProductIsLeftToTheTwoStepsOffTheGpu) {
  const at::Tensor qkv = torch::randn({1, 4 * 8});
  at::Tensor kc = torch::zeros({1, 4, 1, 8}), vc = torch::zeros_like(kc);
  const at::Tensor pos = torch::full({1}, 1, torch::kLong);
  EXPECT_FALSE(fused::decode_qkv_attention(qkv, 2, 1, pos, 4, kc, vc, {}).defined());
  EXPECT_EQ(kc.abs().sum().item<double>() + vc.abs().sum().item<double>(), 0.0) << "nothing written";
}

/// A reduced decoder generating with kernels: fused on the CPU: the record lists the decode operations, run by ATen
/// here (and says so), and notes the generated tokens; gpt2 generates with them too.
TEST(DecodeOpsTest, GenerateWithFusedKernelsListsTheDecodeOperations) {
  for (const std::string model : {"llama", "gpt2"}) {
    Scenario s;
    s.model = model;
    s.device = "cpu";
    s.kernels = "fused";
    s.mode = "generate";
    s.model_options = model == "llama" ? nlohmann::json{{"layers", 1}, {"hidden", 32}, {"heads", 4}, {"kv_heads", 2},
                                                        {"intermediate", 48}, {"vocab", 101}, {"seq_len", 24}}
                                       : nlohmann::json{{"layers", 1}, {"width", 32}, {"heads", 4}, {"vocab", 101},
                                                        {"seq_len", 24}};
    s.batch_size = 2;
    s.prompt_tokens = 8;
    s.new_tokens = 6;
    s.epochs = 2;
    RunObserver quiet;
    const RunRecord r = run_benchmark(s, quiet, RunOptions{});
    ASSERT_EQ(r.status, RunStatus::kOk) << model << ": " << r.reason;
    // The tokens in the notes (the first generation's), and no later generation that differs from it.
    const auto has = [&r](const std::string& text) {
      return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != n.npos; });
    };
    EXPECT_TRUE(has("generated tokens: sequence 0 begins [")) << model;
    EXPECT_TRUE(has("FNV-1a digest of all 12 new tokens")) << model;
    EXPECT_FALSE(has("differ from the first")) << model;
    std::vector<std::string> names;
    for (const auto& f : r.execution.fusions) {
      names.push_back(f.name);
      if (f.name.rfind("decode_", 0) == 0) EXPECT_EQ(f.implementation, "aten") << f.name;
    }
    for (const char* n : {"decode_embed", "decode_gemv", "decode_norm", "decode_qkv_cache", "decode_attention",
                          "decode_argmax"}) {
      EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << model << " lists " << n;
    }
  }
}

// ---- the CUDA kernels --------------------------------------------------------------------------------------------

bool kernels_here() { return torch::cuda::is_available() && fused::cuda_kernels_compiled(); }

/// Which sm_90 GEMV takes every product it can for a scope: kStream the streamed GEMV (the run GEMV off), kRun the run
/// GEMV, kDefault each where it pays (by default only large products at one token); the modes before are restored.
enum class Gemv { kDefault, kStream, kRun };
class GemvEverywhere {
 public:
  explicit GemvEverywhere(Gemv g) : stream_(fused::decode_stream_mode()), run_(fused::decode_run_mode()) {
    if (g == Gemv::kStream) {
      fused::set_decode_stream_mode(fused::DecodeKernelMode::kEverywhere);
      fused::set_decode_run_mode(fused::DecodeKernelMode::kOff);
    }
    if (g == Gemv::kRun) fused::set_decode_run_mode(fused::DecodeKernelMode::kEverywhere);
  }
  ~GemvEverywhere() {
    fused::set_decode_stream_mode(stream_);
    fused::set_decode_run_mode(run_);
  }
  GemvEverywhere(const GemvEverywhere&) = delete;
  GemvEverywhere& operator=(const GemvEverywhere&) = delete;

 private:
  fused::DecodeKernelMode stream_, run_;
};

std::string gemv_label(Gemv g) {
  return g == Gemv::kStream ? " (streamed GEMV everywhere)" : g == Gemv::kRun ? " (run GEMV everywhere)" : "";
}

/// The kernel's result (inputs on the GPU in `dtype`) against the ATen form in fp32 on the CPU of the same inputs.
TEST(DecodeOpsTest, DecodeGemvMatchesItsAtenFormForEveryEpilogueAndRowCount_CUDA) {
  if (!kernels_here()) GTEST_SKIP() << "no CUDA device or no kernels in this build";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const Gemv g : {Gemv::kDefault, Gemv::kStream, Gemv::kRun}) {  // up to 4 rows the sm_90 GEMVs
    const GemvEverywhere setting(g);
    for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
      const double tol = dtype == at::kBFloat16 ? 1.6e-2 : 4e-3;  // of the output's largest value: one rounding
      for (const int64_t m : {1, 2, 4, 5, 8, 9}) {  // 9: more than 8 rows, cuBLAS
        for (const int64_t k : {64, 72, 1024, 2056, 100}) {  // 1, 2 and 4 warps per output; 100: ATen
          torch::manual_seed(m * 1000 + k);
          const at::Tensor x = torch::randn({m, k}).to(dtype), r = torch::randn({m, 45}).to(dtype);
          const at::Tensor w1 = (torch::randn({21, k}) / std::sqrt(k)).to(dtype),
                           w2 = (torch::randn({13, k}) / std::sqrt(k)).to(dtype);
          const at::Tensor w3 = (torch::randn({11, k}) / std::sqrt(k)).to(dtype),
                           bias = torch::randn({45}).to(dtype);
          auto f32 = [](const at::Tensor& t) { return t.to(at::kFloat); };
          auto gpu = [&](const at::Tensor& t) { return t.to(cuda.device()); };
          const std::string where = std::string(c10::toString(dtype)) + " m=" + std::to_string(m) +
                                    " k=" + std::to_string(k) + gemv_label(g);
          const at::Tensor concat = fused::decode_linear(gpu(x), {gpu(w1), gpu(w2), gpu(w3)},
                                                         gpu(bias), DecodeAct::kNone, gpu(r));
          const at::Tensor concat_ref = fused::decode_linear(f32(x), {f32(w1), f32(w2), f32(w3)},
                                                             f32(bias), DecodeAct::kNone, f32(r));
          EXPECT_LT(max_diff(concat, concat_ref), tol * scale(concat_ref))
              << "q/k/v + bias + residual, " << where;
          const at::Tensor gelu = fused::decode_linear(
              gpu(x), {gpu(w1)}, gpu(bias.narrow(0, 0, 21)), DecodeAct::kGeluTanh, {});
          const at::Tensor gelu_ref = fused::decode_linear(
              f32(x), {f32(w1)}, f32(bias.narrow(0, 0, 21)), DecodeAct::kGeluTanh, {});
          EXPECT_LT(max_diff(gelu, gelu_ref), tol * scale(gelu_ref)) << "GELU, " << where;
          const at::Tensor w1b = (torch::randn({21, k}) / std::sqrt(k)).to(dtype);
          const at::Tensor glu =
              fused::decode_linear(gpu(x), {gpu(w1), gpu(w1b)}, {}, DecodeAct::kSwiglu, {});
          const at::Tensor glu_ref =
              fused::decode_linear(f32(x), {f32(w1), f32(w1b)}, {}, DecodeAct::kSwiglu, {});
          EXPECT_LT(max_diff(glu, glu_ref), tol * scale(glu_ref)) << "SwiGLU, " << where;
          EXPECT_EQ(glu.scalar_type(), dtype);
          // the input's norm inside the GEMV: RMSNorm (llama) and LayerNorm with its bias (GPT-2)
          const at::Tensor nw = torch::randn({k}).to(dtype), nb = torch::randn({k}).to(dtype);
          const at::Tensor rms = fused::decode_linear(
              gpu(x), {gpu(w1), gpu(w1b)}, {}, DecodeAct::kSwiglu, {}, {gpu(nw), {}, 1e-5, true});
          const at::Tensor rms_ref = fused::decode_linear(
              f32(x), {f32(w1), f32(w1b)}, {}, DecodeAct::kSwiglu, {}, {f32(nw), {}, 1e-5, true});
          EXPECT_LT(max_diff(rms, rms_ref), tol * scale(rms_ref)) << "RMSNorm + SwiGLU, " << where;
          const at::Tensor ln =
              fused::decode_linear(gpu(x), {gpu(w1), gpu(w2), gpu(w3)}, gpu(bias), DecodeAct::kNone,
                                   gpu(r), {gpu(nw), gpu(nb), 1e-5, false});
          const at::Tensor ln_ref =
              fused::decode_linear(f32(x), {f32(w1), f32(w2), f32(w3)}, f32(bias), DecodeAct::kNone,
                                   f32(r), {f32(nw), f32(nb), 1e-5, false});
          EXPECT_LT(max_diff(ln, ln_ref), tol * scale(ln_ref)) << "LayerNorm + q/k/v, " << where;
        }
      }
    }
  }
}

TEST(DecodeOpsTest, DecodeNormAndQkvToCacheMatchTheirAtenForms_CUDA) {
  if (!kernels_here()) GTEST_SKIP() << "no CUDA device or no kernels in this build";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    const double tol = dtype == at::kBFloat16 ? 1.6e-2 : 4e-3;
    for (const int64_t dim : {2048, 77, 1}) {
      torch::manual_seed(dim);
      const at::Tensor x = (torch::randn({3, dim}) * 3 + 1).to(dtype), w = torch::randn({dim}).to(dtype),
                       b = torch::randn({dim}).to(dtype);
      for (const bool rms : {true, false}) {
        const at::Tensor y = fused::decode_norm(x.to(cuda.device()), w.to(cuda.device()),
                                                rms ? at::Tensor() : b.to(cuda.device()), 1e-5, rms);
        const at::Tensor ref = fused::decode_norm(x.to(at::kFloat), w.to(at::kFloat),
                                                  rms ? at::Tensor() : b.to(at::kFloat), 1e-5, rms);
        EXPECT_LT(max_diff(y, ref), tol * scale(ref) + 1e-3) << (rms ? "RMSNorm" : "LayerNorm") << " dim " << dim;
      }
    }
    const int64_t batch = 3, hq = 6, hk = 2, d = 64, positions = 20;
    const at::Tensor qkv = torch::randn({batch, (hq + 2 * hk) * d}).to(dtype);
    const at::Tensor cos = torch::randn({positions, d}).to(dtype), sin = torch::randn({positions, d}).to(dtype);
    for (const bool tables : {true, false}) {
      at::Tensor kc = torch::zeros({batch, positions, hk, d}, cuda.dtype(dtype)), vc = torch::zeros_like(kc);
      at::Tensor used = torch::zeros({batch}, cuda.dtype(torch::kInt));
      at::Tensor kc_ref = torch::zeros({batch, positions, hk, d}), vc_ref = torch::zeros_like(kc_ref);
      const at::Tensor pos = torch::full({1}, 13, torch::kLong);
      const at::Tensor q = fused::decode_qkv_to_cache(qkv.to(cuda.device()), hq, hk,
                                                      tables ? cos.to(cuda.device()) : at::Tensor(),
                                                      tables ? sin.to(cuda.device()) : at::Tensor(),
                                                      pos.to(cuda.device()), kc, vc, used);
      const at::Tensor q_ref = fused::decode_qkv_to_cache(qkv.to(at::kFloat), hq, hk,
                                                          tables ? cos.to(at::kFloat) : at::Tensor(),
                                                          tables ? sin.to(at::kFloat) : at::Tensor(), pos, kc_ref,
                                                          vc_ref, {});
      EXPECT_LT(max_diff(q, q_ref), tol * scale(q_ref)) << "q, tables " << tables;
      EXPECT_LT(max_diff(kc, kc_ref), tol * scale(kc_ref)) << "k cache, tables " << tables;
      EXPECT_LT(max_diff(vc, vc_ref), 1e-6) << "v cache: a copy";
      EXPECT_TRUE(used.cpu().equal(torch::full({batch}, 14, torch::kInt)));
    }
    // The greedy choice over GPT-2's odd vocabulary, with a tie (the first wins, as torch.argmax) in row 1.
    at::Tensor logits = torch::randn({3, 50257}).to(dtype);
    logits.index_put_({1, 777}, 100.0);
    logits.index_put_({1, 40000}, 100.0);
    const at::Tensor chosen = fused::decode_argmax(logits.to(cuda.device()));
    EXPECT_TRUE(chosen.cpu().equal(logits.argmax(-1, true))) << chosen << logits.argmax(-1, true);
    EXPECT_EQ(chosen.cpu()[1].item<int64_t>(), 777);
  }
}

/// Whether the streamed GEMV (sm_90 and later) runs on this GPU.
bool streamed_here() { return kernels_here() && name_and_capability(resolve_device("cuda:0")).second >= 90; }

/// The streamed and the run GEMV over products long enough that every block's ring of slots wraps round and every
/// warp of the run GEMV streams several rows (a q/k/v-sized plain product with its residual, SwiGLU over TinyLlama's
/// 5,632-wide input with an RMSNorm, three rows of GELU with a LayerNorm and bias, four rows over 33,000 outputs),
/// against the ATen form in fp32 of the same inputs.
TEST(DecodeOpsTest, StreamedAndRunGemvsMatchTheirAtenFormOverLongProducts_CUDA) {
  if (!streamed_here()) GTEST_SKIP() << "no sm_90 GPU or no kernels in this build";
  for (const Gemv g : {Gemv::kStream, Gemv::kRun}) {
    const GemvEverywhere setting(g);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
    struct Case {
      int64_t m, n, k;
      DecodeAct act;
      bool norm;
    };
    for (const Case& c :
         {Case{1, 4096, 2048, DecodeAct::kNone, false}, Case{1, 1024, 5632, DecodeAct::kSwiglu, true},
          Case{3, 2000, 768, DecodeAct::kGeluTanh, true}, Case{4, 33000, 256, DecodeAct::kNone, true}}) {
      torch::manual_seed(c.n + c.k);
      const at::ScalarType dtype = at::kBFloat16;
      const at::Tensor x = torch::randn({c.m, c.k}).to(dtype);
      const at::Tensor w1 = (torch::randn({c.n, c.k}) / std::sqrt(c.k)).to(dtype);
      const at::Tensor w2 = (torch::randn({c.n, c.k}) / std::sqrt(c.k)).to(dtype);
      const at::Tensor nw = torch::randn({c.k}).to(dtype), nb = torch::randn({c.k}).to(dtype);
      const at::Tensor bias = torch::randn({c.n}).to(dtype), res = torch::randn({c.m, c.n}).to(dtype);
      const bool glu = c.act == DecodeAct::kSwiglu, gelu = c.act == DecodeAct::kGeluTanh;
      auto run = [&](const at::TensorOptions& o) {
        auto t = [&](const at::Tensor& v) { return v.to(o); };
        const fused::DecodeNorm norm = !c.norm ? fused::DecodeNorm{}
                                       : gelu  ? fused::DecodeNorm{t(nw), t(nb), 1e-5, false}
                                               : fused::DecodeNorm{t(nw), {}, 1e-5, true};
        return fused::decode_linear(t(x), glu ? std::vector<at::Tensor>{t(w1), t(w2)} : std::vector<at::Tensor>{t(w1)},
                                    gelu ? t(bias) : at::Tensor(), c.act,
                                    c.act == DecodeAct::kNone ? t(res) : at::Tensor(), norm);
      };
      const at::Tensor y = run(cuda.dtype(dtype)), ref = run(at::TensorOptions().dtype(at::kFloat));
      EXPECT_LT(max_diff(y, ref), 1.6e-2 * scale(ref)) << "m " << c.m << " n " << c.n << " k " << c.k << gemv_label(g);
    }
  }
}

/// The LM head's launch with greedy decoding's tail (decode_lm_head_greedy) against the same run GEMV's logits and
/// decode_argmax: the same tokens, a tie going to the first column, in the token buffer and in the history at
/// pos - offset (the other columns untouched), the position moved on and the scratch left zero, over launches in a
/// row; GPT-2's odd vocabulary with a LayerNorm, TinyLlama's with an RMSNorm at 2 rows, a small one at 4 rows. Off
/// (set_decode_greedy_tail), nothing runs.
TEST(DecodeOpsTest, LmHeadGreedyTailWritesTheArgmaxAndMovesOn_CUDA) {
  if (!streamed_here()) GTEST_SKIP() << "no sm_90 GPU or no kernels in this build";
  const GemvEverywhere setting(Gemv::kRun);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  const auto ids = cuda.dtype(torch::kLong);
  struct Case {
    int64_t m, n, k;
    bool rms;
  };
  for (const Case& c : {Case{1, 50257, 768, false}, Case{2, 32000, 2048, true}, Case{4, 1000, 256, true}}) {
    torch::manual_seed(c.n + c.m);
    const at::Tensor nw = torch::randn({c.k}), nb = torch::randn({c.k});
    const fused::DecodeNorm norm = c.rms ? fused::DecodeNorm{nw.to(cuda.dtype(at::kBFloat16)), {}, 1e-5, true}
                                         : fused::DecodeNorm{nw.to(cuda.dtype(at::kBFloat16)),
                                                             nb.to(cuda.dtype(at::kBFloat16)), 1e-5, false};
    at::Tensor w = torch::randn({c.n, c.k}) / std::sqrt(c.k);
    at::Tensor token = torch::zeros({c.m, 1}, ids), history = torch::full({c.m, 8}, -1, ids);
    const at::Tensor pos = torch::full({1}, 20, ids), scratch = torch::zeros({c.m + 1}, ids);
    for (int step = 0; step < 3; ++step) {
      const at::Tensor x_cpu = torch::randn({c.m, c.k});
      // Columns 5 and n - 7 of row 0: equal and by far the largest (the first must win).
      const at::Tensor y = fused::decode_norm(x_cpu.narrow(0, 0, 1), nw, c.rms ? at::Tensor() : nb, 1e-5, c.rms);
      const at::Tensor big = (10 * y / y.norm()).squeeze(0);
      w[5].copy_(big);
      w[c.n - 7].copy_(big);
      const at::Tensor x = x_cpu.to(cuda.dtype(at::kBFloat16)), wg = w.to(cuda.dtype(at::kBFloat16));
      const at::Tensor want = fused::decode_argmax(fused::decode_linear(x, {wg}, {}, DecodeAct::kNone, {}, norm));
      ASSERT_EQ(want[0].item<int64_t>(), 5);
      ASSERT_TRUE(fused::decode_lm_head_greedy(x, wg, norm, {token, history, pos, scratch, 18})) << "m " << c.m;
      const std::string at_case = "m " + std::to_string(c.m) + " n " + std::to_string(c.n) + " step " +
                                  std::to_string(step);
      EXPECT_TRUE(token.cpu().equal(want.cpu())) << at_case << ": " << token << want;
      EXPECT_TRUE(history.select(1, 2 + step).cpu().equal(want.squeeze(1).cpu())) << at_case;
      EXPECT_EQ(pos.item<int64_t>(), 21 + step) << at_case;
      EXPECT_EQ(scratch.abs().sum().item<int64_t>(), 0) << at_case << ": the scratch is left zero";
    }
    EXPECT_TRUE(history.narrow(1, 0, 2).eq(-1).all().item<bool>()) << "columns before the offset untouched";
    EXPECT_TRUE(history.narrow(1, 5, 3).eq(-1).all().item<bool>()) << "columns not reached untouched";
    fused::set_decode_greedy_tail(false);
    const at::Tensor x = torch::randn({c.m, c.k}).to(cuda.dtype(at::kBFloat16));
    EXPECT_FALSE(fused::decode_lm_head_greedy(x, w.to(cuda.dtype(at::kBFloat16)), norm,
                                              {token, history, pos, scratch, 18}));
    EXPECT_EQ(pos.item<int64_t>(), 23) << "off: nothing ran";
    fused::set_decode_greedy_tail(true);
  }
}

/// decode_embed: the tokens' rows of the table plus the position's row of the position table (GPT-2), or the rows
/// alone (Llama); on the CPU (ATen's form) against the definition.
TEST(DecodeOpsTest, DecodeEmbedAddsThePositionsRowToTheTokensRows) {
  torch::manual_seed(31);
  const at::Tensor table = torch::randn({50, 16}), positions = torch::randn({20, 16});
  const at::Tensor ids = torch::tensor({7, 0, 49}, torch::kLong).view({3, 1}), pos = torch::full({1}, 11, torch::kLong);
  const at::Tensor h = fused::decode_embed(ids, table, positions, pos);
  ASSERT_EQ(h.sizes(), (at::IntArrayRef{3, 16}));
  EXPECT_TRUE(h[2].equal(table[49] + positions[11]));
  EXPECT_TRUE(fused::decode_embed(ids, table, {}, pos)[0].equal(table[7]));
}

/// decode_embed's kernel against its ATen form, bit for bit (one rounding of the fp32 sum either way): GPT-2's width
/// with its position table, TinyLlama's without, 1 and 3 rows; an id outside the table gives a zero row.
TEST(DecodeOpsTest, DecodeEmbedKernelMatchesItsAtenForm_CUDA) {
  if (!kernels_here()) GTEST_SKIP() << "no CUDA device or no kernels in this build";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const int64_t dim : {768, 2048}) {
    torch::manual_seed(dim);
    const at::Tensor table = torch::randn({1000, dim}, cuda).to(at::kBFloat16);
    const at::Tensor positions = dim == 768 ? torch::randn({64, dim}, cuda).to(at::kBFloat16) : at::Tensor();
    const at::Tensor pos = torch::full({1}, 37, cuda.dtype(torch::kLong));
    for (const int64_t m : {1, 3}) {
      const at::Tensor ids = torch::randint(0, 1000, {m, 1}, cuda.dtype(torch::kLong));
      const at::Tensor got = fused::decode_embed(ids, table, positions, pos);
      fused::set_decode_embed_kernel(false);
      const at::Tensor want = fused::decode_embed(ids, table, positions, pos);
      fused::set_decode_embed_kernel(true);
      EXPECT_TRUE(got.equal(want)) << "dim " << dim << " rows " << m;
    }
    const at::Tensor outside = torch::full({1, 1}, 1000, cuda.dtype(torch::kLong));
    EXPECT_EQ(fused::decode_embed(outside, table, {}, pos).abs().sum().item<float>(), 0.0f) << "dim " << dim;
  }
}

/// The q/k/v product straight into the cache (one streamed GEMV) against the product then the cache write in fp32:
/// llama's shape (grouped kv heads, rotary tables, RMSNorm) and GPT-2's (bias, LayerNorm, no tables), 1 to 4 rows.
TEST(DecodeOpsTest, QkvProductIntoTheCacheMatchesTheTwoSteps_CUDA) {
  if (!streamed_here()) GTEST_SKIP() << "no sm_90 GPU or no kernels in this build";
  const GemvEverywhere setting(Gemv::kStream);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  const at::ScalarType dtype = at::kBFloat16;
  for (const bool llama : {true, false}) {
    for (const int64_t m : {1, 2, 4}) {
      const int64_t hq = llama ? 8 : 4, hk = llama ? 2 : 4, d = 64, k = 512, positions = 16, n = (hq + 2 * hk) * d;
      torch::manual_seed(m * 10 + llama);
      const at::Tensor x = torch::randn({m, k}).to(dtype), nw = torch::randn({k}).to(dtype);
      const at::Tensor nb = torch::randn({k}).to(dtype), bias = torch::randn({n}).to(dtype);
      const at::Tensor wq = (torch::randn({hq * d, k}) / std::sqrt(k)).to(dtype);
      const at::Tensor wk = (torch::randn({hk * d, k}) / std::sqrt(k)).to(dtype);
      const at::Tensor wv = (torch::randn({hk * d, k}) / std::sqrt(k)).to(dtype);
      const at::Tensor cos = torch::randn({positions, d}).to(dtype), sin = torch::randn({positions, d}).to(dtype);
      auto run = [&](const at::TensorOptions& o, bool one_launch, at::Tensor& kc, at::Tensor& vc, at::Tensor& used) {
        auto t = [&](const at::Tensor& v) { return v.to(o); };
        kc = torch::zeros({m, positions, hk, d}, o);
        vc = torch::zeros_like(kc);
        used = torch::zeros({m}, o.dtype(torch::kInt));
        const std::vector<at::Tensor> w = llama ? std::vector<at::Tensor>{t(wq), t(wk), t(wv)}
                                                : std::vector<at::Tensor>{at::cat({t(wq), t(wk), t(wv)}, 0)};
        const at::Tensor b = llama ? at::Tensor() : t(bias);
        const fused::DecodeNorm norm =
            llama ? fused::DecodeNorm{t(nw), {}, 1e-5, true} : fused::DecodeNorm{t(nw), t(nb), 1e-5, false};
        const at::Tensor c = llama ? t(cos) : at::Tensor(), sn = llama ? t(sin) : at::Tensor();
        const at::Tensor pos = torch::full({1}, 9, o.dtype(torch::kLong));
        if (one_launch) return fused::decode_qkv_linear_to_cache(t(x), w, b, norm, hq, hk, c, sn, pos, kc, vc, used);
        const at::Tensor qkv = fused::decode_linear(t(x), w, b, DecodeAct::kNone, {}, norm);
        return fused::decode_qkv_to_cache(qkv, hq, hk, c, sn, pos, kc, vc, used);
      };
      at::Tensor kc, vc, used, kc_ref, vc_ref, used_ref;
      const at::Tensor q = run(cuda.dtype(dtype), true, kc, vc, used);
      ASSERT_TRUE(q.defined()) << "the streamed GEMV serves this shape on sm_90";
      const at::Tensor q_ref = run(at::TensorOptions().dtype(at::kFloat), false, kc_ref, vc_ref, used_ref);
      const std::string where = std::string(llama ? "llama" : "gpt2") + " m=" + std::to_string(m);
      EXPECT_LT(max_diff(q, q_ref), 1.6e-2 * scale(q_ref)) << "q, " << where;
      EXPECT_LT(max_diff(kc, kc_ref), 1.6e-2 * scale(kc_ref)) << "k cache, " << where;
      EXPECT_LT(max_diff(vc, vc_ref), 1.6e-2 * scale(vc_ref)) << "v cache, " << where;
      EXPECT_EQ(kc.cpu().abs().sum(3).ne(0).sum().item<int64_t>(), m * hk) << "only position 9 written, " << where;
      EXPECT_TRUE(used.cpu().equal(torch::full({m}, 10, torch::kInt))) << where;
    }
  }
}

/// Logits of a prefill then `steps` decode steps of a reduced decoder (head size 64, so gpubench's decode attention
/// serves up to 8 sequences) on the GPU in bf16, with `kernels`; the same weights for every call (seeded).
std::vector<at::Tensor> reduced_decode(const std::string& model, const std::string& kernels, int64_t batch, int steps,
                                       const torch::Device& device = torch::Device(torch::kCUDA, 0),
                                       at::ScalarType dtype = at::kBFloat16) {
  Scenario s;
  s.model = model;
  s.kernels = kernels;
  s.mode = "generate";
  s.model_options = model == "llama" ? nlohmann::json{{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"kv_heads", 2},
                                                      {"intermediate", 512}, {"vocab", 300}, {"seq_len", 64}}
                                     : nlohmann::json{{"layers", 2}, {"width", 256}, {"heads", 4}, {"vocab", 300},
                                                      {"seq_len", 64}};
  torch::manual_seed(11);
  auto w = find_model(model).make(s);
  w->module()->to(device, dtype);
  w->module()->eval();
  TextGenerator* g = w->generator();
  c10::InferenceMode no_autograd;
  const auto cuda = at::TensorOptions().device(device);
  torch::manual_seed(12);
  const at::Tensor prompt = torch::randint(0, 300, {batch, 20}, cuda.dtype(torch::kLong));
  g->allocate(batch, 20 + steps + 1, cuda.dtype(dtype));
  std::vector<at::Tensor> logits{g->prefill(prompt).to(at::kCPU, at::kFloat)};
  at::Tensor token = prompt.narrow(1, 19, 1).contiguous();
  at::Tensor pos = torch::full({1}, 20, cuda.dtype(torch::kLong));
  for (int i = 0; i < steps; ++i) {
    logits.push_back(g->decode(token, pos, 20 + steps + 1).to(at::kCPU, at::kFloat));
    token = (token * 7 + 3).remainder(300);  // the same next tokens on both paths, whatever they predict
    pos.add_(1);
  }
  return logits;
}

/// On the CPU in fp32 the fused path's ATen forms give the ATen path's logits.
TEST(DecodeOpsTest, FusedDecodeStepsMatchTheAtenPathOnTheCpu) {
  for (const std::string model : {"llama", "gpt2"}) {
    const auto fused = reduced_decode(model, "fused", 3, 4, torch::kCPU, at::kFloat);
    const auto aten = reduced_decode(model, "aten", 3, 4, torch::kCPU, at::kFloat);
    ASSERT_EQ(fused.size(), aten.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_LT(max_diff(fused[i], aten[i]), 1e-4 * scale(aten[i])) << model << " " << i;
  }
}

/// The fused decode step against the ATen path on the GPU, for batches the sm_90 GEMVs can serve (1, 2, 4; by default
/// they take only TinyLlama-sized products, so once more with each on every product), the decode
/// attention serves (up to 8) and one it hands to FlashAttention (9), and for both decoders.
TEST(DecodeOpsTest, FusedDecodeStepsMatchTheAtenPathAtEveryBatch_CUDA) {
  if (!kernels_here()) GTEST_SKIP() << "no CUDA device or no kernels in this build";
  for (const Gemv g : {Gemv::kDefault, Gemv::kStream, Gemv::kRun}) {
    const GemvEverywhere setting(g);
    for (const std::string model : {"llama", "gpt2"}) {
      for (const int64_t batch : {1, 2, 4, 8, 9}) {
        const auto fused = reduced_decode(model, "fused", batch, 5), aten = reduced_decode(model, "aten", batch, 5);
        ASSERT_EQ(fused.size(), aten.size());
        for (size_t i = 0; i < fused.size(); ++i) {
          EXPECT_LT(max_diff(fused[i], aten[i]), 3e-2 * scale(aten[i]))
              << model << " batch " << batch << (i == 0 ? " prefill" : " decode step " + std::to_string(i))
              << gemv_label(g);
        }
      }
    }
  }
}

/// Whole greedy steps (TextGenerator::decode_greedy) with the run GEMV on every product it takes, so that each step
/// ends in the LM head's launch (decode_lm_head_greedy), on both decoders at 1 and 2 sequences, against the same
/// step's logits (g->decode at the same token and position: the same kernels, so the same values): the token is their
/// argmax exactly, it is in the history's column, and the position moves on; then the same with the tail off.
TEST(DecodeOpsTest, GreedyStepsEndInTheLmHeadWithTheArgmaxOfTheStepsLogits_CUDA) {
  if (!streamed_here()) GTEST_SKIP() << "no sm_90 GPU or no kernels in this build";
  const GemvEverywhere setting(Gemv::kRun);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const bool tail : {true, false}) {
    fused::set_decode_greedy_tail(tail);
    for (const std::string model : {"llama", "gpt2"}) {
      for (const int64_t batch : {1, 2}) {
        Scenario s;
        s.model = model;
        s.kernels = "fused";
        s.mode = "generate";
        s.model_options = model == "llama"
                              ? nlohmann::json{{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"kv_heads", 2},
                                               {"intermediate", 512}, {"vocab", 3000}, {"seq_len", 64}}
                              : nlohmann::json{{"layers", 2}, {"width", 256}, {"heads", 4}, {"vocab", 3001},
                                               {"seq_len", 64}};
        torch::manual_seed(13);
        auto w = find_model(model).make(s);
        w->module()->to(torch::Device(torch::kCUDA, 0), at::kBFloat16);
        w->module()->eval();
        TextGenerator* g = w->generator();
        c10::InferenceMode no_autograd;
        const at::Tensor prompt = torch::randint(0, 3000, {batch, 20}, cuda.dtype(torch::kLong));
        g->allocate(batch, 40, cuda.dtype(at::kBFloat16));
        at::Tensor token = g->prefill(prompt).argmax(-1, /*keepdim=*/true);
        const at::Tensor pos = torch::full({1}, 20, cuda.dtype(torch::kLong));
        const at::Tensor history = torch::full({batch, 20}, -1, cuda.dtype(torch::kLong));
        const std::string at_case = model + " batch " + std::to_string(batch) + (tail ? "" : " (tail off)");
        for (int i = 0; i < 12; ++i) {
          const at::Tensor want = g->decode(token, pos, 64).argmax(-1, /*keepdim=*/true);
          ASSERT_TRUE(g->decode_greedy({token, pos, history, 19}, 64)) << at_case;
          EXPECT_TRUE(token.equal(want)) << at_case << " step " << i << ": " << token << want;
          EXPECT_TRUE(history.select(1, i + 1).equal(want.squeeze(1))) << at_case << " step " << i;
          EXPECT_EQ(pos.item<int64_t>(), 21 + i) << at_case;
        }
      }
    }
  }
  fused::set_decode_greedy_tail(true);
}

/// Decode attention's cluster limit for a scope, at every batch it takes (0: the form whose last block combines);
/// the setting before is restored after.
class ClusterLimit {
 public:
  explicit ClusterLimit(int limit) : before_(fused::decode_attention_cluster()) {
    fused::set_decode_attention_cluster({limit, 8});  // 8: every batch decode attention takes
  }
  ~ClusterLimit() { fused::set_decode_attention_cluster(before_); }
  ClusterLimit(const ClusterLimit&) = delete;
  ClusterLimit& operator=(const ClusterLimit&) = delete;

 private:
  fused::DecodeClusterSetting before_;
};

/// gpubench's decode attention against the masked SDPA path over the same cache: GQA groups of 4 and 1 (GPT-2),
/// head sizes 64 and 128, the first position, one inside a window and the window's last; on sm_90 in both forms
/// (clusters of up to 8 and 16 splits, and the last block combining).
TEST(DecodeOpsTest, DecodeAttentionMatchesMaskedSdpaOverTheCache_CUDA) {
  if (!kernels_here()) GTEST_SKIP() << "no CUDA device or no kernels in this build";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const int limit : {8, 16, 0}) {
  const ClusterLimit setting(limit);
  for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    // GQA 4 and 8 (TinyLlama), 32 q heads on one kv head (the combine's widest), GPT-2's heads
    for (const auto& [hq, hk, d] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {8, 2, 64}, {32, 4, 64}, {4, 4, 128}, {32, 1, 128}, {12, 12, 64}}) {
      for (const int64_t b : {1, 3}) {
        torch::manual_seed(hq * 100 + d + b);
        models::KvCache cache = models::make_kv_cache(1, b, 2100, hk, d, cuda.dtype(dtype));
        cache.flash = false;  // the reference: masked SDPA
        cache.k[0].normal_();
        cache.v[0].normal_();
        const at::Tensor q = torch::randn({b, hq, d}, cuda.dtype(dtype));
        // windows of one tile a split to several (2,048 positions)
        for (const auto& [p, window] : std::vector<std::pair<int64_t, int64_t>>{
                 {0, 64}, {37, 64}, {127, 128}, {150, 192}, {1500, 1536}, {2047, 2048}}) {
          const at::Tensor pos = torch::full({1}, p, cuda.dtype(torch::kLong));
          const at::Tensor got = fused::decode_attention(q, cache.k[0], cache.v[0], pos, window, cache.attn_counters);
          ASSERT_TRUE(got.defined());
          const at::Tensor want = models::attend_cached(q, cache, 0, pos, window, /*math=*/true);
          EXPECT_LT(max_diff(got, want), 2e-2 * scale(want)) << c10::toString(dtype) << " hq " << hq << " hk " << hk
                                                               << " d " << d << " b " << b << " pos " << p
                                                               << " cluster limit " << limit;
        }
        EXPECT_EQ(cache.attn_counters.sum().item<int64_t>(), 0) << "the counters are left at zero";
      }
    }
  }
  }
  // Not served: a head size of 32 (the caller's flash or SDPA path runs)
  models::KvCache small = models::make_kv_cache(1, 1, 16, 2, 32, cuda.dtype(at::kBFloat16));
  EXPECT_FALSE(fused::decode_attention(torch::randn({1, 4, 32}, cuda.dtype(at::kBFloat16)), small.k[0], small.v[0],
                                       torch::zeros({1}, cuda.dtype(torch::kLong)), 16, small.attn_counters)
                   .defined());
}

/// GPT-2's step on sm_90: the attention that reads q, k and v straight from the q/k/v product writes the new
/// position's k and v into the cache (over whatever was there) and gives what the cache write then the attention
/// give, in every split and cluster size, and sets FlashAttention's keys in use.
TEST(DecodeOpsTest, AttentionFromTheQkvProductMatchesTheCacheWriteThenTheAttention_CUDA) {
  if (!streamed_here()) GTEST_SKIP() << "no sm_90 GPU or no kernels in this build";
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  for (const int limit : {8, 16}) {
    const ClusterLimit setting(limit);
    for (const auto& [hq, hk, d] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {12, 12, 64}, {8, 2, 64}, {4, 4, 128}}) {
      for (const int64_t b : {1, 3}) {
        torch::manual_seed(hq + d + b);
        models::KvCache cache = models::make_kv_cache(1, b, 1100, hk, d, cuda.dtype(at::kBFloat16));
        cache.flash = false;
        cache.k[0].normal_();
        cache.v[0].normal_();
        const at::Tensor qkv = torch::randn({b, (hq + 2 * hk) * d}, cuda.dtype(at::kBFloat16));
        for (const auto& [p, window] : std::vector<std::pair<int64_t, int64_t>>{{0, 64}, {100, 128}, {1023, 1024}}) {
          const at::Tensor pos = torch::full({1}, p, cuda.dtype(torch::kLong));
          at::Tensor k_ref = cache.k[0].clone(), v_ref = cache.v[0].clone();
          const at::Tensor q = fused::decode_qkv_to_cache(qkv, hq, hk, {}, {}, pos, k_ref, v_ref, {});
          models::KvCache ref = cache;
          ref.k = {k_ref};
          ref.v = {v_ref};
          const at::Tensor want = models::attend_cached(q, ref, 0, pos, window, /*math=*/true);
          at::Tensor used = torch::zeros({b}, cuda.dtype(torch::kInt));
          const std::string where = "hq " + std::to_string(hq) + " hk " + std::to_string(hk) + " d " +
                                    std::to_string(d) + " b " + std::to_string(b) + " pos " + std::to_string(p) +
                                    " cluster limit " + std::to_string(limit);
          const at::Tensor got = fused::decode_qkv_attention(qkv, hq, hk, pos, window, cache.k[0], cache.v[0], used);
          ASSERT_TRUE(got.defined()) << where;
          EXPECT_LT(max_diff(got, want), 2e-2 * scale(want)) << where;
          EXPECT_TRUE(cache.k[0].equal(k_ref)) << "the k cache as the cache write leaves it, " << where;
          EXPECT_TRUE(cache.v[0].equal(v_ref)) << "the v cache as the cache write leaves it, " << where;
          EXPECT_TRUE(used.cpu().equal(torch::full({b}, p + 1, torch::kInt))) << where;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpubench::engine
