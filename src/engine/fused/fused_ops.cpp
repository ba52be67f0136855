#include "fused/fused_ops.h"

#include <torch/autograd.h>

#include <atomic>
#include <stdexcept>

#include "cuda/kernel_calls.h"
#include "decode/decode_ops.h"
#include "fp8.h"
#include "fused/kernel_launch.h"
#include "precision.h"

namespace gpubench::engine::fused {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

using launch::on_kernels;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// rotate_half(x) = cat(-x2, x1) over the last dimension, and its transpose cat(y2, -y1).
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, h, h), x.narrow(-1, 0, h)}, -1);
}
at::Tensor rotate_half_transposed(const at::Tensor& y) {
  const int64_t h = y.size(-1) / 2;
  return at::cat({y.narrow(-1, h, h), -y.narrow(-1, 0, h)}, -1);
}

// ---- the LM head with its loss ----------------------------------------------------------------------------------

/// Loss, gradient of h and gradient of the weight, computed together in the forward pass (the gradient of a mean
/// loss is known once its logits are): the logits of one chunk of tokens exist at a time, and the backward pass only
/// scales the saved gradients by the incoming one.
class LinearCrossEntropyFn : public torch::autograd::Function<LinearCrossEntropyFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& h, const at::Tensor& weight,
                            const at::Tensor& targets, int64_t ignore_index, int64_t chunk_rows, int64_t dtype_code) {
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const int64_t n = h.size(0), vocab = weight.size(0);
    const at::Tensor hc = h.to(dtype).contiguous();
    const at::Tensor t = targets.reshape({-1}).contiguous();
    const bool kernel = on_kernels(hc);
    // The weight in the compute dtype; on CUDA with the vocabulary padded to a multiple of 64 (zero rows), so the
    // logits' rows are aligned and cuBLAS takes its fast kernels (GPT-2's 50,257 words would not be).
    at::Tensor w;
    if (kernel && vocab % 64 != 0) {
      w = at::empty({round_up(vocab, 64), weight.size(1)}, hc.options());
      w.narrow(0, vocab, w.size(0) - vocab).zero_();
      w.narrow(0, 0, vocab).copy_(weight);
    } else {
      w = weight.to(dtype).contiguous();
    }
    const at::Tensor counted = t.ne(ignore_index);
    const at::Tensor inv_count = at::reciprocal(counted.sum().to(at::kFloat).clamp_min(1.0)).reshape({1});
    at::Tensor loss_rows = at::empty({n}, hc.options().dtype(at::kFloat));
    at::Tensor grad_h = at::empty_like(hc);
    at::Tensor grad_w = at::zeros({w.size(0), w.size(1)}, hc.options().dtype(at::kFloat));
    const int64_t chunk = std::max<int64_t>(1, chunk_rows);
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
      const int64_t rows = std::min(chunk, n - r0);
      const at::Tensor hr = hc.narrow(0, r0, rows), tr = t.narrow(0, r0, rows);
      at::Tensor g;  // the chunk's gradient of the loss with respect to its logits, in the compute dtype
      if (kernel) {
        g = cuda_ops::softmax_cross_entropy_grad(hr, w, tr, vocab, ignore_index, inv_count,
                                                 loss_rows.narrow(0, r0, rows));
      } else {
        // log_softmax and softmax, as cross_entropy computes them: ATen's own vectorised exp. Not at::exp, which
        // on float calls MKL's VML; its first call in a process, after an MKL GEMM and under CPU contention, has
        // been seen to return values off by ~3e-5 (relative) in its second thread (wheel 2.11.0, oneMKL 2024.0).
        const at::Tensor logits = at::mm(hr, w.t()).to(at::kFloat);
        const at::Tensor keep = tr.ne(ignore_index);
        const at::Tensor safe = at::where(keep, tr, at::zeros_like(tr));
        const at::Tensor picked = at::log_softmax(logits, 1).gather(1, safe.unsqueeze(1)).squeeze(1);
        loss_rows.narrow(0, r0, rows).copy_(-picked * keep);
        at::Tensor p = at::softmax(logits, 1);
        p.scatter_add_(1, safe.unsqueeze(1), -at::ones({rows, 1}, p.options()));
        g = (p * keep.unsqueeze(1).to(at::kFloat) * inv_count).to(dtype);
      }
      grad_h.narrow(0, r0, rows).copy_(at::mm(g, w));
      grad_w.add_(at::mm(g.t(), hr));
    }
    ctx->save_for_backward({grad_h, grad_w});
    ctx->saved_data["vocab"] = vocab;
    ctx->saved_data["h_dtype"] = static_cast<int64_t>(h.scalar_type());
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(weight.scalar_type());
    return loss_rows.sum() * inv_count.squeeze(0);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grad_out[0];  // a scalar: 1, or the fp16 loss scale (a power of two: exact)
    const int64_t vocab = ctx->saved_data["vocab"].toInt();
    const auto h_dtype = static_cast<at::ScalarType>(ctx->saved_data["h_dtype"].toInt());
    const auto w_dtype = static_cast<at::ScalarType>(ctx->saved_data["w_dtype"].toInt());
    at::Tensor grad_h = saved[0].to(h_dtype).mul_(g);
    at::Tensor grad_w = saved[1].narrow(0, 0, vocab).to(w_dtype).mul_(g);
    return {grad_h, grad_w, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// ---- SwiGLU -----------------------------------------------------------------------------------------------------

class SwigluFn : public torch::autograd::Function<SwigluFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    const at::Tensor g = gate.contiguous(), u = up.to(gate.scalar_type()).contiguous();
    ctx->save_for_backward({g, u});
    // Under FP8 training the output and both gradients feed FP8 layers (down_proj; gate_proj and up_proj backward):
    // their amaxes come from these passes, noted for those layers.
    const bool fp8 = fp8::active_plan() != nullptr;
    ctx->saved_data["fp8"] = fp8;
    if (on_kernels(g)) return cuda_ops::swiglu_forward(g, u, fp8);
    return at::silu(g) * u;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &g = saved[0], &u = saved[1];
    const at::Tensor d = grad_out[0].to(g.scalar_type()).contiguous();
    if (on_kernels(g)) {
      auto [d_gate, d_up] = cuda_ops::swiglu_backward(g, u, d, ctx->saved_data["fp8"].toBool());
      return {d_gate, d_up};
    }
    const at::Tensor gf = g.to(at::kFloat), sig = at::sigmoid(gf), silu = gf * sig;
    const at::Tensor df = d.to(at::kFloat);
    return {(df * u.to(at::kFloat) * (sig + silu * (1 - sig))).to(g.scalar_type()), (df * silu).to(u.scalar_type())};
  }
};

