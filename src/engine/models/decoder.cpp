#include "models/decoder.h"

#include <c10/core/InferenceMode.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "decode/decode_ops.h"
#include "decode/decode_step_ops.h"
#include "fused/fused_ops.h"
#include "precision.h"
#include "models/layers.h"

namespace gpubench::models {

namespace {

/// A plain container module registered under `name` (transformers' attn / mlp / transformer / model levels).
std::shared_ptr<torch::nn::Module> group(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

/// transformers' gelu_new: the tanh approximation of GELU.
torch::Tensor gelu_tanh(const torch::Tensor& x) { return at::gelu(x, "tanh"); }

/// [batch, tokens, heads*d] -> [batch, heads, tokens, d]
torch::Tensor heads_view(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

/// rotate_half(x) = cat(-x2, x1) over the last dimension's halves.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, h, h), x.narrow(-1, 0, h)}, -1);
}

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

}  // namespace

int64_t KvCache::bytes() const {
  int64_t n = 0;
  for (const auto& t : k) n += t.numel() * static_cast<int64_t>(t.element_size());
  for (const auto& t : v) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

void KvCache::begin_step(const at::Tensor& pos) {
  if (flash) used_k.copy_(pos.add(1).expand_as(used_k));
}

namespace {

/// FlashAttention's variable-length forward for one query per sequence over the first `window` cached keys, of which
/// `cache.used_k` are in use: q [batch, heads, d] -> [batch, heads, d].
at::Tensor flash_decode(const at::Tensor& q, const KvCache& cache, size_t layer, int64_t window) {
  const at::Tensor& k = cache.k[layer];
  const int64_t b = k.size(0), n = k.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return std::get<0>(at::_flash_attention_forward(q, k.view({b * n, k.size(2), k.size(3)}),
                                                  cache.v[layer].view({b * n, k.size(2), k.size(3)}), cache.cu_q,
                                                  cache.cu_k, 1, window, 0.0, /*is_causal=*/false,
                                                  /*return_debug_mask=*/false, scale, std::nullopt, std::nullopt,
                                                  cache.used_k));
}

/// Whether the flash decode path runs here: one tiny call, once per device and dtype.
bool flash_decode_works(const at::TensorOptions& options) {
  static std::map<std::pair<int, int>, bool> known;
  const auto key = std::make_pair(static_cast<int>(options.device().index()), static_cast<int>(options.dtype().toScalarType()));
  if (const auto it = known.find(key); it != known.end()) return it->second;
  bool ok = false;
  try {
    KvCache probe;
    probe.k = {at::zeros({1, 8, 1, 64}, options)};
    probe.v = {at::zeros({1, 8, 1, 64}, options)};
    const auto i32 = options.dtype(at::kInt);
    probe.cu_q = at::arange(2, i32);
    probe.cu_k = at::arange(2, i32) * 8;
    probe.used_k = at::full({1}, 3, i32);
    const at::Tensor out = flash_decode(at::ones({1, 2, 64}, options), probe, 0, 8);
    ok = out.sizes() == at::IntArrayRef({1, 2, 64});
  } catch (const std::exception&) {
    ok = false;
  }
  known[key] = ok;
  return ok;
}

std::atomic<bool> g_flash_decode_allowed{true};

}  // namespace

void set_flash_decode_allowed(bool allowed) { g_flash_decode_allowed.store(allowed); }

KvCache make_kv_cache(size_t layers, int64_t batch, int64_t positions, int64_t kv_heads, int64_t head_dim,
                      const at::TensorOptions& options) {
  KvCache c;
  for (size_t i = 0; i < layers; ++i) {
    c.k.push_back(at::zeros({batch, positions, kv_heads, head_dim}, options));
    c.v.push_back(at::zeros({batch, positions, kv_heads, head_dim}, options));
  }
  const at::ScalarType t = options.dtype().toScalarType();
  const bool allowed = g_flash_decode_allowed.load();
  c.flash = allowed && options.device().is_cuda() && (t == at::kHalf || t == at::kBFloat16) && flash_decode_works(options);
  if (options.device().is_cuda()) {
    c.attn_counters = at::zeros({batch * kv_heads}, options.dtype(at::kInt));
    c.greedy_scratch = at::zeros({batch + 1}, options.dtype(at::kLong));
  }
  if (c.flash) {
    const auto i32 = options.dtype(at::kInt);
    c.cu_q = at::arange(batch + 1, i32);
    c.cu_k = at::arange(batch + 1, i32) * positions;
    c.used_k = at::ones({batch}, i32);
  }
  return c;
}

at::Tensor cached_attention(const at::Tensor& q, const at::Tensor& k_new, const at::Tensor& v_new, KvCache& cache,
                            size_t layer, const at::Tensor& pos, int64_t window, bool math) {
  at::Tensor& k_cache = cache.k[layer];
  at::Tensor& v_cache = cache.v[layer];
  const int64_t t = q.size(2);
  if (!pos.defined()) {  // prefill: positions 0..t-1, causal over themselves
    k_cache.narrow(1, 0, t).copy_(k_new.transpose(1, 2));
    v_cache.narrow(1, 0, t).copy_(v_new.transpose(1, 2));
    return attention(q, k_new.to(q.scalar_type()), v_new.to(q.scalar_type()), {}, 0.0, math, /*causal=*/true);
  }
  k_cache.index_copy_(1, pos, k_new.transpose(1, 2).to(k_cache.scalar_type()));
  v_cache.index_copy_(1, pos, v_new.transpose(1, 2).to(v_cache.scalar_type()));
  return attend_cached(q.squeeze(2), cache, layer, pos, window, math).unsqueeze(2);
}

at::Tensor attend_cached(const at::Tensor& q, const KvCache& cache, size_t layer, const at::Tensor& pos, int64_t window,
                         bool math) {
  const at::Tensor& k_cache = cache.k[layer];
  if (cache.flash && q.scalar_type() == k_cache.scalar_type()) return flash_decode(q, cache, layer, window);
  const at::Tensor keep = at::arange(window, pos.options()).le(pos).view({1, 1, 1, window});
  return attention(q.unsqueeze(2), k_cache.narrow(1, 0, window).transpose(1, 2).to(q.scalar_type()),
                   cache.v[layer].narrow(1, 0, window).transpose(1, 2).to(q.scalar_type()), keep, 0.0, math)
      .squeeze(2);
}

namespace {
/// kernels: fused's decode attention for one layer: the new token's q/k/v product of x (by `weights`, `bias` and
/// the input `norm`) into the cache (rotary by cos/sin when defined; layer 0 also sets flash's keys in use) — one
/// streamed GEMV where it serves, else the product then the cache write — then gpubench's decode attention where it
/// serves, else attend_cached.
at::Tensor decode_attend(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                         const engine::fused::DecodeNorm& norm, int64_t q_heads, int64_t kv_heads,
                         const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& pos, int64_t window,
                         KvCache& cache, size_t layer, bool math) {
  namespace f = engine::fused;
  const at::Tensor used_k = layer == 0 && cache.flash ? cache.used_k : at::Tensor();
  at::Tensor q = f::decode_qkv_linear_to_cache(x, weights, bias, norm, q_heads, kv_heads, cos, sin, pos,
                                               cache.k[layer], cache.v[layer], used_k);
  if (!q.defined()) {
    const at::Tensor qkv = f::decode_linear(x, weights, bias, f::DecodeAct::kNone, {}, norm);
    if (!cos.defined()) {  // no rotary: the attention can take q, k and v from the product and write the cache
      const at::Tensor ctx = f::decode_qkv_attention(qkv, q_heads, kv_heads, pos, window, cache.k[layer],
                                                     cache.v[layer], used_k);
      if (ctx.defined()) return ctx;
    }
    q = f::decode_qkv_to_cache(qkv, q_heads, kv_heads, cos, sin, pos, cache.k[layer], cache.v[layer], used_k);
  }
  const at::Tensor ctx = f::decode_attention(q, cache.k[layer], cache.v[layer], pos, window, cache.attn_counters);
  return ctx.defined() ? ctx : attend_cached(q, cache, layer, pos, window, math);
}

/// The end of a greedy step after its argmax `next` [batch, 1]: into the token buffer and the history, and the
/// position on by one (three small operations; decode_lm_head_greedy's launch does them itself).
void advance_greedy(const GreedyStep& s, const at::Tensor& next) {
  s.history.index_copy_(1, s.pos - s.history_offset, next);
  if (!next.is_same(s.token)) s.token.copy_(next);
  s.pos.add_(1);
}

/// decode_greedy's end after the layers: the LM head (`weight`, after the final `norm`) of h with the whole tail in
/// its launch where decode_lm_head_greedy takes it, else the logits, their argmax and advance_greedy.
void greedy_head(const at::Tensor& h, const at::Tensor& weight, const engine::fused::DecodeNorm& norm,
                 const GreedyStep& s, KvCache& cache) {
  namespace f = engine::fused;
  if (cache.greedy_scratch.defined() &&
      f::decode_lm_head_greedy(h, weight, norm, {s.token, s.history, s.pos, cache.greedy_scratch, s.history_offset})) {
    return;
  }
  advance_greedy(s, f::decode_argmax(f::decode_linear(h, {weight}, {}, f::DecodeAct::kNone, {}, norm)));
}

/// decode_greedy's common part: the step kernel for this cache, made at the first step from `describe`'s weights
/// where it is asked for (one sequence only), then one step of it with advance_greedy; false where it is off or does
/// not serve.
bool step_kernel_greedy(const GreedyStep& s, int64_t window, KvCache& cache,
                        const std::function<engine::fused::DecodeStepWeights()>& describe) {
  at::Tensor token = s.token;
  const at::Tensor& pos = s.pos;
  if (!cache.step_kernel_checked) {
    cache.step_kernel_checked = true;
    if (!engine::fused::decode_step_enabled()) {
      // off (the default): nothing to say
    } else if (token.size(0) != 1 || cache.k.empty()) {
      cache.step_kernel_why = "more than one sequence";
    } else {
      engine::fused::DecodeStepWeights w = describe();
      w.k_cache = cache.k;
      w.v_cache = cache.v;
      cache.step_kernel = engine::fused::DecodeStep::make(w, &cache.step_kernel_why);
    }
  }
  if (!cache.step_kernel || token.size(0) != 1) return false;
  cache.step_kernel->step(token, pos, window);
  advance_greedy(s, token);
  return true;
}

/// Positions pos.. of a prefill (0..t-1) or of one decoded token, for position tables: rows of `table`.
at::Tensor rows_at(const at::Tensor& table, const at::Tensor& pos, int64_t t) {
  return pos.defined() ? table.index_select(0, pos) : table.narrow(0, 0, t);
}
}  // namespace

Conv1DImpl::Conv1DImpl(int64_t in, int64_t out) {
  weight = register_parameter("weight", torch::empty({in, out}));
  bias = register_parameter("bias", torch::zeros({out}));
}

torch::Tensor Conv1DImpl::forward(const torch::Tensor& x) {
  if (const engine::fp8::Plan* plan = engine::fp8::active_plan()) {
    if (engine::fp8::LinearState* state = plan->find(this)) {
      return engine::fp8::linear(x, weight.t(), bias, plan->recipe(), state,
                                  plan->input_memo());  // weight [in, out]: its transpose
    }
  }
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(1);
  return at::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(sizes);
}

Gpt2BlockImpl::Gpt2BlockImpl(const Gpt2Options& o)
    : heads_(o.heads), dropout_(o.dropout), math_(o.math_attention), fused_(o.fused) {
  const auto ln = torch::nn::LayerNormOptions({o.hidden}).eps(o.layer_norm_eps);
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(ln));
  auto attn = group(*this, "attn");
  c_attn = attn->register_module("c_attn", Conv1D(o.hidden, 3 * o.hidden));
  attn_proj = attn->register_module("c_proj", Conv1D(o.hidden, o.hidden));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(ln));
  auto mlp = group(*this, "mlp");
  c_fc = mlp->register_module("c_fc", Conv1D(o.hidden, o.intermediate()));
  mlp_proj = mlp->register_module("c_proj", Conv1D(o.intermediate(), o.hidden));
}

torch::Tensor Gpt2BlockImpl::attend(const torch::Tensor& a, double p) {
  const auto qkv = c_attn(a).split(a.size(-1), -1);
  return merge_heads(attention(heads_view(qkv[0], heads_), heads_view(qkv[1], heads_), heads_view(qkv[2], heads_), {},
                               p, math_, /*causal=*/true));
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& x) {
  const double p = is_training() ? dropout_ : 0.0;
  const torch::Tensor h = x + at::dropout(attn_proj(attend(ln_1(x), p)), p, is_training());
  const torch::Tensor act = fused_ ? engine::fused::linear_gelu(ln_2(h), c_fc->weight.t(), c_fc->bias, /*tanh=*/true)
                                   : gelu_tanh(c_fc(ln_2(h)));
  return h + at::dropout(mlp_proj(act), p, is_training());
}

std::pair<torch::Tensor, torch::Tensor> Gpt2BlockImpl::forward_fused(const torch::Tensor& s, const torch::Tensor& a,
                                                                     const torch::nn::LayerNorm& next_ln) {
  namespace f = engine::fused;
  const double p = is_training() ? dropout_ : 0.0;
  const auto [h, a2] = f::linear_residual_layer_norm(attend(a, p), attn_proj->weight.t(), attn_proj->bias, s,
                                                     ln_2->weight, ln_2->bias, p, ln_2->options.eps());
  return f::mlp_residual_layer_norm(a2, c_fc->weight.t(), c_fc->bias, mlp_proj->weight.t(), mlp_proj->bias, h,
                                    next_ln->weight, next_ln->bias, p, next_ln->options.eps());
}

torch::Tensor Gpt2BlockImpl::forward_cached(const torch::Tensor& x, const at::Tensor& pos, int64_t window,
                                            KvCache& cache, size_t layer) {
  const auto qkv = c_attn(ln_1(x)).split(x.size(-1), -1);
  const torch::Tensor ctx = cached_attention(heads_view(qkv[0], heads_), heads_view(qkv[1], heads_),
                                             heads_view(qkv[2], heads_), cache, layer, pos, window, math_);
  const torch::Tensor h = x + attn_proj(merge_heads(ctx));
  return h + mlp_proj(gelu_tanh(c_fc(ln_2(h))));
}

torch::Tensor Gpt2BlockImpl::forward_decode(const torch::Tensor& x, const at::Tensor& pos, int64_t window,
                                            KvCache& cache, size_t layer) {
  using engine::fused::DecodeAct;
  namespace f = engine::fused;
  const at::Tensor ctx = decode_attend(x, {c_attn->weight.t()}, c_attn->bias,
                                       {ln_1->weight, ln_1->bias, ln_1->options.eps(), false}, heads_, heads_, {}, {},
                                       pos, window, cache, layer, math_);
  const at::Tensor h =
      f::decode_linear(ctx.reshape({x.size(0), -1}), {attn_proj->weight.t()}, attn_proj->bias, DecodeAct::kNone, x);
  const at::Tensor a = f::decode_linear(h, {c_fc->weight.t()}, c_fc->bias, DecodeAct::kGeluTanh, {},
                                        {ln_2->weight, ln_2->bias, ln_2->options.eps(), false});
  return f::decode_linear(a, {mlp_proj->weight.t()}, mlp_proj->bias, DecodeAct::kNone, h);
}

Gpt2LMHeadModelImpl::Gpt2LMHeadModelImpl(const Gpt2Options& o) : fused_(o.fused) {
  transformer_ = group(*this, "transformer");
  wte = transformer_->register_module("wte", torch::nn::Embedding(o.vocab_size, o.hidden));
  wpe = transformer_->register_module("wpe", torch::nn::Embedding(o.positions, o.hidden));
  drop_ = transformer_->register_module("drop", torch::nn::Dropout(o.dropout));
  torch::nn::ModuleList h;
  for (int64_t i = 0; i < o.layers; ++i) {
    blocks.push_back(Gpt2Block(o));
    h->push_back(blocks.back());
  }
  transformer_->register_module("h", h);
  ln_f_ = transformer_->register_module(
      "ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden}).eps(o.layer_norm_eps)));
  run_layer = [this](size_t i, const torch::Tensor& x) { return blocks[i]->forward(x); };

  // transformers' GPT2PreTrainedModel._init_weights: N(0, 0.02) for Conv1D and Embedding weights, zero biases,
  // LayerNorm 1 and 0, and the residual projections (c_proj) N(0, 0.02 / sqrt(2 x layers)).
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<Conv1DImpl>()) {
      torch::nn::init::normal_(c->weight, 0.0, 0.02);
      torch::nn::init::zeros_(c->bias);
    } else if (auto* e = m->as<torch::nn::EmbeddingImpl>()) {
      torch::nn::init::normal_(e->weight, 0.0, 0.02);
    } else if (auto* n = m->as<torch::nn::LayerNormImpl>()) {
      torch::nn::init::ones_(n->weight);
      torch::nn::init::zeros_(n->bias);
    }
  }
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(o.layers));
  for (auto& b : blocks) {
    torch::nn::init::normal_(b->attn_proj->weight, 0.0, residual_std);
    torch::nn::init::normal_(b->mlp_proj->weight, 0.0, residual_std);
  }
}

