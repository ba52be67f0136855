// The CUDA module's training kernels as operations on tensors (kernel_calls.h): the fused transformer operations,
// cuBLASLt's epilogues, ResNet's batch-norm and max-pool nodes, FP8's amax and casts. Their callers hold the ATen
// forms and decide, by launch::on_kernels, which runs.

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <torch/autograd.h>

#include <mutex>

#include "cuda/batch_norm_kernels.h"
#include "cuda/decode_kernels.h"
#include "cuda/fp8_kernels.h"
#include "cuda/kernel_calls.h"
#include "cuda/launch.h"
#include "cuda/lt_epilogues.h"
#include "fp8.h"
#include "fused/fused_ops.h"
#include "fused/kernel_launch.h"

namespace gpubench::engine::fused {

bool cuda_kernels_compiled() { return true; }

namespace cuda_ops {

namespace {

using fused::launch::check;
using fused::launch::dtype_of;
using fused::launch::stream;

/// The next slice of the CUDA generator's Philox stream for `device` (inside a graph capture, the pointers that the
/// replay fills in), as ATen's own dropout takes it.
fused::PhiloxArgs philox_slice(const at::Device& device) {
  auto* gen = at::cuda::detail::getDefaultCUDAGenerator(device.index()).get<at::CUDAGeneratorImpl>();
  at::PhiloxCudaState st;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    st = gen->philox_cuda_state(4);  // the kernels' counters take the offset as their high half: any new offset will do
  }
  fused::PhiloxArgs a;
  if (st.captured_) {
    a.captured = true;
    a.seed_ptr = st.seed_.ptr;
    a.offset_ptr = st.offset_.ptr;
    a.offset_intragraph = st.offset_intragraph_;
  } else {
    a.seed = st.seed_.val;
    a.offset = st.offset_.val;
  }
  return a;
}

}  // namespace

at::Tensor softmax_cross_entropy_grad(const at::Tensor& hr, const at::Tensor& w, const at::Tensor& targets,
                                      int64_t vocab, int64_t ignore_index, const at::Tensor& inv_count,
                                      const at::Tensor& loss_rows) {
  at::Tensor g = at::mm(hr, w.t());  // [rows, padded vocab], overwritten in place by the gradient
  check(fused::launch_softmax_cross_entropy(g.data_ptr(), dtype_of(g), hr.size(0), g.stride(0), vocab,
                                            targets.data_ptr<int64_t>(), ignore_index, inv_count.data_ptr<float>(),
                                            loss_rows.data_ptr<float>(), stream()),
        "softmax_cross_entropy");
  return g;
}

at::Tensor swiglu_forward(const at::Tensor& g, const at::Tensor& u, bool fp8_amax) {
  at::Tensor out = at::empty_like(g);
  const fp8::KernelAmaxes amax(fp8_amax, 1, g);
  check(fused::launch_swiglu_forward(g.data_ptr(), u.data_ptr(), out.data_ptr(), dtype_of(g), g.numel(), stream(),
                                     amax.slot(0)),
        "swiglu_forward");
  amax.note(0, out);
  return out;
}

std::pair<at::Tensor, at::Tensor> swiglu_backward(const at::Tensor& g, const at::Tensor& u, const at::Tensor& d,
                                                  bool fp8_amax) {
  at::Tensor d_gate = at::empty_like(g), d_up = at::empty_like(u);
  const fp8::KernelAmaxes amax(fp8_amax, 2, g);
  check(fused::launch_swiglu_backward(g.data_ptr(), u.data_ptr(), d.data_ptr(), d_gate.data_ptr(), d_up.data_ptr(),
                                      dtype_of(g), g.numel(), stream(), amax.slot(0), amax.slot(1)),
        "swiglu_backward");
  amax.note(0, d_gate);
  amax.note(1, d_up);
  return {d_gate, d_up};
}

std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& c,
                                         const at::Tensor& s, bool inverse, bool fp8_amax) {
  at::Tensor q_out = at::empty_like(q), k_out = at::empty_like(k);
  const fp8::KernelAmaxes amax(fp8_amax, 2, q);
  check(fused::launch_rotary(q.data_ptr(), k.data_ptr(), q_out.data_ptr(), k_out.data_ptr(), c.data_ptr(),
                             s.data_ptr(), dtype_of(q), q.size(0) * q.size(1), q.size(1), q.size(2), k.size(2),
                             q.size(3), inverse, stream(), amax.slot(0), amax.slot(1)),
        "rotary");
  amax.note(0, q_out);
  amax.note(1, k_out);
  return {q_out, k_out};
}