// ---- rotary embeddings ------------------------------------------------------------------------------------------

class RotaryFn : public torch::autograd::Function<RotaryFn> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                             const at::Tensor& sin) {
    const at::Tensor qc = q.contiguous(), kc = k.to(q.scalar_type()).contiguous();
    const at::Tensor c = cos.to(q.scalar_type()).contiguous(), s = sin.to(q.scalar_type()).contiguous();
    ctx->save_for_backward({c, s});
    // Under FP8 training q's and k's gradients reach q_proj and k_proj: their amaxes come from the backward pass.
    ctx->saved_data["fp8"] = fp8::active_plan() != nullptr;
    return rotate(qc, kc, c, s, /*inverse=*/false, /*amaxes=*/false);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& c = saved[0];
    const at::Tensor gq = grad_out[0].to(c.scalar_type()).contiguous(), gk = grad_out[1].to(c.scalar_type()).contiguous();
    tensor_list g = rotate(gq, gk, c, saved[1], /*inverse=*/true, ctx->saved_data["fp8"].toBool());
    return {g[0], g[1], at::Tensor(), at::Tensor()};
  }

 private:
  /// x * cos + rotate_half(x) * sin for q and k (or its transpose), tables [seq, head_dim] over [b, seq, heads, d].
  /// `amaxes`: the kernel also gives both outputs' amaxes, noted for the FP8 layers that quantise them next.
  static tensor_list rotate(const at::Tensor& q, const at::Tensor& k, const at::Tensor& c, const at::Tensor& s,
                            bool inverse, bool amaxes) {
    if (on_kernels(q)) {
      auto [q_out, k_out] = cuda_ops::rotary(q, k, c, s, inverse, amaxes);
      return {q_out, k_out};
    }
    const at::Tensor cb = c.unsqueeze(1), sb = s.unsqueeze(1);  // [seq, 1, d]: broadcast over heads
    auto one = [&](const at::Tensor& x) {
      return inverse ? x * cb + rotate_half_transposed(x * sb) : x * cb + rotate_half(x) * sb;
    };
    return {one(q), one(k)};
  }
};