torch::Tensor Gpt2LMHeadModelImpl::hidden(const torch::Tensor& input_ids) {
  const int64_t tokens = input_ids.size(1);
  torch::Tensor h = drop_(wte(input_ids) + wpe->weight.narrow(0, 0, tokens));
  if (fused_ && fuse_across_blocks) {
    torch::Tensor a = blocks.front()->ln_1(h);
    for (size_t i = 0; i < blocks.size(); ++i) {
      std::tie(h, a) = blocks[i]->forward_fused(h, a, i + 1 < blocks.size() ? blocks[i + 1]->ln_1 : ln_f_);
    }
    return a;
  }
  for (size_t i = 0; i < blocks.size(); ++i) h = run_layer(i, h);
  return ln_f_(h);
}

torch::Tensor Gpt2LMHeadModelImpl::forward(const torch::Tensor& input_ids) {
  return at::linear(hidden(input_ids), wte->weight);  // the tied head, no bias
}

KvCache Gpt2LMHeadModelImpl::make_cache(int64_t batch, int64_t positions, const at::TensorOptions& options) {
  if (fused_) {  // the decode GEMVs read W^T [out, in] rows: the same tensors, stored column-major
    torch::NoGradGuard no_grad;
    for (auto& b : blocks) {
      for (Conv1D* c : {&b->c_attn, &b->attn_proj, &b->c_fc, &b->mlp_proj}) {
        torch::Tensor& w = (*c)->weight;
        if (!w.t().is_contiguous()) w.set_data(w.t().contiguous().t());
      }
    }
  }
  const int64_t heads = blocks.front()->heads();
  return make_kv_cache(blocks.size(), batch, positions, heads, wte->weight.size(1) / heads, options);
}