bool layer_norm_rows(int64_t n, bool aligned) { return fused::layer_norm_kernels_support(n, aligned); }

bool rms_norm_rows(int64_t n, bool aligned) { return fused::rms_norm_kernels_support(n, aligned); }

at::Tensor column_sum(const at::Tensor& g) {
  const at::Tensor c = g.contiguous();
  const auto f32 = c.options().dtype(at::kFloat);
  at::Tensor scratch = at::empty({fused::gelu_backward_scratch_floats(c.size(0), c.size(1))}, f32);
  at::Tensor out = at::empty({c.size(1)}, f32);
  check(fused::launch_column_sum(c.data_ptr(), scratch.data_ptr<float>(), out.data_ptr<float>(), dtype_of(c),
                                 c.size(0), c.size(1), stream()),
        "column_sum");
  return out;
}

AddNormTensors dropout_add_layer_norm(const at::Tensor& y, const at::Tensor& r, const at::Tensor& g,
                                      const at::Tensor& b, double p, double eps) {
  const int64_t rows = y.size(0), n = y.size(1);
  const bool dropout = p > 0.0;
  AddNormTensors a;
  a.s = at::empty_like(y);
  a.out = at::empty_like(y);
  a.mean = at::empty({rows}, y.options().dtype(at::kFloat));
  a.rstd = at::empty({rows}, y.options().dtype(at::kFloat));
  if (dropout) a.keep = at::empty({rows, n}, y.options().dtype(at::kByte));
  const fused::PhiloxArgs rng = dropout ? philox_slice(y.device()) : fused::PhiloxArgs{};
  check(fused::launch_dropout_add_layer_norm(y.data_ptr(), r.data_ptr(), g.data_ptr<float>(), b.data_ptr<float>(),
                                             a.s.data_ptr(), a.out.data_ptr(),
                                             dropout ? a.keep.data_ptr<uint8_t>() : nullptr, a.mean.data_ptr<float>(),
                                             a.rstd.data_ptr<float>(), dtype_of(y), rows, n,
                                             static_cast<float>(1.0 - p), static_cast<float>(eps), rng, stream()),
        "dropout_add_layer_norm");
  return a;
}

AddNormGradTensors dropout_add_layer_norm_backward(const at::Tensor& d_out, const at::Tensor& d_extra,
                                                   const at::Tensor& s, const at::Tensor& mean, const at::Tensor& rstd,
                                                   const at::Tensor& keep, const at::Tensor& g, double p) {
  const int64_t rows = s.size(0), n = s.size(1);
  AddNormGradTensors r;
  r.d_s = at::empty_like(s);
  r.d_y = keep.defined() ? at::empty_like(s) : r.d_s;
  const auto f32 = s.options().dtype(at::kFloat);
  at::Tensor scratch = at::empty({fused::layer_norm_backward_scratch_floats(rows, n)}, f32);
  at::Tensor cols = at::empty({3, n}, f32);
  check(fused::launch_dropout_add_layer_norm_backward(
            d_out.data_ptr(), d_extra.defined() ? d_extra.data_ptr() : nullptr, s.data_ptr(), g.data_ptr<float>(),
            mean.data_ptr<float>(), rstd.data_ptr<float>(), keep.defined() ? keep.data_ptr<uint8_t>() : nullptr,
            static_cast<float>(1.0 - p), r.d_s.data_ptr(), keep.defined() ? r.d_y.data_ptr() : nullptr,
            scratch.data_ptr<float>(), cols.data_ptr<float>(), dtype_of(s), rows, n, stream()),
        "dropout_add_layer_norm_backward");
  r.d_gamma = cols[0];
  r.d_beta = cols[1];
  r.d_bias = cols[2];
  return r;
}

