// The whole greedy decode step as one kernel (decode/decode_step_ops.h): DecodeStep's plan and launch, the CUDA
// module's part of `kernel_options.decode_one_kernel`.

#include <cstring>
#include <string>

#include "cuda/decode_step_kernel.h"
#include "cuda/launch.h"
#include "decode/decode_step_ops.h"
#include "fused/kernel_launch.h"

namespace gpubench::engine::fused {

struct DecodeStep::State {
  DecodeStepWeights weights;  // kept alive: the kernel reads them by pointer
  DecodeStepModel model;
  at::Tensor layers;  // the DecodeStepLayer table on the device (bytes)
  at::Tensor logits, hidden, q, attn, mlp, part, sync;
  DType dtype = DType::kBFloat16;
};

namespace {

/// Why `t` cannot be the kernel's `what` ("...; ", empty: it can): defined unless optional, on x's device in x's
/// dtype, contiguous, 16-byte aligned, `numel` elements (0: any).
std::string unfit(const at::Tensor& t, const at::Tensor& like, const char* what, int64_t numel, bool optional) {
  if (!t.defined()) return optional ? "" : std::string(what) + " missing; ";
  if (t.device() != like.device() || t.scalar_type() != like.scalar_type()) {
    return std::string(what) + ": another dtype or device; ";
  }
  if (!t.is_contiguous() || (reinterpret_cast<uintptr_t>(t.data_ptr()) & 15u) != 0) {
    return std::string(what) + " not contiguous and 16-byte aligned; ";
  }
  if (numel > 0 && t.numel() != numel) return std::string(what) + " of " + std::to_string(t.numel()) + " values; ";
  return "";
}

const void* ptr_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace

DecodeStep::~DecodeStep() = default;

std::unique_ptr<DecodeStep> DecodeStep::make(const DecodeStepWeights& w, std::string* why) {
  auto refuse = [why](const std::string& reason) -> std::unique_ptr<DecodeStep> {
    if (why != nullptr) *why = reason;
    return nullptr;
  };
  if (!decode_step_enabled()) return refuse("");
  if (w.layers.empty() || w.k_cache.size() != w.layers.size() || w.v_cache.size() != w.layers.size()) {
    return refuse("no layers or caches");
  }
  const at::Tensor& e = w.embed;
  if (!e.defined() || !launch::on_kernels(e, /*allow_fp32=*/false) || e.dim() != 2) return refuse("not CUDA bf16/fp16");
  if (!decode_step_available()) return refuse("needs sm_90 or later");
  const at::Tensor& kc = w.k_cache.front();
  if (kc.dim() != 4 || kc.size(0) != 1) return refuse("one sequence only");
  DecodeStepModel m;
  m.layers = static_cast<int64_t>(w.layers.size());
  m.vocab = e.size(0);
  m.dim = e.size(1);
  m.q_heads = w.q_heads;
  m.kv_heads = w.kv_heads;
  m.head_dim = kc.size(3);
  m.positions = kc.size(1);
  m.ffn = w.layers.front().w_up.defined() ? w.layers.front().w_up.size(0) : 0;
  m.rms = w.rms;
  m.eps = static_cast<float>(w.eps);
  if (!decode_step_serves(m)) return refuse("shapes the kernel does not take");
  const int64_t dim = m.dim, d = m.head_dim, hq = m.q_heads, hk = m.kv_heads, ffn = m.ffn;
  std::string bad = unfit(w.lm_head, e, "lm_head", m.vocab * dim, false) +
                    unfit(w.final_norm_w, e, "final norm", dim, false) +
                    unfit(w.final_norm_b, e, "final norm bias", dim, true) +
                    unfit(w.pos_embed, e, "position embedding", 0, true) +
                    unfit(w.rope_cos, e, "rotary cos", m.positions * d, true) +
                    unfit(w.rope_sin, e, "rotary sin", m.positions * d, true) + unfit(e, e, "embedding", 0, false);
  const at::Tensor& pe = w.pos_embed;
  if (pe.defined() && (pe.dim() != 2 || pe.size(0) < m.positions || pe.size(1) != dim)) {
    bad += "a position embedding of another shape, or shorter than the cache; ";
  }
  std::vector<DecodeStepLayer> table(w.layers.size());
  for (size_t i = 0; i < w.layers.size() && bad.empty(); ++i) {
    const DecodeStepLayerWeights& l = w.layers[i];
    const bool swiglu = l.w_gate.defined();
    bad = unfit(l.attn_norm_w, e, "attention norm", dim, false) +
          unfit(l.attn_norm_b, e, "attention norm bias", dim, true) +
          unfit(l.wq, e, "q", hq * d * dim, false) + unfit(l.wk, e, "k", hk * d * dim, false) +
          unfit(l.wv, e, "v", hk * d * dim, false) + unfit(l.bq, e, "q bias", hq * d, true) +
          unfit(l.bk, e, "k bias", hk * d, true) + unfit(l.bv, e, "v bias", hk * d, true) +
          unfit(l.wo, e, "o", dim * hq * d, false) + unfit(l.bo, e, "o bias", dim, true) +
          unfit(l.mlp_norm_w, e, "MLP norm", dim, false) + unfit(l.mlp_norm_b, e, "MLP norm bias", dim, true) +
          unfit(l.w_gate, e, "gate", ffn * dim, true) + unfit(l.w_up, e, "up", ffn * dim, false) +
          unfit(l.b_up, e, "up bias", ffn, true) + unfit(l.w_down, e, "down", dim * ffn, false) +
          unfit(l.b_down, e, "down bias", dim, true) +
          unfit(w.k_cache[i], e, "k cache", m.positions * hk * d, false) +
          unfit(w.v_cache[i], e, "v cache", m.positions * hk * d, false);
    if (swiglu && l.b_up.defined()) bad += "a SwiGLU with a bias; ";
    if (l.bq.defined() != l.bk.defined() || l.bq.defined() != l.bv.defined()) bad += "q/k/v biases not all or none; ";
    if (w.rms && (l.attn_norm_b.defined() || l.mlp_norm_b.defined())) bad += "an RMSNorm with a bias; ";
    DecodeStepLayer& t = table[i];
    t.attn_norm_w = ptr_or_null(l.attn_norm_w);
    t.attn_norm_b = ptr_or_null(l.attn_norm_b);
    t.wq = ptr_or_null(l.wq);
    t.wk = ptr_or_null(l.wk);
    t.wv = ptr_or_null(l.wv);
    t.bq = ptr_or_null(l.bq);
    t.bk = ptr_or_null(l.bk);
    t.bv = ptr_or_null(l.bv);
    t.wo = ptr_or_null(l.wo);
    t.bo = ptr_or_null(l.bo);
    t.mlp_norm_w = ptr_or_null(l.mlp_norm_w);
    t.mlp_norm_b = ptr_or_null(l.mlp_norm_b);
    t.w_gate = ptr_or_null(l.w_gate);
    t.w_up = ptr_or_null(l.w_up);
    t.b_up = ptr_or_null(l.b_up);
    t.w_down = ptr_or_null(l.w_down);
    t.b_down = ptr_or_null(l.b_down);
    t.k_cache = w.k_cache[i].data_ptr();
    t.v_cache = w.v_cache[i].data_ptr();
  }
  if (w.rope_cos.defined() != w.rope_sin.defined()) bad += "one rotary table of two; ";
  if (!bad.empty()) return refuse(bad.substr(0, bad.size() - 2));
  m.embed = e.data_ptr();
  m.pos_embed = ptr_or_null(w.pos_embed);
  m.rope_cos = ptr_or_null(w.rope_cos);
  m.rope_sin = ptr_or_null(w.rope_sin);
  m.final_norm_w = ptr_or_null(w.final_norm_w);
  m.final_norm_b = ptr_or_null(w.final_norm_b);
  m.lm_head = w.lm_head.data_ptr();

  std::unique_ptr<DecodeStep> step(new DecodeStep());
  auto s = std::make_unique<State>();
  const auto bytes = e.options().dtype(at::kByte);
  s->layers = at::empty({static_cast<int64_t>(table.size() * sizeof(DecodeStepLayer))}, bytes.device(at::kCPU));
  std::memcpy(s->layers.data_ptr(), table.data(), table.size() * sizeof(DecodeStepLayer));
  s->layers = s->layers.to(e.device());
  m.layer = static_cast<const DecodeStepLayer*>(s->layers.data_ptr());
  s->model = m;
  s->weights = w;
  s->dtype = launch::dtype_of(e);
  s->logits = at::empty({1, m.vocab}, e.options());
  s->hidden = at::empty({dim}, e.options());
  s->q = at::empty({hq * d}, e.options());
  s->attn = at::empty({hq * d}, e.options());
  s->mlp = at::empty({ffn}, e.options());
  // (the attention's splits grow with the window: the widest window's scratch serves every window)
  s->part = at::empty({decode_step_part_floats(m, m.positions)}, e.options().dtype(at::kFloat));
  s->sync = at::zeros({decode_step_sync_words(m)}, e.options().dtype(at::kInt));
  step->state_ = std::move(s);
  return step;
}

at::Tensor DecodeStep::step(at::Tensor& token, const at::Tensor& pos, int64_t window) {
  State& s = *state_;
  DecodeStepState st;
  st.token_in = token.data_ptr<int64_t>();
  st.pos = pos.data_ptr<int64_t>();
  st.token_out = token.data_ptr<int64_t>();
  st.logits = s.logits.data_ptr();
  st.hidden = s.hidden.data_ptr();
  st.q = s.q.data_ptr();
  st.attn = s.attn.data_ptr();
  st.mlp = s.mlp.data_ptr();
  st.part = s.part.data_ptr<float>();
  st.sync = reinterpret_cast<unsigned*>(s.sync.data_ptr<int>());
  st.window = window;
  launch::check(launch_decode_step(s.model, st, s.dtype, launch::stream()), "decode_step");
  return s.logits;
}

const at::Tensor& DecodeStep::logits() const { return state_->logits; }

}  // namespace gpubench::engine::fused