// ---- BERT's sub-layer outputs: linear + dropout + residual + LayerNorm, and linear + GELU -------------------------

bool aligned16(const at::Tensor& t) {
  return !t.defined() || reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

std::vector<int64_t> with_last(at::IntArrayRef sizes, int64_t last) {
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  out.back() = last;
  return out;
}


/// The gradient of a weight [out, in] from g [rows, out] and the layer's input x [rows, in]: g^T x, written in fp32
/// by the GEMM itself where the parameter is fp32 and the product is bf16/fp16 on CUDA (ATen's mm with an output
/// dtype), which saves the cast autograd would otherwise make; else in the product's dtype.
at::Tensor weight_grad(const at::Tensor& g, const at::Tensor& x, at::ScalarType param_dtype) {
  static std::atomic<bool> fp32_out{true};  // off for good if this LibTorch refuses it
  if (param_dtype == at::kFloat && g.is_cuda() && (g.scalar_type() == at::kBFloat16 || g.scalar_type() == at::kHalf) &&
      fp32_out.load()) {
    try {
      return at::mm(g.t(), x, at::kFloat);
    } catch (const std::exception&) {
      fp32_out = false;
    }
  }
  return at::mm(g.t(), x);
}

/// The column sums of g [rows, n] (a bias gradient) in fp32: gpubench's kernel on CUDA, else ATen's sum.
at::Tensor bias_grad(const at::Tensor& g) {
  return on_kernels(g) ? cuda_ops::column_sum(g) : g.sum(0);
}

/// dropout(y) + r and LayerNorm over rows of n: what the sub-layer fusions do after their GEMMs. `g`, `b` fp32.
struct AddNorm : cuda_ops::AddNormTensors {  ///< the stream, its norm, the dropout mask (if any), the row statistics
  bool kernel = false;                        ///< gpubench's row kernels ran (else ATen's operations)
};

AddNorm add_norm_forward(const at::Tensor& y, const at::Tensor& r, const at::Tensor& g, const at::Tensor& b, double p,
                         double eps) {
  AddNorm a;
  const int64_t n = y.size(1);
  const bool dropout = p > 0.0;
  a.kernel = on_kernels(y) && cuda_ops::layer_norm_rows(n, aligned16(y) && aligned16(r) && aligned16(g) && aligned16(b));
  if (a.kernel) {
    static_cast<cuda_ops::AddNormTensors&>(a) = cuda_ops::dropout_add_layer_norm(y, r, g, b, p, eps);
  } else {
    at::Tensor dropped = y;
    if (dropout) std::tie(dropped, a.keep) = at::native_dropout(y, p, true);
    a.s = dropped + r;
    std::tie(a.out, a.mean, a.rstd) =
        at::native_layer_norm(a.s, {n}, g.to(y.scalar_type()), b.to(y.scalar_type()), eps);
  }
  return a;
}

/// The stream's, y's (after dropout's mask), gamma's, beta's gradients, y's column sums.
using AddNormGrads = cuda_ops::AddNormGradTensors;

/// The backward pass of add_norm_forward: from the norm's gradient `d_out` and the stream's own `d_extra` (may be
/// undefined), both [rows, n] in the stream's dtype.
AddNormGrads add_norm_backward(const at::Tensor& d_out, const at::Tensor& d_extra, const at::Tensor& s,
                               const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& keep,
                               const at::Tensor& g, const at::Tensor& b, double p, bool kernel) {
  if (kernel) return cuda_ops::dropout_add_layer_norm_backward(d_out, d_extra, s, mean, rstd, keep, g, p);
  AddNormGrads r;
  const at::ScalarType dtype = s.scalar_type();
  std::tie(r.d_s, r.d_gamma, r.d_beta) = at::native_layer_norm_backward(d_out, s, {s.size(1)}, mean, rstd, g.to(dtype),
                                                                        b.to(dtype), {true, true, true});
  if (d_extra.defined()) r.d_s = r.d_s + d_extra;
  r.d_y = keep.defined() ? at::native_dropout_backward(r.d_s, keep, 1.0 / (1.0 - p)) : r.d_s;
  r.d_bias = r.d_y.sum(0);
  return r;
}

/// A sub-layer output's incoming gradient as [rows, n] in the stream's dtype (zeros where it has none).
at::Tensor stream_grad(const at::Tensor& g, const at::Tensor& s) {
  return g.defined() ? g.reshape({s.size(0), s.size(1)}).to(s.scalar_type()).contiguous() : at::zeros_like(s);
}

/// GELU's gradient d_act * gelu'(pre) and its column sums (the bias gradient, fp32 on the kernel): one pass on CUDA.
std::pair<at::Tensor, at::Tensor> gelu_backward_with_bias(const at::Tensor& d_act, const at::Tensor& pre,
                                                          bool tanh_approx) {
  if (on_kernels(pre)) return cuda_ops::gelu_backward_bias(d_act, pre, tanh_approx);
  at::Tensor d_pre = at::gelu_backward(d_act, pre, tanh_approx ? "tanh" : "none");
  return {d_pre, d_pre.sum(0)};
}

class LinearDropoutAddNormFn : public torch::autograd::Function<LinearDropoutAddNormFn> {
 public:
  /// {LayerNorm(s), s}: the normalised output and the residual stream s = residual + dropout(h W^T + bias).
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                             const at::Tensor& residual, const at::Tensor& gamma, const at::Tensor& beta, double p,
                             double eps, int64_t dtype_code) {
    const NoAutocast no_autocast;
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const int64_t n = weight.size(0);
    const at::Tensor h2 = h.reshape({-1, h.size(-1)}).to(dtype).contiguous();
    const at::Tensor w = weight.to(dtype);
    const bool has_bias = bias.numel() > 0;  // an empty placeholder: no bias
    const at::Tensor y = has_bias ? at::addmm(bias.to(dtype), h2, w.t())  // cuBLASLt, the bias in its epilogue
                                  : at::mm(h2, w.t());
    const at::Tensor r = residual.reshape({-1, n}).to(dtype).contiguous();
    const at::Tensor g = gamma.to(at::kFloat).contiguous(), b = beta.to(at::kFloat).contiguous();
    const AddNorm an = add_norm_forward(y, r, g, b, p, eps);
    ctx->save_for_backward({h2, w, an.s, an.mean, an.rstd, an.keep, g, b});
    ctx->saved_data["p"] = p;
    ctx->saved_data["kernel"] = an.kernel;
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(weight.scalar_type());
    ctx->saved_data["h_sizes"] = h.sizes().vec();
    ctx->saved_data["r_sizes"] = residual.sizes().vec();
    ctx->saved_data["has_bias"] = has_bias;
    return {an.out.view(with_last(h.sizes(), n)), an.s.view(residual.sizes())};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &h2 = saved[0], &w = saved[1], &s = saved[2];
    // The residual stream's own gradient (from the layers after it), where the stream is used beyond the norm.
    const at::Tensor d_extra = grad_out[1].defined() ? stream_grad(grad_out[1], s) : at::Tensor();
    const AddNormGrads gr = add_norm_backward(stream_grad(grad_out[0], s), d_extra, s, saved[3], saved[4], saved[5],
                                              saved[6], saved[7], ctx->saved_data["p"].toDouble(),
                                              ctx->saved_data["kernel"].toBool());
    const at::Tensor d_h = at::mm(gr.d_y, w).view(ctx->saved_data["h_sizes"].toIntVector());
    const at::Tensor d_w = weight_grad(gr.d_y, h2, static_cast<at::ScalarType>(ctx->saved_data["w_dtype"].toInt()));
    return {d_h, d_w, ctx->saved_data["has_bias"].toBool() ? gr.d_bias : at::Tensor(),
            gr.d_s.view(ctx->saved_data["r_sizes"].toIntVector()), gr.d_gamma, gr.d_beta, at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

class LinearGeluFn : public torch::autograd::Function<LinearGeluFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                            bool tanh_approx, int64_t dtype_code) {
    const NoAutocast no_autocast;
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const at::Tensor h2 = h.reshape({-1, h.size(-1)}).to(dtype).contiguous();
    const at::Tensor w = weight.to(dtype);
    const at::Tensor pre = at::addmm(bias.to(dtype), h2, w.t());
    ctx->save_for_backward({h2, w, pre});
    ctx->saved_data["tanh"] = tanh_approx;
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(weight.scalar_type());
    ctx->saved_data["h_sizes"] = h.sizes().vec();
    return at::gelu(pre, tanh_approx ? "tanh" : "none").view(with_last(h.sizes(), weight.size(0)));
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &h2 = saved[0], &w = saved[1], &pre = saved[2];
    const at::Tensor d_act = grad_out[0].reshape({pre.size(0), pre.size(1)}).to(pre.scalar_type()).contiguous();
    const auto [d_pre, d_bias] = gelu_backward_with_bias(d_act, pre, ctx->saved_data["tanh"].toBool());
    const at::Tensor d_h = at::mm(d_pre, w).view(ctx->saved_data["h_sizes"].toIntVector());
    return {d_h, weight_grad(d_pre, h2, static_cast<at::ScalarType>(ctx->saved_data["w_dtype"].toInt())), d_bias,
            at::Tensor(), at::Tensor()};
  }
};

/// {RMSNorm(s) * gamma, s} with s = y + residual (Llama's pre-norm layers), both in the compute dtype.
class AddRmsNormFn : public torch::autograd::Function<AddRmsNormFn> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& y, const at::Tensor& residual,
                             const at::Tensor& gamma, double eps, int64_t dtype_code) {
    const NoAutocast no_autocast;
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const int64_t n = gamma.size(0);
    const at::Tensor y2 = y.reshape({-1, n}).to(dtype).contiguous();
    const at::Tensor r = residual.reshape({-1, n}).to(dtype).contiguous();
    const at::Tensor g = gamma.to(at::kFloat).contiguous();
    at::Tensor s, out, rstd;
    const bool kernel = on_kernels(y2) && cuda_ops::rms_norm_rows(n, aligned16(y2) && aligned16(r) && aligned16(g));
    // Under FP8 training the normalised output feeds FP8 layers (q/k/v, gate/up) and the stream's gradient o_proj's
    // and down_proj's backward products: the kernels give their amaxes, noted for those layers.
    const bool fp8 = fp8::active_plan() != nullptr;
    ctx->saved_data["fp8"] = fp8;
    if (kernel) {
      cuda_ops::RmsNormTensors t = cuda_ops::add_rms_norm(y2, r, g, eps, fp8);
      s = t.s;
      out = t.out;
      rstd = t.rstd;
    } else {
      s = y2 + r;
      const at::Tensor sf = s.to(at::kFloat);
      rstd = at::rsqrt(sf.pow(2).mean(-1) + eps);
      out = (sf * rstd.unsqueeze(1) * g).to(dtype);
    }
    ctx->save_for_backward({s, rstd, g});
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["y_sizes"] = y.sizes().vec();
    ctx->saved_data["r_sizes"] = residual.sizes().vec();
    return {out.view(residual.sizes()), s.view(residual.sizes())};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &s = saved[0], &rstd = saved[1], &g = saved[2];
    const at::Tensor d_out = stream_grad(grad_out[0], s);
    const at::Tensor d_extra = grad_out[1].defined() ? stream_grad(grad_out[1], s) : at::Tensor();
    at::Tensor d_s, d_gamma;
    if (ctx->saved_data["kernel"].toBool()) {
      std::tie(d_s, d_gamma) =
          cuda_ops::add_rms_norm_backward(d_out, d_extra, s, g, rstd, ctx->saved_data["fp8"].toBool());
    } else {
      const at::Tensor xhat = s.to(at::kFloat) * rstd.unsqueeze(1), df = d_out.to(at::kFloat);
      const at::Tensor gd = df * g;
      at::Tensor ds = rstd.unsqueeze(1) * (gd - xhat * (gd * xhat).mean(-1, true));
      if (d_extra.defined()) ds = ds + d_extra.to(at::kFloat);
      d_s = ds.to(s.scalar_type());
      d_gamma = (df * xhat).sum(0);
    }
    return {d_s.view(ctx->saved_data["y_sizes"].toIntVector()), d_s.view(ctx->saved_data["r_sizes"].toIntVector()),
            d_gamma, at::Tensor(), at::Tensor()};
  }
};

