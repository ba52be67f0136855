// `kernels: fused` for ResNet: batch-norm + (residual add +) ReLU as one autograd node, the shortcuts' batch-norm
// alone, and the stem's max pool (fused_ops.h).

#include <torch/autograd.h>

#include <mutex>
#include <string>

#include "fused/fused_ops.h"
#include "fused/kernel_launch.h"

#ifdef GPUBENCH_WITH_CUDA
#include "fused/batch_norm_kernels.h"
#endif

namespace gpubench::engine::fused {

namespace {

std::mutex g_mutex;
std::string g_declined;  ///< the first reason a CUDA call ran ATen's form; guarded by g_mutex

/// The ATen composition: what the kernels compute, and what runs where they do not.
at::Tensor aten_form(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                     const at::Tensor& running_mean, const at::Tensor& running_var, bool training, double momentum,
                     double eps, bool relu) {
  at::Tensor y = at::batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps,
                                /*cudnn_enabled=*/true);
  if (z.defined()) y = y + z;
  return relu ? y.relu_() : y;
}

/// Keeps the first reason a CUDA call ran ATen's form in this run.
[[maybe_unused]] void declined(const std::string& why) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_declined.empty()) g_declined = why;
}

#ifdef GPUBENCH_WITH_CUDA
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
                            double momentum, double eps, bool relu) {
    const int64_t c = x.size(1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor y = at::empty_like(x, at::MemoryFormat::ChannelsLast);
    at::Tensor mean = at::empty({c}, f32), invstd = at::empty({c}, f32);
    // the ReLU's mask, a byte per 8 elements (the output itself is not kept for the backward pass)
    at::Tensor mask = relu ? at::empty({rows * c / 8}, x.options().dtype(at::kByte)) : at::Tensor();
    const at::Tensor ws = at::empty({batch_norm_workspace(c)}, x.options().dtype(at::kDouble));
    const at::Tensor w = weight.defined() ? weight.detach().contiguous() : at::Tensor();
    const at::Tensor b = bias.defined() ? bias.detach().contiguous() : at::Tensor();
    const bool residual = z.numel() > 0;
    launch::check(launch_batch_norm_forward(x.data_ptr(), residual ? z.data_ptr() : nullptr, y.data_ptr(),
                                            relu ? mask.data_ptr<uint8_t>() : nullptr, launch::dtype_of(x), rows, c,
                                            ptr(w), ptr(b), ptr(running_mean), ptr(running_var),
                                            static_cast<float>(momentum), static_cast<float>(eps),
                                            mean.data_ptr<float>(), invstd.data_ptr<float>(),
                                            ws.data_ptr<double>(), launch::stream()),
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
    const at::Tensor ws = at::empty({batch_norm_workspace(c)}, x.options().dtype(at::kDouble));
    launch::check(launch_batch_norm_backward(dy.data_ptr(), ctx->saved_data["relu"].toBool() ? mask.data_ptr<uint8_t>()
                                                                                              : nullptr,
                                             x.data_ptr(), dx.data_ptr(), dz.defined() ? dz.data_ptr() : nullptr,
                                             launch::dtype_of(x), rows, c, ptr(w), mean.data_ptr<float>(),
                                             invstd.data_ptr<float>(), ptr(gw), ptr(gb), ws.data_ptr<double>(),
                                             launch::stream()),
                  "batch-norm backward kernels");
    return {dx, dz, gw, gb, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// The shape the pool kernels see, for a channels-last [n, c, h, w] input.
PoolShape pool_shape(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  PoolShape s{};
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
  if (!launch::on_kernels(x)) return "the kernels take bf16, fp16 or fp32";
  if (x.dim() != 4 || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return "the kernels take channels-last (NHWC) tensors (memory_format: channels_last)";
  }
  if (kernel < 1 || kernel > 16 || stride < 1 || stride > 16 || padding < 0 || padding > 8 ||
      !max_pool_takes(pool_shape(x, kernel, stride, padding))) {
    return "the max-pool kernels take channel counts that are multiples of 8 and windows of at most 16 x 16";
  }
  if (reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 != 0) return "the kernels take 16-byte aligned tensors";
  return "";
}

class MaxPoolFn : public torch::autograd::Function<MaxPoolFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t kernel, int64_t stride,
                            int64_t padding) {
    const PoolShape s = pool_shape(x, kernel, stride, padding);
    at::Tensor y = at::empty({s.n, s.c, s.oh, s.ow}, x.options(), at::MemoryFormat::ChannelsLast);
    at::Tensor where = at::empty({s.n * s.oh * s.ow * s.c}, x.options().dtype(at::kByte));
    launch::check(launch_max_pool_forward(x.data_ptr(), y.data_ptr(), where.data_ptr<uint8_t>(), launch::dtype_of(x),
                                          s, launch::stream()),
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
    const PoolShape s = pool_shape(dx, d[4], d[5], d[6]);
    launch::check(launch_max_pool_backward(dy.data_ptr(), where.data_ptr<uint8_t>(), dx.data_ptr(),
                                           launch::dtype_of(dy), s, launch::stream()),
                  "max-pool backward kernel");
    return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

namespace {
at::Tensor batch_norm_act(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                          const at::Tensor& running_mean, const at::Tensor& running_var, bool training,
                          double momentum, double eps, bool relu) {
#ifdef GPUBENCH_WITH_CUDA
  if (x.is_cuda()) {
    const std::string why = refusal(x, z, weight, bias, training);
    if (why.empty()) {
      // An autograd Function's inputs must be defined tensors: an absent one travels as an empty tensor.
      const auto given = [&](const at::Tensor& t) { return t.defined() ? t : at::empty({0}, x.options()); };
      return BatchNormReluFn::apply(x, given(z), weight, bias, given(running_mean), given(running_var), momentum,
                                    eps, relu);
    }
    if (training) declined(why);
  }
#endif
  return aten_form(x, z, weight, bias, running_mean, running_var, training, momentum, eps, relu);
}
}  // namespace

at::Tensor batch_norm_relu(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& running_mean, const at::Tensor& running_var, bool training,
                           double momentum, double eps) {
  return batch_norm_act(x, z, weight, bias, running_mean, running_var, training, momentum, eps, /*relu=*/true);
}

at::Tensor batch_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      const at::Tensor& running_mean, const at::Tensor& running_var, bool training, double momentum,
                      double eps) {
  return batch_norm_act(x, {}, weight, bias, running_mean, running_var, training, momentum, eps, /*relu=*/false);
}

at::Tensor max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
#ifdef GPUBENCH_WITH_CUDA
  if (x.is_cuda()) {
    const std::string why = pool_refusal(x, kernel, stride, padding);
    if (why.empty()) return MaxPoolFn::apply(x, kernel, stride, padding);
    declined(why);
  }
#endif
  return at::max_pool2d(x, {kernel, kernel}, {stride, stride}, {padding, padding});
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