torch::Tensor Gpt2LMHeadModelImpl::logits_cached(const torch::Tensor& ids, const at::Tensor& pos, int64_t window,
                                                 KvCache& cache) {
  const int64_t t = ids.size(1);
  if (fused_ && pos.defined() && t == 1) {  // one decode step by the decode operations
    namespace f = engine::fused;
    return f::decode_linear(decode_hidden(ids, pos, window, cache), {wte->weight}, {}, f::DecodeAct::kNone, {},
                            {ln_f_->weight, ln_f_->bias, ln_f_->options.eps(), false});
  }
  if (pos.defined()) cache.begin_step(pos);
  torch::Tensor h = wte(ids) + rows_at(wpe->weight, pos, t);
  for (size_t i = 0; i < blocks.size(); ++i) h = blocks[i]->forward_cached(h, pos, window, cache, i);
  return at::linear(ln_f_(h.narrow(1, t - 1, 1)).squeeze(1), wte->weight);  // the last token's logits only
}

torch::Tensor Gpt2LMHeadModelImpl::decode_hidden(const torch::Tensor& ids, const at::Tensor& pos, int64_t window,
                                                 KvCache& cache) {
  // (flash's keys in use are set by layer 0's decode_attend)
  at::Tensor h = engine::fused::decode_embed(ids, wte->weight, wpe->weight, pos);
  for (size_t i = 0; i < blocks.size(); ++i) h = blocks[i]->forward_decode(h, pos, window, cache, i);
  return h;
}

