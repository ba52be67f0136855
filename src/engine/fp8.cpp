#include "fp8.h"

#include "gpubench/core/scenario/resolve.hpp"
#include "precision.h"

#include <torch/autograd.h>

#include "cuda/kernel_calls.h"
#include "fused/kernel_launch.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

namespace gpubench::engine::fp8 {

std::string name(Format f) { return f == Format::kE4M3 ? "e4m3" : "e5m2"; }

std::string name(Scaling s) {
  switch (s) {
    case Scaling::kTensor: return "tensor";
    case Scaling::kRowwise: return "rowwise";
    case Scaling::kDelayed: return "delayed";
  }
  return "tensor";
}

std::optional<Format> parse_format(const std::string& s) {
  if (s == "e4m3") return Format::kE4M3;
  if (s == "e5m2") return Format::kE5M2;
  return std::nullopt;
}

std::optional<Scaling> parse_scaling(const std::string& s) {
  if (s == "tensor") return Scaling::kTensor;
  if (s == "rowwise") return Scaling::kRowwise;
  if (s == "delayed") return Scaling::kDelayed;
  return std::nullopt;
}

at::ScalarType dtype(Format f) { return f == Format::kE4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2; }

double max_value(Format f) { return f == Format::kE4M3 ? 448.0 : 57344.0; }

at::Tensor scale_from_amax(const at::Tensor& amax, Format f) {
  const at::Tensor a = amax.to(at::kFloat);
  const at::Tensor usable = at::logical_and(a > 0, at::isfinite(a));
  // max / amax where the amax is usable, else 1 (the division by a safe denominator keeps inf out of the discarded
  // branch too).
  return at::where(usable, max_value(f) / at::where(usable, a, at::ones_like(a)), at::ones_like(a));
}

namespace {

/// Whether `t`'s device's current stream is capturing a CUDA graph: nothing computed outside the capture may stand in
/// for work the replays must repeat.
bool capturing(const at::Tensor& t) { return gpubench::engine::fused::cuda_ops::stream_capturing(t); }

/// The zeroed slots zeroed_amaxes hands out: one buffer per device, replaced (not re-zeroed) when used up, so a slot
/// still read later (a noted amax) keeps its value. Never freed: it would outlive the CUDA context at exit.
struct AmaxPool {
  at::Tensor slots;
  int64_t next = 0;
};
constexpr int64_t kPoolSlots = 1 << 16;
std::mutex g_pool_mutex;
auto* g_pools = new std::map<int, AmaxPool>();

}  // namespace

at::Tensor zeroed_amaxes(int64_t n, const at::Tensor& like) {
  const auto opts = like.options().dtype(at::kFloat);
  // A captured graph's replays must zero their slots themselves: there, a fill of their own.
  if (!like.is_cuda() || n > kPoolSlots || capturing(like)) return at::zeros({n}, opts);
  const std::lock_guard<std::mutex> lock(g_pool_mutex);
  AmaxPool& pool = (*g_pools)[like.device().index()];
  if (!pool.slots.defined() || pool.next + n > kPoolSlots) {
    pool.slots = at::zeros({kPoolSlots}, opts);
    pool.next = 0;
  }
  at::Tensor out = pool.slots.narrow(0, pool.next, n);
  pool.next += n;
  return out;
}

at::Tensor amax(const at::Tensor& x, bool rowwise) {
  if (rowwise) {
    if (x.dim() != 2) throw std::invalid_argument("fp8 amax: rowwise scaling needs a 2-D tensor");
    return x.abs().amax({1}, /*keepdim=*/true).to(at::kFloat);
  }
  if (fused::launch::on_kernels(x) && x.is_contiguous()) {  // one read, no |x| temporary
    at::Tensor out = zeroed_amaxes(1, x).select(0, 0);
    fused::cuda_ops::fp8_amax(x, out);
    return out;
  }
  return x.abs().amax().to(at::kFloat);
}

Quantized quantize(const at::Tensor& x, Format f, const at::Tensor& scale) {
  const double m = max_value(f);
  Quantized q;
  q.data = (x.to(at::kFloat) * scale).clamp(-m, m).to(dtype(f));
  q.inv_scale = scale.reciprocal();
  return q;
}

Quantized quantize_from_amax(const at::Tensor& x, Format f, const at::Tensor& amax, bool rows, bool transposed) {
  if (x.dim() != 2) throw std::invalid_argument("fp8 quantize_from_amax: x must be 2-D");
  if (amax.numel() == 1 && fused::cuda_ops::fp8_cast_takes(x)) {
    const auto opts = x.options().dtype(dtype(f));
    Quantized q;
    if (rows) q.data = at::empty({x.size(0), x.size(1)}, opts);
    if (transposed) q.data_t = at::empty({x.size(1), x.size(0)}, opts);
    q.inv_scale = at::empty({}, x.options().dtype(at::kFloat));
    fused::cuda_ops::fp8_cast(x, f == Format::kE5M2, amax.to(at::kFloat).contiguous(), q.data, q.data_t, q.inv_scale);
    return q;
  }
  Quantized q = quantize(x, f, scale_from_amax(amax, f));
  if (transposed) q.data_t = q.data.t().contiguous();
  if (!rows) q.data = at::Tensor();
  return q;
}

AmaxHistory::AmaxHistory(int64_t length) : length_(length) {
  if (length < 1) throw std::invalid_argument("fp8 amax history: the length must be at least 1");
}

at::Tensor AmaxHistory::push(const at::Tensor& amax) {
  const at::Tensor a = amax.to(at::kFloat).reshape({});
  if (!history_.defined() || history_.device() != a.device()) history_ = at::zeros({length_}, a.options());
  history_.select(0, next_ % length_).copy_(a);  // a device copy: no host synchronisation
  ++next_;
  return history_.amax();
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

/// a (row-major [m, k], FP8) times b given as bt ([n, k] row-major, so b = bt^T is the column-major [k, n] that
/// _scaled_mm takes), with their inverse scales, into `out` dtype.
at::Tensor scaled_mm(const at::Tensor& a, const at::Tensor& a_inv, const at::Tensor& bt, const at::Tensor& b_inv,
                     at::ScalarType out, bool fast_accum) {
  if (!a.is_cuda() && (a_inv.numel() > 1 || b_inv.numel() > 1)) {
    // ATen's CPU _scaled_mm takes per-tensor scales only: row-wise scales are on the dimensions the product keeps,
    // so they factor out of it (the same values; CUDA applies them in the GEMM's epilogue).
    const at::Tensor one = at::ones({}, a_inv.options());
    return (at::_scaled_mm(a, bt.t(), one, one, std::nullopt, std::nullopt, at::kFloat, false) * a_inv * b_inv).to(out);
  }
  return at::_scaled_mm(a, bt.t(), a_inv, b_inv, std::nullopt, std::nullopt, out, fast_accum && a.is_cuda());
}

/// The per-tensor amax that scales `x` under the recipe: its own (current scaling), or the largest of `history`'s
/// with this one pushed (delayed scaling). `noted`: x may have been written by a kernel that noted its amax (an
/// activation or a gradient; a weight never is, and is not looked up).
at::Tensor tensor_amax(const at::Tensor& x, const Recipe& r, AmaxHistory* history, bool noted = true) {
  at::Tensor a = noted ? take_amax(x) : at::Tensor();  // the kernel that wrote x may have computed it
  if (!a.defined()) a = amax(x, false);
  return r.scaling == Scaling::kDelayed && history != nullptr ? history->push(a) : a;
}

/// Whether `t` holds the values `held` held at `version`: the same storage address, shape and dtype, and no write since
/// (every in-place write moves the shared version counter on). `held` is kept alive by its holder, so its address
/// cannot have been reused.
bool same_values(const at::Tensor& held, int64_t version, const at::Tensor& t) {
  return held.defined() && held.data_ptr() == t.data_ptr() && held.sizes() == t.sizes() &&
         held.scalar_type() == t.scalar_type() && version == t._version();
}

/// The forward input at a per-tensor scale: the values for this product and the transpose for the weight's gradient,
/// one pass; under current scaling shared through `memo` with the next layers reading the same tensor.
Quantized quantize_input(const at::Tensor& x2, const Recipe& r, LinearState* state, InputMemo* memo) {
  const bool share = memo != nullptr && r.scaling == Scaling::kTensor;
  if (share && same_values(memo->source, memo->version, x2)) return memo->q;
  Quantized q = quantize_from_amax(x2, Format::kE4M3, tensor_amax(x2, r, state ? &state->x : nullptr), true, true);
  // detach(): the same storage and version counter, without holding the autograd graph that made x2
  if (share) *memo = InputMemo{x2.detach(), x2._version(), q};
  return q;
}

/// The weight [out, in] in e4m3 at a per-tensor scale with its transpose [in, out], from the layer's cache while the
/// weight is unchanged. While a graph is captured only from a cache filled inside that capture (Plan::quantize_weights
/// at the captured step's start: its replays redo it), and one filled there is not used outside it (the capture ran
/// no kernel: those buffers hold an earlier step's values).
Quantized quantize_weight(const at::Tensor& weight, const Recipe& r, LinearState* state) {
  const bool capture = capturing(weight);
  if (state != nullptr && state->weight.captured == capture &&
      same_values(state->weight.source, state->weight.version, weight)) {
    return state->weight.q;
  }
  const bool cache = state != nullptr && !capture;
  AmaxHistory* history = state ? &state->w : nullptr;
  Quantized q;
  if (!weight.is_contiguous() && weight.t().is_contiguous()) {  // GPT-2's Conv1D: [in, out] underneath
    const at::Tensor wt = weight.t();
    const Quantized t = quantize_from_amax(wt, Format::kE4M3, tensor_amax(wt, r, history, false), true, true);
    q = Quantized{t.data_t, t.inv_scale, t.data};
  } else {
    const at::Tensor w = weight.contiguous();
    q = quantize_from_amax(w, Format::kE4M3, tensor_amax(w, r, history, false), true, true);
  }
  if (cache) state->weight = WeightCache{q, weight.detach(), weight._version()};
  return q;
}

template <typename T>
T* from_code(int64_t code) {
  return reinterpret_cast<T*>(static_cast<intptr_t>(code));
}
int64_t to_code(const void* p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

class Fp8LinearFn : public torch::autograd::Function<Fp8LinearFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            int64_t grad_format, int64_t scaling, int64_t state_code, int64_t memo_code,
                            int64_t out_dtype_code) {
    const NoAutocast no_autocast;
    Recipe r;
    r.grad_format = static_cast<Format>(grad_format);
    r.scaling = static_cast<Scaling>(scaling);
    auto* state = from_code<LinearState>(state_code);
    const auto out_dtype = static_cast<at::ScalarType>(out_dtype_code);
    const int64_t in = weight.size(1), out = weight.size(0);
    const at::Tensor x2 = x.reshape({-1, in}).contiguous();
    at::Tensor y;
    const Quantized qw = quantize_weight(weight, r, state);  // per tensor: the forward's, or rowwise's backward's
    if (r.scaling == Scaling::kRowwise) {
      // Row-wise scales multiply the product's rows (x's) and columns (the weight's rows): [m, 1] and [1, n];
      // row-wise products are bf16 in _scaled_mm. The backward products are per tensor: x is kept in the compute
      // dtype.
      const Quantized qx = quantize(x2, Format::kE4M3, scale_from_amax(amax(x2, true), Format::kE4M3));
      const Quantized rw = quantize(weight, Format::kE4M3, scale_from_amax(amax(weight, true), Format::kE4M3));
      y = scaled_mm(qx.data, qx.inv_scale, rw.data.contiguous(), rw.inv_scale.t(), at::kBFloat16, /*fast_accum=*/true);
      ctx->save_for_backward({x2.to(out_dtype), at::Tensor(), qw.data_t, qw.inv_scale});
    } else {
      const Quantized qx = quantize_input(x2, r, state, from_code<InputMemo>(memo_code));
      y = scaled_mm(qx.data, qx.inv_scale, qw.data, qw.inv_scale, out_dtype, /*fast_accum=*/true);
      ctx->save_for_backward({qx.data_t, qx.inv_scale, qw.data_t, qw.inv_scale});  // x^T and W^T: dW's and dX's
    }
    if (bias.numel() > 0) y = y + bias.to(y.scalar_type());
    if (y.scalar_type() != out_dtype) y = y.to(out_dtype);
    ctx->saved_data["grad_format"] = grad_format;
    ctx->saved_data["scaling"] = scaling;
    ctx->saved_data["state"] = state_code;
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = out;
    return y.view(sizes);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    Recipe r;
    r.grad_format = static_cast<Format>(ctx->saved_data["grad_format"].toInt());
    r.scaling = static_cast<Scaling>(ctx->saved_data["scaling"].toInt());
    auto* state = from_code<LinearState>(ctx->saved_data["state"].toInt());
    // The weight's gradient is being computed: an optimizer step may follow, and not every one moves the weight's
    // version counter (the fused CPU ones, torch::optim's do not), so the next forward pass quantises it afresh.
    // (A weight Plan::quantize_weights prepared stays for the step's other micro-batches: the next step replaces it.)
    if (state != nullptr && !state->weight.prepared) state->weight = WeightCache{};
    const at::Tensor &w8t = saved[2], &w_inv = saved[3];  // W^T [in, out]
    const at::Tensor g2 = grad_out[0].reshape({-1, w8t.size(1)}).contiguous();
    const at::ScalarType gdtype = g2.scalar_type();  // the output's dtype: fp32, bf16 or fp16
    // dW [out, in] = g^T x, reduced over the tokens; _scaled_mm needs that dimension a multiple of 16.
    const int64_t m = g2.size(0);
    const bool dw_fp8 = m % 16 == 0;
    const Quantized qg =
        quantize_from_amax(g2, r.grad_format, tensor_amax(g2, r, state ? &state->g : nullptr), true, dw_fp8);
    // dX [m, in] = g [m, out] W [out, in]: _scaled_mm wants W column-major, i.e. W^T's rows.
    const at::Tensor d_x = scaled_mm(qg.data, qg.inv_scale, w8t, w_inv, gdtype, false);
    at::Tensor x8t, x_inv;
    if (saved[1].defined()) {
      x8t = saved[0];
      x_inv = saved[1];
    } else {  // row-wise recipe: x was kept in the compute dtype; quantise it per tensor for this product
      const Quantized qx = quantize_from_amax(saved[0], Format::kE4M3, amax(saved[0], false), false, true);
      x8t = qx.data_t;
      x_inv = qx.inv_scale;
    }
    at::Tensor d_w;
    if (dw_fp8) {
      d_w = scaled_mm(qg.data_t, qg.inv_scale, x8t, x_inv, at::kFloat, false);
    } else {  // too few or odd tokens for the FP8 kernels: the same product from the dequantised operands
      d_w = at::mm((qg.data.to(at::kFloat) * qg.inv_scale).t(), (x8t.to(at::kFloat) * x_inv).t());
    }
    const at::Tensor d_b =
        ctx->saved_data["has_bias"].toBool() ? g2.sum(0, /*keepdim=*/false, at::kFloat) : at::Tensor();
    return {d_x.view(ctx->saved_data["x_sizes"].toIntVector()),
            d_w,
            d_b,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const Recipe& recipe,
                  LinearState* state, InputMemo* memo) {
  if (weight.dim() != 2 || x.size(-1) != weight.size(1)) {
    throw std::invalid_argument("fp8 linear: weight must be [out, in] with in = x's last dimension");
  }
  if (!eligible(weight.size(1), weight.size(0))) {
    throw std::invalid_argument("fp8 linear: in and out features must be multiples of 16, not " +
                                std::to_string(weight.size(1)) + " and " + std::to_string(weight.size(0)));
  }
  if (recipe.scaling == Scaling::kDelayed && state == nullptr) {
    throw std::invalid_argument("fp8 linear: delayed scaling needs the layer's amax history (a LinearState)");
  }
  const at::Tensor b = bias.defined() ? bias : at::empty({0}, weight.options());
  const at::ScalarType out = compute_dtype(x);  // autocast's dtype, else x's (fp32, bf16, fp16)
  return Fp8LinearFn::apply(x, weight, b, static_cast<int64_t>(recipe.grad_format),
                            static_cast<int64_t>(recipe.scaling), to_code(state), to_code(memo),
                            static_cast<int64_t>(out));
}

bool eligible(int64_t in_features, int64_t out_features) {
  return in_features > 0 && out_features > 0 && in_features % 16 == 0 && out_features % 16 == 0;
}

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

Selection select(const std::vector<LinearLayer>& layers, const Recipe& recipe) {
  Selection s;
  for (const auto& l : layers) {
    if (ends_with(l.name, "lm_head") && !recipe.include_lm_head) {
      s.kept.push_back(l.name + " (the LM head; fp8_lm_head: true converts it)");
    } else if (ends_with(l.name, "classifier") && !recipe.include_classifier) {
      s.kept.push_back(l.name + " (the classifier; fp8_classifier: true converts it)");
    } else if (!eligible(l.in_features, l.out_features)) {
      s.kept.push_back(l.name + " (" + std::to_string(l.in_features) + " x " + std::to_string(l.out_features) +
                       ": not multiples of 16)");
    } else {
      s.converted.push_back(l.name);
    }
  }
  return s;
}

Plan::Plan(const std::vector<Layer>& layers, const Recipe& recipe) : recipe_(recipe) {
  std::vector<LinearLayer> shapes;
  for (const auto& l : layers) shapes.push_back({l.name, l.in_features, l.out_features});
  selection_ = select(shapes, recipe);
  for (const auto& l : layers) {
    if (std::find(selection_.converted.begin(), selection_.converted.end(), l.name) != selection_.converted.end()) {
      converted_.push_back({l.name, l.module, std::make_unique<LinearState>(recipe.amax_history), l.weight});
    }
  }
}

LinearState* Plan::find(const void* module) const {
  for (const auto& c : converted_) {
    if (c.module == module) {
      c.state->used = true;
      return c.state.get();
    }
  }
  return nullptr;
}

std::vector<std::string> Plan::ran() const {
  std::vector<std::string> out;
  for (const auto& c : converted_) {
    if (c.state->used) out.push_back(c.name);
  }
  return out;
}

int64_t Plan::quantize_weights() const {
  // Last step's prepared weights are not this step's: a layer this call leaves out quantises in its forward pass.
  for (const auto& c : converted_) {
    if (c.state->weight.prepared) c.state->weight = WeightCache{};
  }
  if (recipe_.scaling == Scaling::kDelayed) return 0;
  // The weights the many-tensor kernels take: contiguous [out, in] (cast to data, transposed to data_t) or
  // contiguous underneath as [in, out] (GPT-2's Conv1D: cast to data_t, transposed to data), all of one dtype.
  std::vector<size_t> layers;
  std::vector<at::Tensor> sources;  // what the kernels read, row-major
  std::optional<at::ScalarType> kind;
  for (size_t i = 0; i < converted_.size(); ++i) {
    const at::Tensor& w = converted_[i].weight;
    if (!w.defined() || w.dim() != 2 || !fused::launch::on_kernels(w)) continue;
    const at::Tensor src = w.is_contiguous() ? w : w.t();
    if (!src.is_contiguous() || src.size(0) % 8 != 0 || src.size(1) % 8 != 0 ||
        reinterpret_cast<uintptr_t>(src.data_ptr()) % 16 != 0) {
      continue;
    }
    if (!kind) kind = src.scalar_type();
    if (src.scalar_type() != *kind) continue;
    layers.push_back(i);
    sources.push_back(src);
  }
  if (layers.empty()) return 0;
  std::vector<const void*> addresses;
  for (const auto& t : sources) addresses.push_back(t.data_ptr());
  const bool capture = capturing(sources.front());
  if (addresses != jobs_.sources || layers != jobs_.layers || *kind != jobs_.dtype) {
    if (capture) return 0;  // the table is copied from the host: not inside a capture (its warm-up built it)
    WeightJobs j;
    j.sources = addresses;
    j.layers = layers;
    j.dtype = *kind;
    const auto dev = sources.front().options();
    j.amaxes = at::zeros({static_cast<int64_t>(layers.size())}, dev.dtype(at::kFloat));
    std::vector<fused::cuda_ops::Fp8CastTarget> targets;
    for (size_t k = 0; k < layers.size(); ++k) {
      const at::Tensor& src = sources[k];
      const bool transposed = !converted_[layers[k]].weight.is_contiguous();
      const int64_t rows = src.size(0), cols = src.size(1);
      const auto f8 = dev.dtype(dtype(Format::kE4M3));
      Quantized q;  // data [out, in], data_t [in, out], whichever way the source lies
      at::Tensor rows_major = at::empty({rows, cols}, f8), cols_major = at::empty({cols, rows}, f8);
      q.data = transposed ? cols_major : rows_major;
      q.data_t = transposed ? rows_major : cols_major;
      q.inv_scale = at::empty({}, dev.dtype(at::kFloat));
      targets.push_back({src, j.amaxes.narrow(0, static_cast<int64_t>(k), 1), rows_major, cols_major, q.inv_scale});
      j.buffers.push_back(q);
      j.held.push_back(converted_[layers[k]].weight.detach());
    }
    j.table = fused::cuda_ops::fp8_cast_table(targets);
    jobs_ = std::move(j);
  }
  jobs_.amaxes.zero_();
  fused::cuda_ops::fp8_amax_cast_many(jobs_.table, sources.front());
  for (size_t k = 0; k < layers.size(); ++k) {  // the held weight shares the weight's version counter
    const at::Tensor& w = jobs_.held[k];
    converted_[layers[k]].state->weight = WeightCache{jobs_.buffers[k], w, w._version(), true, capture};
  }
  return static_cast<int64_t>(layers.size());
}

namespace {
thread_local const Plan* g_active = nullptr;

struct Note {
  at::Tensor tensor, amax;
  int64_t version;
};
std::mutex g_notes_mutex;
std::deque<Note> g_notes;  // oldest first
constexpr size_t kMaxNotes = 8;
}  // namespace

void note_amax(const at::Tensor& t, const at::Tensor& amax) {
  const std::lock_guard<std::mutex> lock(g_notes_mutex);
  if (g_notes.size() == kMaxNotes) g_notes.pop_front();
  g_notes.push_back(Note{t.detach(), amax, t._version()});  // detached: the note holds no autograd graph
}

at::Tensor take_amax(const at::Tensor& t) {
  if (!t.is_contiguous()) return at::Tensor();
  // Element counts, not shapes: noted as written ([..., n]), asked for as the [rows, n] the FP8 layer reads.
  const void* data = t.data_ptr();
  const int64_t numel = t.numel(), version = t._version();
  const at::ScalarType type = t.scalar_type();
  const std::lock_guard<std::mutex> lock(g_notes_mutex);
  for (auto it = g_notes.begin(); it != g_notes.end(); ++it) {
    const at::Tensor& held = it->tensor;
    if (held.data_ptr() == data && held.numel() == numel && held.scalar_type() == type && it->version == version) {
      at::Tensor a = it->amax;
      g_notes.erase(it);
      return a;
    }
  }
  return at::Tensor();
}

KernelAmaxes::KernelAmaxes(bool on, int64_t n, const at::Tensor& like) {
  if (on) slots_ = zeroed_amaxes(n, like);
}

float* KernelAmaxes::slot(int64_t i) const { return slots_.defined() ? slots_.data_ptr<float>() + i : nullptr; }

void KernelAmaxes::note(int64_t i, const at::Tensor& written) const {
  if (slots_.defined()) note_amax(written, slots_.select(0, i));
}

PlanScope::PlanScope(const Plan* plan) : previous_(g_active) { g_active = plan; }
PlanScope::~PlanScope() { g_active = previous_; }

Plan::~Plan() {
  const std::lock_guard<std::mutex> lock(g_notes_mutex);
  g_notes.clear();  // notes nobody took (a tensor no FP8 layer read) hold their tensors until here
}
const Plan* active_plan() { return g_active; }

std::optional<std::string> unsupported(const std::string& device_type, const std::string& device_name,
                                       int capability) {
  return fp8_unsupported(device_type, device_name, capability);
}

}  // namespace gpubench::engine::fp8