/// GPT-2's MLP sub-layer in one node: {LayerNorm(s), s} with s = residual + dropout(gelu_tanh(a W1^T + b1) W2^T + b2).
/// On CUDA in bf16/fp16 the first GEMM is cuBLASLt's with bias + GELU in its epilogue (keeping the pre-activation),
/// and in the backward pass the GEMM that gives GELU's output gradient applies GELU's derivative and sums the bias
/// gradient in its epilogue (DGELU_BGRAD): no pass of its own over the [rows, 4h] activations either way. Where
/// cuBLASLt declines, a GEMM and gpubench's GELU kernels do the same.
class MlpAddNormFn : public torch::autograd::Function<MlpAddNormFn> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& w_fc, const at::Tensor& b_fc,
                             const at::Tensor& w_proj, const at::Tensor& b_proj, const at::Tensor& residual,
                             const at::Tensor& gamma, const at::Tensor& beta, double p, double eps,
                             int64_t dtype_code) {
    const NoAutocast no_autocast;
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const int64_t hidden = w_proj.size(0);
    const at::Tensor a2 = a.reshape({-1, a.size(-1)}).to(dtype).contiguous();
    const at::Tensor w1 = w_fc.to(dtype), w2 = w_proj.to(dtype), b1 = b_fc.to(dtype).contiguous();
    at::Tensor act, pre;
    const bool epilogue = on_kernels(a2, /*allow_fp32=*/false) && cuda_ops::try_gemm_gelu_aux_bias(a2, w1, b1, act, pre);
    if (!epilogue) {
      pre = at::addmm(b1, a2, w1.t());
      act = at::gelu(pre, "tanh");
    }
    const at::Tensor y = at::addmm(b_proj.to(dtype), act, w2.t());
    const at::Tensor r = residual.reshape({-1, hidden}).to(dtype).contiguous();
    const at::Tensor g = gamma.to(at::kFloat).contiguous(), b = beta.to(at::kFloat).contiguous();
    const AddNorm an = add_norm_forward(y, r, g, b, p, eps);
    ctx->save_for_backward({a2, w1, w2, act, pre, an.s, an.mean, an.rstd, an.keep, g, b});
    ctx->saved_data["p"] = p;
    ctx->saved_data["kernel"] = an.kernel;
    ctx->saved_data["w1_dtype"] = static_cast<int64_t>(w_fc.scalar_type());
    ctx->saved_data["w2_dtype"] = static_cast<int64_t>(w_proj.scalar_type());
    ctx->saved_data["a_sizes"] = a.sizes().vec();
    ctx->saved_data["r_sizes"] = residual.sizes().vec();
    return {an.out.view(residual.sizes()), an.s.view(residual.sizes())};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &a2 = saved[0], &w1 = saved[1], &w2 = saved[2], &act = saved[3], &pre = saved[4], &s = saved[5];
    const at::Tensor d_extra = grad_out[1].defined() ? stream_grad(grad_out[1], s) : at::Tensor();
    const AddNormGrads gr = add_norm_backward(stream_grad(grad_out[0], s), d_extra, s, saved[6], saved[7], saved[8],
                                              saved[9], saved[10], ctx->saved_data["p"].toDouble(),
                                              ctx->saved_data["kernel"].toBool());
    const at::Tensor d_w2 = weight_grad(gr.d_y, act, static_cast<at::ScalarType>(ctx->saved_data["w2_dtype"].toInt()));
    at::Tensor d_pre, d_b1;
    const bool epilogue =
        on_kernels(gr.d_y, /*allow_fp32=*/false) && cuda_ops::try_gemm_dgelu_bgrad(gr.d_y, w2, pre, d_pre, d_b1);
    if (!epilogue) std::tie(d_pre, d_b1) = gelu_backward_with_bias(at::mm(gr.d_y, w2), pre, /*tanh_approx=*/true);
    const at::Tensor d_a = at::mm(d_pre, w1).view(ctx->saved_data["a_sizes"].toIntVector());
    const at::Tensor d_w1 = weight_grad(d_pre, a2, static_cast<at::ScalarType>(ctx->saved_data["w1_dtype"].toInt()));
    return {d_a,      d_w1,       d_b1,       d_w2,        gr.d_bias,   gr.d_s.view(ctx->saved_data["r_sizes"].toIntVector()),
            gr.d_gamma, gr.d_beta, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};


class GegluFn : public torch::autograd::Function<GegluFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    const at::Tensor xc = x.contiguous();
    ctx->save_for_backward({xc});
    if (on_kernels(xc)) return cuda_ops::geglu(xc);
    const auto parts = xc.chunk(2, -1);
    return parts[0] * at::gelu(parts[1]);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const at::Tensor d = grad_out[0].to(x.scalar_type()).contiguous();
    if (on_kernels(x)) return {cuda_ops::geglu_backward(x, d)};
    const auto parts = x.chunk(2, -1);
    return {at::cat({d * at::gelu(parts[1]), at::gelu_backward(d * parts[0], parts[1])}, -1)};
  }
};