bool Gpt2LMHeadModelImpl::decode_greedy(const GreedyStep& step, int64_t window, KvCache& cache) {
  if (!fused_) return false;
  const bool one_kernel = step_kernel_greedy(step, window, cache, [this] {
    engine::fused::DecodeStepWeights w;
    const int64_t dim = wte->weight.size(1);
    for (auto& b : blocks) {  // the Conv1D weights transposed in memory (make_cache): W^T is [out, in] contiguous
      engine::fused::DecodeStepLayerWeights l;
      const at::Tensor qkv = b->c_attn->weight.t(), qkv_b = b->c_attn->bias;
      l.attn_norm_w = b->ln_1->weight;
      l.attn_norm_b = b->ln_1->bias;
      l.wq = qkv.narrow(0, 0, dim);
      l.wk = qkv.narrow(0, dim, dim);
      l.wv = qkv.narrow(0, 2 * dim, dim);
      l.bq = qkv_b.narrow(0, 0, dim);
      l.bk = qkv_b.narrow(0, dim, dim);
      l.bv = qkv_b.narrow(0, 2 * dim, dim);
      l.wo = b->attn_proj->weight.t();
      l.bo = b->attn_proj->bias;
      l.mlp_norm_w = b->ln_2->weight;
      l.mlp_norm_b = b->ln_2->bias;
      l.w_up = b->c_fc->weight.t();
      l.b_up = b->c_fc->bias;
      l.w_down = b->mlp_proj->weight.t();
      l.b_down = b->mlp_proj->bias;
      w.layers.push_back(l);
    }
    w.embed = wte->weight;
    w.pos_embed = wpe->weight;
    w.final_norm_w = ln_f_->weight;
    w.final_norm_b = ln_f_->bias;
    w.lm_head = wte->weight;
    w.q_heads = w.kv_heads = blocks.front()->heads();
    w.rms = false;
    w.eps = ln_f_->options.eps();
    return w;
  });
  if (!one_kernel) {
    greedy_head(decode_hidden(step.token, step.pos, window, cache), wte->weight,
                {ln_f_->weight, ln_f_->bias, ln_f_->options.eps(), false}, step, cache);
  }
  return true;
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : dim_(dim), eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) { return at::rms_norm(x, {dim_}, weight, eps_); }

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaOptions& o)
    : heads_(o.heads), kv_heads_(o.kv_heads), head_dim_(o.head_dim()), math_(o.math_attention), fused_(o.fused) {
  auto no_bias = [](int64_t in, int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)); };
  auto attn = group(*this, "self_attn");
  q_proj = attn->register_module("q_proj", no_bias(o.hidden, o.heads * head_dim_));
  k_proj = attn->register_module("k_proj", no_bias(o.hidden, o.kv_heads * head_dim_));
  v_proj = attn->register_module("v_proj", no_bias(o.hidden, o.kv_heads * head_dim_));
  o_proj = attn->register_module("o_proj", no_bias(o.heads * head_dim_, o.hidden));
  auto mlp = group(*this, "mlp");
  gate_proj = mlp->register_module("gate_proj", no_bias(o.hidden, o.intermediate));
  up_proj = mlp->register_module("up_proj", no_bias(o.hidden, o.intermediate));
  down_proj = mlp->register_module("down_proj", no_bias(o.intermediate, o.hidden));
  input_layernorm = register_module("input_layernorm", RMSNorm(o.hidden, o.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(o.hidden, o.rms_norm_eps));
}

