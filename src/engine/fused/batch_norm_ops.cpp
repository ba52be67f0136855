// `kernels: fused` for ResNet: batch-norm + (residual add +) ReLU as one autograd node, the shortcuts' batch-norm
// alone, and the stem's max pool (fused_ops.h).

#include <ATen/ATen.h>

#include <mutex>
#include <string>

#include "cuda/kernel_calls.h"
#include "fused/fused_ops.h"

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
void declined(const std::string& why) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_declined.empty()) g_declined = why;
}

/// The CUDA module's node where its kernels take the call, else ATen's form (and, on CUDA, the reason kept).
at::Tensor batch_norm_act(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                          const at::Tensor& running_mean, const at::Tensor& running_var, bool training,
                          double momentum, double eps, bool relu) {
  if (x.is_cuda()) {
    std::string why;
    const at::Tensor y = cuda_ops::try_batch_norm_act(x, z, weight, bias, running_mean, running_var, training,
                                                      momentum, eps, relu, why);
    if (y.defined()) return y;
    if (training && !why.empty()) declined(why);
  }
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
  if (x.is_cuda()) {
    std::string why;
    const at::Tensor y = cuda_ops::try_max_pool2d(x, kernel, stride, padding, why);
    if (y.defined()) return y;
    if (!why.empty()) declined(why);
  }
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
