#include "precision.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>

#include "gpubench/core/record/host_facts.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench::engine {

PrecisionPlan resolve_precision(const std::string& requested, const ResolvedDevice& device) {
  PrecisionPlan p;
  p.requested = requested;
  // PyTorch's meaning of amp (core's rule): torch.autocast("cuda") defaults to float16 and torch.cuda.amp pairs it
  // with a GradScaler (ROCm builds present as CUDA and do the same; MPS autocast is float16 too); CPU autocast is
  // bfloat16. bf16 stays available as the explicit `precision: bf16`.
  const std::string r = resolved_precision(requested, device.type);
  const std::optional<Precision> asked = parse_precision(requested), resolved = parse_precision(r);
  const CpuBf16 bf16 = device.device.is_cpu() ? cpu_bf16_support() : CpuBf16{true, ""};
  if (asked == Precision::kAmp) {
    if (device.device.is_cpu() && resolved == Precision::kFp32) {
      p.note = "--amp resolved to fp32: bf16 autocast would be emulated in software on this CPU (" + bf16.evidence +
               "), about 9x slower per image than fp32 (ResNet-50 on an AVX2 host: 0.5 vs 4.4 images/s); "
               "--precision bf16 runs the emulation anyway";
    } else if (device.device.is_cpu()) {
      p.note = "--amp resolved to bf16 autocast (PyTorch's CPU autocast type; no loss scaling; " + bf16.evidence + ")";
    } else {
      p.note = "--amp resolved to fp16 autocast with dynamic loss scaling on " + device.type +
               " (PyTorch's torch.autocast + GradScaler); use --precision bf16 for bfloat16";
    }
  }
  if (asked == Precision::kBf16 && !bf16.native) {
    p.note = "bf16 on this CPU is emulated in software (" + bf16.evidence + "): expect about 9x fewer samples/s "
             "than --precision fp32 (ResNet-50 on an AVX2 host: 0.5 vs 4.4 images/s)";
  }
  p.resolved = r;
  if (resolved == Precision::kBf16 || resolved == Precision::kFp8) p.autocast = at::kBFloat16;
  p.fp8 = resolved == Precision::kFp8;
  if (resolved == Precision::kFp16) {
    p.autocast = at::kHalf;
    p.loss_scaling = true;
  }
  p.tf32 = resolved == Precision::kTf32;
  return p;
}

void apply_math_flags(const PrecisionPlan& plan, const ResolvedDevice& device, bool cudnn_benchmark) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(plan.tf32);
  ctx.setAllowTF32CuDNN(plan.tf32);
  ctx.setFloat32MatmulPrecision(plan.tf32 ? "high" : "highest");
  if (device.device.is_cuda()) ctx.setBenchmarkCuDNN(cudnn_benchmark);
}

PrecisionRecord to_record(const PrecisionPlan& plan, const std::string& memory_format) {
  PrecisionRecord r;
  r.requested = plan.requested;
  r.resolved = plan.resolved;
  r.autocast_dtype = !plan.autocast ? "none" : (*plan.autocast == at::kBFloat16 ? "bfloat16" : "float16");
  r.tf32_matmul = r.tf32_cudnn = plan.tf32;
  r.loss_scaling = plan.loss_scaling;
  r.memory_format = memory_format;
  r.resolution = plan.note;
  return r;
}

at::ScalarType compute_dtype(const at::Tensor& t) {
  const at::DeviceType type = t.device().type();
  return at::autocast::is_autocast_enabled(type) ? at::autocast::get_autocast_dtype(type) : t.scalar_type();
}

AutocastScope::AutocastScope(at::DeviceType device_type, std::optional<at::ScalarType> dtype)
    : device_type_(device_type) {
  if (!dtype) return;
  active_ = true;
  prev_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::set_autocast_dtype(device_type_, *dtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
}

LossScaler::LossScaler(const at::Device& device, double init_scale, double growth, double backoff,
                       int64_t interval)
    : scale_(at::full({1}, init_scale, at::TensorOptions().device(device).dtype(at::kFloat))),
      growth_tracker_(at::zeros({1}, at::TensorOptions().device(device).dtype(at::kInt))),
      growth_(growth),
      backoff_(backoff),
      interval_(interval) {}

at::Tensor LossScaler::unscale(const std::vector<at::Tensor>& params) {
  at::Tensor found_inf = at::zeros({1}, scale_.options());
  const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  return found_inf;
}

void LossScaler::update(const at::Tensor& found_inf) {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, growth_, backoff_, interval_);
}

}  // namespace gpubench::engine