torch::Tensor LlamaDecoderLayerImpl::attend_fused(const torch::Tensor& n, const torch::Tensor& cos,
                                                  const torch::Tensor& sin) {
  // Rotary embeddings on q and k together in one kernel: the projections stay [batch, tokens, heads, head_dim], the
  // layout the kernel and the attention both read.
  const int64_t b = n.size(0), t = n.size(1);
  const auto [q, k] = engine::fused::rotary(linear(q_proj, n).view({b, t, heads_, head_dim_}),
                                            linear(k_proj, n).view({b, t, kv_heads_, head_dim_}), cos, sin);
  const torch::Tensor v = heads_view(linear(v_proj, n), kv_heads_);
  return merge_heads(attention(q.transpose(1, 2), k.transpose(1, 2), v, {}, 0.0, math_, /*causal=*/true));
}

torch::Tensor LlamaDecoderLayerImpl::mlp(const torch::Tensor& m) {
  const torch::Tensor act = fused_ ? engine::fused::swiglu(linear(gate_proj, m), linear(up_proj, m))
                                   : at::silu(linear(gate_proj, m)) * linear(up_proj, m);
  return linear(down_proj, act);
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const torch::Tensor n = input_layernorm(x);
  torch::Tensor ctx;
  if (fused_) {
    ctx = attend_fused(n, cos, sin);
  } else {
    const torch::Tensor q = heads_view(linear(q_proj, n), heads_);
    const torch::Tensor k = heads_view(linear(k_proj, n), kv_heads_);
    const torch::Tensor v = heads_view(linear(v_proj, n), kv_heads_);
    ctx = merge_heads(
        attention(apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v, {}, 0.0, math_, /*causal=*/true));
  }
  const torch::Tensor h = x + linear(o_proj, ctx);
  return h + mlp(post_attention_layernorm(h));
}