class LinearQkvFn : public torch::autograd::Function<LinearQkvFn> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& wq, const at::Tensor& bq,
                             const at::Tensor& wk, const at::Tensor& bk, const at::Tensor& wv, const at::Tensor& bv,
                             int64_t dtype_code) {
    const NoAutocast no_autocast;
    const auto dtype = static_cast<at::ScalarType>(dtype_code);
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).to(dtype).contiguous();
    tensor_list out, saved{x2};
    for (const auto& [w, b] : {std::pair{wq, bq}, std::pair{wk, bk}, std::pair{wv, bv}}) {
      const at::Tensor wc = w.to(dtype);
      saved.push_back(wc);
      out.push_back(at::addmm(b.to(dtype), x2, wc.t()).view(with_last(x.sizes(), w.size(0))));
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(wq.scalar_type());
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x2 = saved[0];
    const auto w_dtype = static_cast<at::ScalarType>(ctx->saved_data["w_dtype"].toInt());
    at::Tensor d_x;
    tensor_list grads(8);
    for (size_t i = 0; i < 3; ++i) {
      if (!grad_out[i].defined()) continue;
      const at::Tensor& w = saved[i + 1];
      const at::Tensor g = grad_out[i].reshape({x2.size(0), w.size(0)}).to(x2.scalar_type()).contiguous();
      if (d_x.defined()) {
        d_x.addmm_(g, w);  // the three input gradients summed by the GEMMs themselves
      } else {
        d_x = at::mm(g, w);
      }
      grads[1 + 2 * i] = weight_grad(g, x2, w_dtype);
      grads[2 + 2 * i] = bias_grad(g);
    }
    if (d_x.defined()) grads[0] = d_x.view(ctx->saved_data["x_sizes"].toIntVector());
    return grads;
  }
};

}  // namespace

