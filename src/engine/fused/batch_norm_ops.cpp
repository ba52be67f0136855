// `kernels: fused` for ResNet: batch-norm + (residual add +) ReLU as one autograd node (fused_ops.h).

#include <torch/autograd.h>

#include <mutex>
#include <string>

#include "fused/fused_ops.h"
#include "fused/kernel_launch.h"

#ifdef GPUBENCH_WITH_FUSED_KERNELS
#include "fused/batch_norm_kernels.h"
#endif

namespace gpubench::engine::fused {

namespace {

std::mutex g_mutex;
std::string g_declined;  ///< the first reason a CUDA call ran ATen's form; guarded by g_mutex

/// The ATen composition: what the kernels compute, and what runs where they do not.
at::Tensor aten_form(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                     const at::Tensor& running_mean, const at::Tensor& running_var, bool training, double momentum,
                     double eps) {
  at::Tensor y = at::batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps,
                                /*cudnn_enabled=*/true);
  if (z.defined()) y = y + z;
  return y.relu_();
}

#ifdef GPUBENCH_WITH_FUSED_KERNELS
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

/// Why the kernels do not take this call on a CUDA device; "" when they do.
std::string refusal(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                    bool training) {
  if (!training) return "evaluation uses the running statistics: ATen's batch_norm";
  if (!launch::on_kernels(x)) return "the kernels take bf16, fp16 or fp32";
  if (x.dim() != 4 || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return "the kernels take channels-last (NHWC) tensors (memory_format: channels_last)";
  }
  const int64_t c = x.size(1);
  if (!batch_norm_takes(x.numel() / c, c)) return "the kernels take channel counts that are multiples of 8";
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
                            double momentum, double eps) {
    const int64_t c = x.size(1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor y = at::empty_like(x, at::MemoryFormat::ChannelsLast);
    at::Tensor mean = at::empty({c}, f32), invstd = at::empty({c}, f32);
    const at::Tensor ws = at::empty({batch_norm_workspace(rows, c)}, f32);
    const at::Tensor w = weight.defined() ? weight.detach().contiguous() : at::Tensor();
    const at::Tensor b = bias.defined() ? bias.detach().contiguous() : at::Tensor();
    const bool residual = z.numel() > 0;
    launch::check(launch_batch_norm_forward(x.data_ptr(), residual ? z.data_ptr() : nullptr, y.data_ptr(),
                                            launch::dtype_of(x), rows, c, /*relu=*/true, ptr(w), ptr(b),
                                            ptr(running_mean), ptr(running_var), static_cast<float>(momentum),
                                            static_cast<float>(eps), mean.data_ptr<float>(),
                                            invstd.data_ptr<float>(), ws.data_ptr<float>(), launch::stream()),
                  "batch-norm + ReLU kernels");
    ctx->save_for_backward({x, y, w, mean, invstd});
    ctx->saved_data["residual"] = residual;
    ctx->saved_data["affine"] = weight.defined();
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &y = saved[1], &w = saved[2], &mean = saved[3], &invstd = saved[4];
    const at::Tensor dy = grad_out[0].contiguous(at::MemoryFormat::ChannelsLast);
    const int64_t c = x.size(1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor dx = at::empty_like(x, at::MemoryFormat::ChannelsLast);
    at::Tensor dz = ctx->saved_data["residual"].toBool() ? at::empty_like(x, at::MemoryFormat::ChannelsLast)
                                                         : at::Tensor();
    const bool affine = ctx->saved_data["affine"].toBool();
    at::Tensor gw = affine ? at::empty({c}, f32) : at::Tensor(), gb = affine ? at::empty({c}, f32) : at::Tensor();
    const at::Tensor ws = at::empty({batch_norm_workspace(rows, c)}, f32);
    launch::check(launch_batch_norm_backward(dy.data_ptr(), y.data_ptr(), x.data_ptr(), dx.data_ptr(),
                                             dz.defined() ? dz.data_ptr() : nullptr, launch::dtype_of(x), rows, c,
                                             /*relu=*/true, ptr(w), mean.data_ptr<float>(), invstd.data_ptr<float>(),
                                             ptr(gw), ptr(gb), ws.data_ptr<float>(), launch::stream()),
                  "batch-norm + ReLU backward kernels");
    return {dx, dz, gw, gb, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

at::Tensor batch_norm_relu(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& running_mean, const at::Tensor& running_var, bool training,
                           double momentum, double eps) {
#ifdef GPUBENCH_WITH_FUSED_KERNELS
  if (x.is_cuda()) {
    const std::string why = refusal(x, z, weight, bias, training);
    if (why.empty()) {
      // An autograd Function's inputs must be defined tensors: an absent one travels as an empty tensor.
      const auto given = [&](const at::Tensor& t) { return t.defined() ? t : at::empty({0}, x.options()); };
      return BatchNormReluFn::apply(x, given(z), weight, bias, given(running_mean), given(running_var), momentum,
                                    eps);
    }
    if (training) {
      const std::lock_guard<std::mutex> lock(g_mutex);
      if (g_declined.empty()) g_declined = why;
    }
  }
#endif
  return aten_form(x, z, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::string batch_norm_declined() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_declined;
}

void forget_batch_norm_declined() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_declined.clear();
}

}  // namespace gpubench::engine::fused
