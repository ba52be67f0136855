#pragma once
// SGD and AdamW with PyTorch's update rules, in two implementations:
//  - foreach: one kernel per operation over all parameters (torch.optim's default on CUDA, so what a PyTorch
//    user's script runs); AdamW keeps its step count on the host, SGD needs nothing from the host.
//  - fused: ATen's _fused_sgd_ / _fused_adamw_ kernels (torch.optim's fused=True), one kernel for the whole
//    update, step count on the device, and an fp16 overflow (found_inf) skips the update on the device.
// Both are checked against torch::optim (the per-parameter C++ reference) in tests.

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench::engine {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// One update from the parameters' current gradients (parameters without a gradient are left alone).
  /// `found_inf` (a 1-element float tensor, may be undefined): when it holds a non-zero value the update is
  /// skipped, on the device if skips_on_device(), otherwise after reading the flag on the host.
  virtual void step(const at::Tensor& found_inf) = 0;
  void step() { step(at::Tensor()); }
  /// "foreach" or "fused".
  virtual const char* implementation() const = 0;
  /// A found_inf skip needs no host synchronisation.
  virtual bool skips_on_device() const = 0;
  /// The update can be captured in a CUDA graph once it has stepped once (no host-side state that changes per step).
  virtual bool capturable() const = 0;
  /// Drops gradients (set to undefined, as PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  const std::vector<at::Tensor>& params() const { return params_; }

 protected:
  explicit Optimizer(std::vector<at::Tensor> params) : params_(std::move(params)) {}
  /// Parameters that have gradients, and those gradients, in matching order.
  void with_grads(std::vector<at::Tensor>& ps, std::vector<at::Tensor>& gs) const;
  /// Host-side skip decision for implementations that cannot skip on the device.
  static bool host_says_skip(const at::Tensor& found_inf);
  std::vector<at::Tensor> params_;
};

struct SgdOptions {
  double lr = 0.1, momentum = 0.9, dampening = 0.0, weight_decay = 1e-4;
  bool nesterov = false;
};

class ForeachSgd final : public Optimizer {
 public:
  ForeachSgd(std::vector<at::Tensor> params, SgdOptions o) : Optimizer(std::move(params)), o_(o) {}
  using Optimizer::step;
  void step(const at::Tensor& found_inf) override;
  const char* implementation() const override { return "foreach"; }
  bool skips_on_device() const override { return false; }
  bool capturable() const override { return true; }

 private:
  SgdOptions o_;
  std::vector<at::Tensor> momentum_;  // allocated at the first step, as PyTorch does
};

class FusedSgd final : public Optimizer {
 public:
  FusedSgd(std::vector<at::Tensor> params, SgdOptions o);
  using Optimizer::step;
  void step(const at::Tensor& found_inf) override;
  const char* implementation() const override { return "fused"; }
  bool skips_on_device() const override { return true; }
  bool capturable() const override { return true; }

 private:
  SgdOptions o_;
  std::vector<at::Tensor> momentum_;
  bool first_ = true;
};

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
};

class ForeachAdamW final : public Optimizer {
 public:
  ForeachAdamW(std::vector<at::Tensor> params, AdamWOptions o);
  using Optimizer::step;
  void step(const at::Tensor& found_inf) override;
  const char* implementation() const override { return "foreach"; }
  bool skips_on_device() const override { return false; }
  bool capturable() const override { return false; }  // bias corrections come from a host step count

 private:
  AdamWOptions o_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
  int64_t step_ = 0;
};

class FusedAdamW final : public Optimizer {
 public:
  FusedAdamW(std::vector<at::Tensor> params, AdamWOptions o);
  using Optimizer::step;
  void step(const at::Tensor& found_inf) override;
  const char* implementation() const override { return "fused"; }
  bool skips_on_device() const override { return true; }
  bool capturable() const override { return true; }
  /// The device-side step count (a float scalar, as torch.optim keeps it for fused/capturable AdamW).
  const at::Tensor& step_count() const { return step_; }

 private:
  AdamWOptions o_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
  at::Tensor step_;
};

/// Builds the optimizer named in `s` (all values resolved; implementation "foreach" or "fused").
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& s, std::vector<at::Tensor> params);

}  // namespace gpubench::engine