at::Tensor linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& targets,
                                int64_t ignore_index, int64_t chunk_rows) {
  const at::Tensor h2 = h.reshape({-1, h.size(-1)});
  return LinearCrossEntropyFn::apply(h2, weight, targets, ignore_index, chunk_rows,
                                     static_cast<int64_t>(compute_dtype(weight)));
}

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) { return SwigluFn::apply(gate, up); }

std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                         const at::Tensor& sin) {
  if (q.dim() != 4 || k.dim() != 4 || q.size(3) % 2 != 0 || cos.size(0) != q.size(1) || cos.size(1) != q.size(3)) {
    throw std::invalid_argument("fused rotary: q and k must be [batch, seq, heads, even head_dim] with tables "
                                "[seq, head_dim]");
  }
  const tensor_list out = RotaryFn::apply(q, k, cos, sin);
  return {out[0], out[1]};
}

namespace {
/// Both forms' node, after their checks: {LayerNorm(s), s}. `name` is the operation the checks name.
tensor_list apply_add_norm(const char* name, const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& residual, const at::Tensor& gamma, const at::Tensor& beta, double p,
                           double eps) {
  if (h.size(-1) != weight.size(1) || residual.size(-1) != weight.size(0) ||
      residual.numel() / weight.size(0) != h.numel() / h.size(-1)) {
    throw std::invalid_argument(std::string("fused ") + name +
                                ": h [..., in], weight [out, in] and residual [..., out] must have the same rows");
  }
  if (p < 0.0 || p >= 1.0) throw std::invalid_argument(std::string("fused ") + name + ": p must be in [0, 1)");
  const at::Tensor b = bias.defined() ? bias : at::empty({0}, weight.options());  // autograd takes no undefined inputs
  return LinearDropoutAddNormFn::apply(h, weight, b, residual, gamma, beta, p, eps,
                                       static_cast<int64_t>(compute_dtype(weight)));
}
}  // namespace