std::pair<torch::Tensor, torch::Tensor> LlamaDecoderLayerImpl::forward_fused(const torch::Tensor& x,
                                                                             const torch::Tensor& n,
                                                                             const torch::Tensor& cos,
                                                                             const torch::Tensor& sin,
                                                                             const RMSNorm& next_norm) {
  namespace f = engine::fused;
  const auto [h, m] = f::residual_rms_norm(linear(o_proj, attend_fused(n, cos, sin)), x,
                                           post_attention_layernorm->weight, post_attention_layernorm->eps());
  return f::residual_rms_norm(mlp(m), h, next_norm->weight, next_norm->eps());
}

torch::Tensor LlamaDecoderLayerImpl::forward_cached(const torch::Tensor& x, const torch::Tensor& cos,
                                                    const torch::Tensor& sin, const at::Tensor& pos, int64_t window,
                                                    KvCache& cache, size_t layer) {
  const torch::Tensor n = input_layernorm(x);
  const torch::Tensor v = heads_view(linear(v_proj, n), kv_heads_);
  torch::Tensor ctx;
  if (fused_) {  // rotary on q and k in one kernel, SwiGLU in one (kernels: fused)
    const int64_t b = x.size(0), t = x.size(1);
    const auto [q, k] = engine::fused::rotary(linear(q_proj, n).view({b, t, heads_, head_dim_}),
                                              linear(k_proj, n).view({b, t, kv_heads_, head_dim_}), cos, sin);
    ctx = cached_attention(q.transpose(1, 2), k.transpose(1, 2), v, cache, layer, pos, window, math_);
  } else {
    const torch::Tensor q = heads_view(linear(q_proj, n), heads_);
    const torch::Tensor k = heads_view(linear(k_proj, n), kv_heads_);
    ctx = cached_attention(apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v, cache, layer, pos, window, math_);
  }
  const torch::Tensor h = x + linear(o_proj, merge_heads(ctx));
  return h + mlp(post_attention_layernorm(h));
}