std::pair<at::Tensor, at::Tensor> gelu_backward_bias(const at::Tensor& d_act, const at::Tensor& pre, bool tanh_approx) {
  const int64_t rows = pre.size(0), n = pre.size(1);
  at::Tensor d_pre = at::empty_like(pre);
  const auto f32 = pre.options().dtype(at::kFloat);
  at::Tensor scratch = at::empty({fused::gelu_backward_scratch_floats(rows, n)}, f32);
  at::Tensor d_bias = at::empty({n}, f32);
  check(fused::launch_gelu_backward_bias(d_act.data_ptr(), pre.data_ptr(), d_pre.data_ptr(), scratch.data_ptr<float>(),
                                         d_bias.data_ptr<float>(), dtype_of(pre), rows, n, tanh_approx, stream()),
        "gelu_backward_bias");
  return {d_pre, d_bias};
}

RmsNormTensors add_rms_norm(const at::Tensor& y, const at::Tensor& r, const at::Tensor& g, double eps, bool fp8_amax) {
  const int64_t rows = y.size(0), n = y.size(1);
  RmsNormTensors t;
  t.s = at::empty_like(y);
  t.out = at::empty_like(y);
  t.rstd = at::empty({rows}, y.options().dtype(at::kFloat));
  const fp8::KernelAmaxes amax(fp8_amax, 1, y);
  check(fused::launch_add_rms_norm(y.data_ptr(), r.data_ptr(), g.data_ptr<float>(), t.s.data_ptr(), t.out.data_ptr(),
                                   t.rstd.data_ptr<float>(), dtype_of(y), rows, n, static_cast<float>(eps), stream(),
                                   amax.slot(0)),
        "add_rms_norm");
  amax.note(0, t.out);
  return t;
}

std::pair<at::Tensor, at::Tensor> add_rms_norm_backward(const at::Tensor& d_out, const at::Tensor& d_extra,
                                                        const at::Tensor& s, const at::Tensor& g,
                                                        const at::Tensor& rstd, bool fp8_amax) {
  const int64_t rows = s.size(0), n = s.size(1);
  at::Tensor d_s = at::empty_like(s);
  const auto f32 = s.options().dtype(at::kFloat);
  at::Tensor scratch = at::empty({fused::rms_norm_backward_scratch_floats(rows, n)}, f32);
  at::Tensor d_gamma = at::empty({n}, f32);
  const fp8::KernelAmaxes amax(fp8_amax, 1, s);
  check(fused::launch_add_rms_norm_backward(d_out.data_ptr(), d_extra.defined() ? d_extra.data_ptr() : nullptr,
                                            s.data_ptr(), g.data_ptr<float>(), rstd.data_ptr<float>(), d_s.data_ptr(),
                                            scratch.data_ptr<float>(), d_gamma.data_ptr<float>(), dtype_of(s), rows, n,
                                            stream(), amax.slot(0)),
        "add_rms_norm_backward");
  amax.note(0, d_s);
  return {d_s, d_gamma};
}

at::Tensor geglu(const at::Tensor& x) {
  const int64_t m = x.size(-1) / 2, rows = x.numel() / x.size(-1);
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = m;
  at::Tensor out = at::empty(sizes, x.options());
  check(fused::launch_geglu(x.data_ptr(), out.data_ptr(), dtype_of(x), rows, m, stream()), "geglu");
  return out;
}

at::Tensor geglu_backward(const at::Tensor& x, const at::Tensor& d) {
  const int64_t m = x.size(-1) / 2, rows = x.numel() / x.size(-1);
  at::Tensor d_x = at::empty_like(x);
  check(fused::launch_geglu_backward(x.data_ptr(), d.data_ptr(), d_x.data_ptr(), dtype_of(x), rows, m, stream()),
        "geglu_backward");
  return d_x;
}

bool try_gemm_gelu_aux_bias(const at::Tensor& a, const at::Tensor& w, const at::Tensor& bias, at::Tensor& act,
                            at::Tensor& pre) {
  act = at::empty({a.size(0), w.size(0)}, a.options());
  pre = at::empty_like(act);
  return fused::lt::gemm(fused::lt::Epilogue::kGeluAuxBias, a, w, act, bias, pre);
}

bool try_gemm_dgelu_bgrad(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre, at::Tensor& d_pre,
                          at::Tensor& d_bias) {
  d_pre = at::empty_like(pre);
  d_bias = at::empty({pre.size(1)}, pre.options());
  return fused::lt::gemm(fused::lt::Epilogue::kDGeluBGrad, dy, w.t(), d_pre, d_bias, pre);
}