at::Tensor linear_dropout_add_layer_norm(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                                         const at::Tensor& residual, const at::Tensor& gamma, const at::Tensor& beta,
                                         double p, double eps) {
  return apply_add_norm("linear_dropout_add_layer_norm", h, weight, bias, residual, gamma, beta, p, eps)[0];
}

std::pair<at::Tensor, at::Tensor> linear_residual_layer_norm(const at::Tensor& h, const at::Tensor& weight,
                                                             const at::Tensor& bias, const at::Tensor& residual,
                                                             const at::Tensor& gamma, const at::Tensor& beta,
                                                             double p, double eps) {
  const tensor_list out = apply_add_norm("linear_residual_layer_norm", h, weight, bias, residual, gamma, beta, p, eps);
  return {out[1], out[0]};
}

std::pair<at::Tensor, at::Tensor> residual_rms_norm(const at::Tensor& y, const at::Tensor& residual,
                                                    const at::Tensor& gamma, double eps) {
  if (gamma.dim() != 1 || y.size(-1) != gamma.size(0) || !y.sizes().equals(residual.sizes())) {
    throw std::invalid_argument("fused residual_rms_norm: y and residual must have one shape [..., n] with gamma [n]");
  }
  const tensor_list out = AddRmsNormFn::apply(y, residual, gamma, eps, static_cast<int64_t>(compute_dtype(gamma)));
  return {out[1], out[0]};
}