torch::Tensor LlamaDecoderLayerImpl::forward_decode(const torch::Tensor& x, const torch::Tensor& cos_all,
                                                    const torch::Tensor& sin_all, const at::Tensor& pos,
                                                    int64_t window, KvCache& cache, size_t layer) {
  using engine::fused::DecodeAct;
  namespace f = engine::fused;
  // Five launches a layer on sm_90 (six before): q/k/v with the input norm, rotary and the cache writes, attention,
  // the output projection + residual, gate/up + SwiGLU (with the post-attention norm), down + residual.
  const at::Tensor ctx = decode_attend(x, {q_proj->weight, k_proj->weight, v_proj->weight}, {},
                                       {input_layernorm->weight, {}, input_layernorm->eps(), true}, heads_, kv_heads_,
                                       cos_all, sin_all, pos, window, cache, layer, math_);
  const at::Tensor h = f::decode_linear(ctx.reshape({x.size(0), -1}), {o_proj->weight}, {}, DecodeAct::kNone, x);
  const at::Tensor act = f::decode_linear(h, {gate_proj->weight, up_proj->weight}, {}, DecodeAct::kSwiglu, {},
                                          {post_attention_layernorm->weight, {}, post_attention_layernorm->eps(), true});
  return f::decode_linear(act, {down_proj->weight}, {}, DecodeAct::kNone, h);
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const LlamaOptions& o) : options_(o) {
  model_ = group(*this, "model");
  embed_tokens_ = model_->register_module("embed_tokens", torch::nn::Embedding(o.vocab_size, o.hidden));
  torch::nn::ModuleList list;
  for (int64_t i = 0; i < o.layers; ++i) {
    layers.push_back(LlamaDecoderLayer(o));
    list->push_back(layers.back());
  }
  model_->register_module("layers", list);
  norm_ = model_->register_module("norm", RMSNorm(o.hidden, o.rms_norm_eps));
  lm_head_ = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(o.hidden, o.vocab_size).bias(false)));
  run_layer = [this](size_t i, const torch::Tensor& x, const torch::Tensor& c, const torch::Tensor& s) {
    return layers[i]->forward(x, c, s);
  };
  // transformers' LlamaPreTrainedModel._init_weights: N(0, initializer_range 0.02) for Linear and Embedding weights,
  // RMSNorm weights 1 (already).
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* l = m->as<torch::nn::LinearImpl>()) torch::nn::init::normal_(l->weight, 0.0, 0.02);
    if (auto* e = m->as<torch::nn::EmbeddingImpl>()) torch::nn::init::normal_(e->weight, 0.0, 0.02);
  }
}

std::pair<torch::Tensor, torch::Tensor> LlamaForCausalLMImpl::rotary(int64_t tokens, const torch::Device& device,
                                                                     at::ScalarType dtype) {
  if (!cos_.defined() || cos_.size(0) != tokens || cos_.device() != device || cos_.scalar_type() != dtype) {
    torch::NoGradGuard no_grad;
    c10::InferenceMode normal_tensors(false);  // a cache made in an inference run stays usable by a training one
    const auto f = torch::TensorOptions().dtype(torch::kFloat).device(device);
    const int64_t d = options_.head_dim();
    const torch::Tensor inv_freq =
        1.0 / at::pow(options_.rope_theta, at::arange(0, d, 2, f.dtype(torch::kLong)).to(f) / static_cast<double>(d));
    const torch::Tensor freqs = at::outer(at::arange(tokens, f), inv_freq);
    const torch::Tensor emb = at::cat({freqs, freqs}, -1);
    cos_ = emb.cos().to(dtype);
    sin_ = emb.sin().to(dtype);
  }
  return {cos_, sin_};
}

torch::Tensor LlamaForCausalLMImpl::forward(const torch::Tensor& input_ids) {
  return linear(lm_head_, hidden(input_ids));
}

torch::Tensor LlamaForCausalLMImpl::hidden(const torch::Tensor& input_ids) {
  // The tables in the projections' dtype (bf16 under autocast), cast once and cached rather than per layer and step:
  // the same products as transformers' fp32 ones, without promoting q and k to fp32.
  const at::ScalarType dtype = engine::compute_dtype(lm_head_->weight);
  const auto [cos, sin] = rotary(input_ids.size(1), input_ids.device(), dtype);
  torch::Tensor h = embed_tokens_(input_ids);
  if (options_.fused && fuse_across_layers) {
    torch::Tensor n = layers.front()->input_layernorm(h);
    for (size_t i = 0; i < layers.size(); ++i) {
      std::tie(h, n) = layers[i]->forward_fused(h, n, cos, sin, i + 1 < layers.size() ? layers[i + 1]->input_layernorm
                                                                                       : norm_);
    }
    return n;
  }
  for (size_t i = 0; i < layers.size(); ++i) h = run_layer(i, h, cos, sin);
  return norm_(h);
}

KvCache LlamaForCausalLMImpl::make_cache(int64_t batch, int64_t positions, const at::TensorOptions& options) const {
  return make_kv_cache(layers.size(), batch, positions, options_.kv_heads, options_.head_dim(), options);
}