void begin_run() { fused::lt::forget_run(); }

namespace {
/// ResNet's operations (batch_norm_ops.cpp), whose CUDA fallbacks batch_norm_declined() reports.
bool resnet_op(const std::string& name) { return name.rfind("batch_norm", 0) == 0 || name == "max_pool"; }
}  // namespace

std::string describe_after_run(std::vector<FusionRecord>& fusions) {
  std::string note;
  if (const std::string bn = fused::batch_norm_declined(); !bn.empty()) {
    for (auto& f : fusions) {
      if (resnet_op(f.name) && f.implementation == "cuda kernel") {
        f.note += "; this run: some calls ran ATen's operations: " + bn;
      }
    }
    note = "kernels: fused: ResNet's batch-norm / max-pool operations ran ATen's where " + bn;
  }
  const std::string declined = fused::lt::declined();
  for (auto& f : fusions) {
    if (f.name != "mlp_add_layer_norm" || f.implementation != "cuda kernel") continue;
    if (declined.empty() && fused::lt::used()) {
      f.note += "; this run: cuBLASLt's GELU_AUX_BIAS and DGELU_BGRAD epilogues";
    } else if (!declined.empty()) {
      f.note += "; this run: " + declined + ", so the GEMMs ran plain and gpubench's GELU kernels did the rest" +
                (fused::lt::used() ? " where cuBLASLt declined (it took the others)" : "");
      note = "kernels: fused: mlp_add_layer_norm: " + declined + " (GEMM + GELU kernels instead)";
    }
  }
  return note;
}

// ---- ResNet's batch-norm and max-pool nodes ----------------------------------------------------------------------

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

/// Why the kernels do not take this call on a CUDA device; "" when they do.
std::string refusal(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                    bool training) {
  if (!training) return "evaluation uses the running statistics: ATen's batch_norm";
  if (!fused::launch::on_kernels(x)) return "the kernels take bf16, fp16 or fp32";
  if (x.dim() != 4 || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return "the kernels take channels-last (NHWC) tensors (memory_format: channels_last)";
  }
  const int64_t c = x.size(1);
  if (!fused::batch_norm_takes(x.numel() / c, c)) return "the kernels take channel counts that are multiples of 8";
  if (z.defined() && (z.sizes() != x.sizes() || z.scalar_type() != x.scalar_type() ||
                      !z.is_contiguous(at::MemoryFormat::ChannelsLast))) {
    return "the residual differs from the normalised tensor in shape, dtype or layout";
  }
  if (!weight.defined() || !bias.defined()) return "the kernels take an affine batch-norm (a scale and a shift)";
  if (weight.scalar_type() != at::kFloat || bias.scalar_type() != at::kFloat) {
    return "the kernels take fp32 scale and shift";
  }
  const auto aligned = [](const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; };
  if (!aligned(x) || (z.defined() && !aligned(z))) return "the kernels take 16-byte aligned tensors";
  return "";
}

/// A float pointer into t, or null where t is undefined or empty (an absent input).
float* ptr(const at::Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr<float>() : nullptr; }

