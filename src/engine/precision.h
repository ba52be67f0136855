#pragma once
// Precision policy: what fp32/tf32/bf16/fp16/amp mean on a device, autocast scoping, fp16 loss scaling.

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench::engine {

/// How a precision request is carried out on a device.
struct PrecisionPlan {
  std::string requested;                     ///< scenario value
  std::string resolved;                      ///< fp32 | tf32 | bf16 | fp16 | fp8
  std::optional<at::ScalarType> autocast;    ///< autocast dtype, none for fp32/tf32
  bool tf32 = false;                         ///< TF32 for cuBLAS matmuls and cuDNN convolutions
  bool loss_scaling = false;                 ///< dynamic loss scaling (fp16 only)
  bool fp8 = false;                          ///< fp8: the Linear layers' products in FP8 (fp8.h), bf16 autocast
  std::string note;                          ///< how "amp" was resolved, if it was
};

/// Resolves `requested` for `device`. "amp" means what it means in PyTorch: fp16 autocast with dynamic loss
/// scaling (torch.autocast + GradScaler) on CUDA, ROCm and MPS; bf16 autocast on the CPU (CPU autocast's type).
PrecisionPlan resolve_precision(const std::string& requested, const ResolvedDevice& device);

/// Sets the global math flags the plan needs (TF32, cuDNN autotuning). fp32 means IEEE fp32: TF32 off for
/// cuBLAS and cuDNN alike (PyTorch's own default allows TF32 in cuDNN convolutions; use `tf32` for that).
void apply_math_flags(const PrecisionPlan& plan, const ResolvedDevice& device, bool cudnn_benchmark);

/// The record's view of a plan.
PrecisionRecord to_record(const PrecisionPlan& plan, const std::string& memory_format);

/// RAII autocast region (LibTorch has no C++ guard): enables autocast for `device_type` with `dtype`,
/// restores the previous state and clears the cast cache on exit. A no-op when `dtype` is empty.
class AutocastScope {
 public:
  AutocastScope(at::DeviceType device_type, std::optional<at::ScalarType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  at::DeviceType device_type_;
  bool active_ = false;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

/// The dtype a model's products run in on t's device: autocast's where autocast is on there, else t's own.
at::ScalarType compute_dtype(const at::Tensor& t);

/// Autocast off for the operations inside its scope: for operations that cast what they need themselves (the fused
/// and FP8 ones), where autocast would otherwise recast (layer_norm to fp32, for one).
class NoAutocast {
 private:
  c10::impl::ExcludeDispatchKeyGuard guard_{c10::autocast_dispatch_keyset};
};

/// Dynamic loss scaling as torch.cuda.amp.GradScaler (init 2^16, growth x2 every 2000 clean steps,
/// backoff x0.5 on inf/NaN), built on ATen's _amp_* kernels, which exist for CUDA and CPU.
class LossScaler {
 public:
  explicit LossScaler(const at::Device& device, double init_scale = 65536.0, double growth = 2.0,
                      double backoff = 0.5, int64_t interval = 2000);
  at::Tensor scale(const at::Tensor& loss) const { return loss * scale_; }
  /// Unscales the gradients of `params` in place; returns a 1-element float tensor, 1 if any was inf/NaN.
  at::Tensor unscale(const std::vector<at::Tensor>& params);
  /// Updates the scale from `found_inf` (on the device; no host synchronisation).
  void update(const at::Tensor& found_inf);
  double current_scale() const { return scale_.item<double>(); }

 private:
  at::Tensor scale_, growth_tracker_;
  double growth_, backoff_;
  int64_t interval_;
};

}  // namespace gpubench::engine