torch::Tensor LlamaForCausalLMImpl::logits_cached(const torch::Tensor& ids, const at::Tensor& pos, int64_t window,
                                                  KvCache& cache) {
  const int64_t t = ids.size(1);
  if (options_.fused && pos.defined() && t == 1) {  // one decode step by the decode operations
    namespace f = engine::fused;
    return f::decode_linear(decode_hidden(ids, pos, window, cache), {lm_head_->weight}, {}, f::DecodeAct::kNone, {},
                            {norm_->weight, {}, norm_->eps(), true});
  }
  // The tables for every position the cache holds (cached once), the tokens' rows picked on the device.
  const auto [cos_all, sin_all] = rotary(cache.positions(), ids.device(), engine::compute_dtype(lm_head_->weight));
  const at::Tensor cos = rows_at(cos_all, pos, t), sin = rows_at(sin_all, pos, t);
  if (pos.defined()) cache.begin_step(pos);
  torch::Tensor h = embed_tokens_(ids);
  for (size_t i = 0; i < layers.size(); ++i) h = layers[i]->forward_cached(h, cos, sin, pos, window, cache, i);
  return linear(lm_head_, norm_(h.narrow(1, t - 1, 1)).squeeze(1));  // the last token's logits only
}

torch::Tensor LlamaForCausalLMImpl::decode_hidden(const torch::Tensor& ids, const at::Tensor& pos, int64_t window,
                                                  KvCache& cache) {
  const auto [cos_all, sin_all] = rotary(cache.positions(), ids.device(), engine::compute_dtype(lm_head_->weight));
  // (flash's keys in use are set by layer 0's decode_attend)
  at::Tensor h = engine::fused::decode_embed(ids, embed_tokens_->weight, {}, pos);
  for (size_t i = 0; i < layers.size(); ++i) h = layers[i]->forward_decode(h, cos_all, sin_all, pos, window, cache, i);
  return h;
}

bool LlamaForCausalLMImpl::decode_greedy(const GreedyStep& step, int64_t window, KvCache& cache) {
  if (!options_.fused) return false;
  const at::Tensor& token = step.token;
  const bool one_kernel = step_kernel_greedy(step, window, cache, [this, &cache, &token] {
    engine::fused::DecodeStepWeights w;
    for (auto& l : layers) {
      engine::fused::DecodeStepLayerWeights t;
      t.attn_norm_w = l->input_layernorm->weight;
      t.wq = l->q_proj->weight;
      t.wk = l->k_proj->weight;
      t.wv = l->v_proj->weight;
      t.wo = l->o_proj->weight;
      t.mlp_norm_w = l->post_attention_layernorm->weight;
      t.w_gate = l->gate_proj->weight;
      t.w_up = l->up_proj->weight;
      t.w_down = l->down_proj->weight;
      w.layers.push_back(t);
    }
    const auto [cos_all, sin_all] = rotary(cache.positions(), token.device(), engine::compute_dtype(lm_head_->weight));
    w.rope_cos = cos_all;
    w.rope_sin = sin_all;
    w.embed = embed_tokens_->weight;
    w.final_norm_w = norm_->weight;
    w.lm_head = lm_head_->weight;
    w.q_heads = options_.heads;
    w.kv_heads = options_.kv_heads;
    w.rms = true;
    w.eps = norm_->eps();
    return w;
  });
  if (!one_kernel) {
    greedy_head(decode_hidden(step.token, step.pos, window, cache), lm_head_->weight,
                {norm_->weight, {}, norm_->eps(), true}, step, cache);
  }
  return true;
}

double decoder_attention_train_flops_per_sequence(int64_t layers, int64_t hidden, int64_t seq_len) {
  const double s = static_cast<double>(seq_len);
  return 3.0 * static_cast<double>(layers) * 4.0 * s * s * static_cast<double>(hidden);
}

namespace {
double train_flops(double matmul_weights_per_token, int64_t layers, int64_t hidden, int64_t seq_len) {
  return 6.0 * matmul_weights_per_token * static_cast<double>(seq_len) +
         decoder_attention_train_flops_per_sequence(layers, hidden, seq_len);
}
}  // namespace

double gpt2_train_flops_per_sequence(const Gpt2Options& o, int64_t seq_len) {
  const double d = static_cast<double>(o.hidden);
  const double per_layer = 4 * d * d + 2 * d * static_cast<double>(o.intermediate());  // qkv, proj, fc, proj
  return train_flops(static_cast<double>(o.layers) * per_layer + d * static_cast<double>(o.vocab_size), o.layers,
                     o.hidden, seq_len);
}

double llama_train_flops_per_sequence(const LlamaOptions& o, int64_t seq_len) {
  const double d = static_cast<double>(o.hidden), kv = static_cast<double>(o.kv_heads * o.head_dim());
  const double per_layer = 2 * d * d + 2 * d * kv + 3 * d * static_cast<double>(o.intermediate);
  return train_flops(static_cast<double>(o.layers) * per_layer + d * static_cast<double>(o.vocab_size), o.layers,
                     o.hidden, seq_len);
}

}  // namespace gpubench::models