class BatchNormReluFn : public torch::autograd::Function<BatchNormReluFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps, bool relu) {
    const int64_t c = x.size(1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor y = at::empty_like(x, at::MemoryFormat::ChannelsLast);
    at::Tensor mean = at::empty({c}, f32), invstd = at::empty({c}, f32);
    // the ReLU's mask, a byte per 8 elements (the output itself is not kept for the backward pass)
    at::Tensor mask = relu ? at::empty({rows * c / 8}, x.options().dtype(at::kByte)) : at::Tensor();
    const at::Tensor ws = at::empty({fused::batch_norm_workspace(c)}, x.options().dtype(at::kDouble));
    const at::Tensor w = weight.defined() ? weight.detach().contiguous() : at::Tensor();
    const at::Tensor b = bias.defined() ? bias.detach().contiguous() : at::Tensor();
    const bool residual = z.numel() > 0;
    check(fused::launch_batch_norm_forward(x.data_ptr(), residual ? z.data_ptr() : nullptr, y.data_ptr(),
                                           relu ? mask.data_ptr<uint8_t>() : nullptr, dtype_of(x), rows, c, ptr(w),
                                           ptr(b), ptr(running_mean), ptr(running_var), static_cast<float>(momentum),
                                           static_cast<float>(eps), mean.data_ptr<float>(), invstd.data_ptr<float>(),
                                           ws.data_ptr<double>(), stream()),
          "batch-norm kernels");
    ctx->save_for_backward({x, relu ? mask : at::empty({0}, x.options().dtype(at::kByte)), w, mean, invstd});
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["residual"] = residual;
    ctx->saved_data["affine"] = weight.defined();
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &mask = saved[1], &w = saved[2], &mean = saved[3], &invstd = saved[4];
    const at::Tensor dy = grad_out[0].contiguous(at::MemoryFormat::ChannelsLast);
    const int64_t c = x.size(1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor dx = at::empty_like(x, at::MemoryFormat::ChannelsLast);
    at::Tensor dz = ctx->saved_data["residual"].toBool() ? at::empty_like(x, at::MemoryFormat::ChannelsLast)
                                                         : at::Tensor();
    const bool affine = ctx->saved_data["affine"].toBool();
    at::Tensor gw = affine ? at::empty({c}, f32) : at::Tensor(), gb = affine ? at::empty({c}, f32) : at::Tensor();
    const at::Tensor ws = at::empty({fused::batch_norm_workspace(c)}, x.options().dtype(at::kDouble));
    check(fused::launch_batch_norm_backward(dy.data_ptr(),
                                            ctx->saved_data["relu"].toBool() ? mask.data_ptr<uint8_t>() : nullptr,
                                            x.data_ptr(), dx.data_ptr(), dz.defined() ? dz.data_ptr() : nullptr,
                                            dtype_of(x), rows, c, ptr(w), mean.data_ptr<float>(),
                                            invstd.data_ptr<float>(), ptr(gw), ptr(gb), ws.data_ptr<double>(),
                                            stream()),
          "batch-norm backward kernels");
    return {dx, dz, gw, gb, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// The shape the pool kernels see, for a channels-last [n, c, h, w] input.
fused::PoolShape pool_shape(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  fused::PoolShape s{};
  s.n = x.size(0);
  s.c = x.size(1);
  s.h = x.size(2);
  s.w = x.size(3);
  s.k = static_cast<int>(kernel);
  s.stride = static_cast<int>(stride);
  s.pad = static_cast<int>(padding);
  s.oh = (s.h + 2 * padding - kernel) / stride + 1;
  s.ow = (s.w + 2 * padding - kernel) / stride + 1;
  return s;
}

/// Why the pool kernels do not take this call; "" when they do.
std::string pool_refusal(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  if (!fused::launch::on_kernels(x)) return "the kernels take bf16, fp16 or fp32";
  if (x.dim() != 4 || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return "the kernels take channels-last (NHWC) tensors (memory_format: channels_last)";
  }
  if (kernel < 1 || kernel > 16 || stride < 1 || stride > 16 || padding < 0 || padding > 8 ||
      !fused::max_pool_takes(pool_shape(x, kernel, stride, padding))) {
    return "the max-pool kernels take channel counts that are multiples of 8 and windows of at most 16 x 16";
  }
  if (reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 != 0) return "the kernels take 16-byte aligned tensors";
  return "";
}

class MaxPoolFn : public torch::autograd::Function<MaxPoolFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t kernel, int64_t stride,
                            int64_t padding) {
    const fused::PoolShape s = pool_shape(x, kernel, stride, padding);
    at::Tensor y = at::empty({s.n, s.c, s.oh, s.ow}, x.options(), at::MemoryFormat::ChannelsLast);
    at::Tensor where = at::empty({s.n * s.oh * s.ow * s.c}, x.options().dtype(at::kByte));
    check(fused::launch_max_pool_forward(x.data_ptr(), y.data_ptr(), where.data_ptr<uint8_t>(), dtype_of(x), s,
                                         stream()),
          "max-pool kernel");
    ctx->save_for_backward({where});
    ctx->saved_data["shape"] = std::vector<int64_t>{s.n, s.c, s.h, s.w, kernel, stride, padding};
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const at::Tensor where = ctx->get_saved_variables()[0];
    const auto d = ctx->saved_data["shape"].toIntVector();
    const at::Tensor dy = grad_out[0].contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor dx = at::empty({d[0], d[1], d[2], d[3]}, dy.options(), at::MemoryFormat::ChannelsLast);
    const fused::PoolShape s = pool_shape(dx, d[4], d[5], d[6]);
    check(fused::launch_max_pool_backward(dy.data_ptr(), where.data_ptr<uint8_t>(), dx.data_ptr(), dtype_of(dy), s,
                                          stream()),
          "max-pool backward kernel");
    return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor try_batch_norm_act(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight,
                              const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                              bool training, double momentum, double eps, bool relu, std::string& why) {
  why = refusal(x, z, weight, bias, training);
  if (!why.empty()) return {};
  // An autograd Function's inputs must be defined tensors: an absent one travels as an empty tensor.
  const auto given = [&](const at::Tensor& t) { return t.defined() ? t : at::empty({0}, x.options()); };
  return BatchNormReluFn::apply(x, given(z), weight, bias, given(running_mean), given(running_var), momentum, eps,
                                relu);
}

at::Tensor try_max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding, std::string& why) {
  why = pool_refusal(x, kernel, stride, padding);
  if (!why.empty()) return {};
  return MaxPoolFn::apply(x, kernel, stride, padding);
}

// ---- FP8 ----------------------------------------------------------------------------------------------------------

bool stream_capturing(const at::Tensor& t) {
  return t.is_cuda() && c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
}

void fp8_amax(const at::Tensor& x, const at::Tensor& out) {
  check(fused::launch_fp8_amax(x.data_ptr(), dtype_of(x), x.numel(), out.data_ptr<float>(), stream()),
        "fp8 amax kernel");
}

bool fp8_cast_takes(const at::Tensor& x) {
  return fused::launch::on_kernels(x) && x.is_contiguous() && x.dim() == 2 && x.size(0) <= 64 * 65535;
}

void fp8_cast(const at::Tensor& x, bool e5m2, const at::Tensor& amax, const at::Tensor& data, const at::Tensor& data_t,
              const at::Tensor& inv_scale) {
  check(fused::launch_fp8_cast(x.data_ptr(), dtype_of(x), x.size(0), x.size(1), e5m2, amax.data_ptr<float>(),
                               data.defined() ? data.data_ptr() : nullptr,
                               data_t.defined() ? data_t.data_ptr() : nullptr, inv_scale.data_ptr<float>(), stream()),
        "fp8 cast kernel");
}

Fp8CastTable fp8_cast_table(const std::vector<Fp8CastTarget>& targets) {
  Fp8CastTable t;
  std::vector<fused::Fp8CastJob> jobs;
  for (const auto& g : targets) {
    const int64_t rows = g.source.size(0), cols = g.source.size(1);
    jobs.push_back(fused::Fp8CastJob{g.source.data_ptr(), rows, cols, g.amax.data_ptr<float>(),
                                     g.rows_major.data_ptr(), g.cols_major.data_ptr(), g.inv_scale.data_ptr<float>(),
                                     t.amax_blocks, t.tiles});
    t.amax_blocks += fused::fp8_many_amax_blocks(rows * cols);
    t.tiles += fused::fp8_many_tiles(rows, cols);
  }
  if (jobs.empty()) return t;
  const auto bytes = static_cast<int64_t>(jobs.size() * sizeof(fused::Fp8CastJob));
  t.table = at::from_blob(jobs.data(), {bytes}, at::TensorOptions().dtype(at::kByte))
                .to(targets.front().source.options().dtype(at::kByte));
  t.jobs = static_cast<int64_t>(jobs.size());
  return t;
}

void fp8_amax_cast_many(const Fp8CastTable& table, const at::Tensor& like) {
  check(fused::launch_fp8_amax_cast_many(reinterpret_cast<const fused::Fp8CastJob*>(table.table.data_ptr()),
                                         static_cast<int>(table.jobs), table.amax_blocks, table.tiles, dtype_of(like),
                                         /*e5m2=*/false, stream()),
        "fp8 weights' amax and cast kernels");
}

}  // namespace cuda_ops

}  // namespace gpubench::engine::fused