std::pair<at::Tensor, at::Tensor> mlp_residual_layer_norm(const at::Tensor& a, const at::Tensor& w_fc,
                                                          const at::Tensor& b_fc, const at::Tensor& w_proj,
                                                          const at::Tensor& b_proj, const at::Tensor& residual,
                                                          const at::Tensor& gamma, const at::Tensor& beta, double p,
                                                          double eps) {
  if (w_fc.dim() != 2 || w_proj.dim() != 2 || w_fc.size(1) != a.size(-1) || w_proj.size(1) != w_fc.size(0) ||
      residual.size(-1) != w_proj.size(0) || residual.numel() / residual.size(-1) != a.numel() / a.size(-1)) {
    throw std::invalid_argument("fused mlp_residual_layer_norm: a [..., h], w_fc [inner, h], w_proj [h, inner] and "
                                "residual [..., h] must agree");
  }
  if (p < 0.0 || p >= 1.0) throw std::invalid_argument("fused mlp_residual_layer_norm: p must be in [0, 1)");
  const tensor_list out = MlpAddNormFn::apply(a, w_fc, b_fc, w_proj, b_proj, residual, gamma, beta, p, eps,
                                              static_cast<int64_t>(compute_dtype(w_fc)));
  return {out[1], out[0]};
}

at::Tensor geglu(const at::Tensor& x) {
  if (x.size(-1) % 2 != 0) throw std::invalid_argument("fused geglu: the last dimension must be even (a, gate)");
  return GegluFn::apply(x);
}

at::Tensor linear_gelu(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias, bool tanh_approx) {
  return LinearGeluFn::apply(h, weight, bias, tanh_approx, static_cast<int64_t>(compute_dtype(weight)));
}

std::vector<at::Tensor> linear_qkv(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& bq,
                                   const at::Tensor& wk, const at::Tensor& bk, const at::Tensor& wv,
                                   const at::Tensor& bv) {
  for (const at::Tensor* w : {&wq, &wk, &wv}) {
    if (w->dim() != 2 || w->size(1) != x.size(-1)) {
      throw std::invalid_argument("fused linear_qkv: each weight must be [out, in] with in = x's last dimension");
    }
  }
  return LinearQkvFn::apply(x, wq, bq, wk, bk, wv, bv, static_cast<int64_t>(compute_dtype(wq)));
}

void begin_run() {
  forget_batch_norm_declined();
  cuda_ops::begin_run();
}

std::string describe_after_run(std::vector<FusionRecord>& fusions) { return cuda_ops::describe_after_run(fusions); }

}  // namespace gpubench::engine::fused
