#pragma once
// Multi-tensor (foreach) SGD and AdamW with PyTorch's update rules: one kernel per operation over all
// parameters instead of one per parameter (torch::optim in C++ loops over parameters; Python's default on
// CUDA is foreach, so this is what a PyTorch user's script runs).

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "gpubench/core/scenario.hpp"

namespace gpubench::engine {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// One update from the parameters' current gradients (parameters without a gradient are left alone).
  virtual void step() = 0;
  /// Drops gradients (set to undefined, as PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  const std::vector<at::Tensor>& params() const { return params_; }

 protected:
  explicit Optimizer(std::vector<at::Tensor> params) : params_(std::move(params)) {}
  /// Parameters that have gradients, and those gradients, in matching order.
  void with_grads(std::vector<at::Tensor>& ps, std::vector<at::Tensor>& gs) const;
  std::vector<at::Tensor> params_;
};

struct SgdOptions {
  double lr = 0.1, momentum = 0.9, dampening = 0.0, weight_decay = 1e-4;
  bool nesterov = false;
};

class ForeachSgd final : public Optimizer {
 public:
  ForeachSgd(std::vector<at::Tensor> params, SgdOptions o) : Optimizer(std::move(params)), o_(o) {}
  void step() override;

 private:
  SgdOptions o_;
  std::vector<at::Tensor> momentum_;  // allocated at the first step, as PyTorch does
};

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
};

class ForeachAdamW final : public Optimizer {
 public:
  ForeachAdamW(std::vector<at::Tensor> params, AdamWOptions o);
  void step() override;

 private:
  AdamWOptions o_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
  int64_t step_ = 0;
};

/// Builds the optimizer named in `s` (all values resolved).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& s, std::vector<at::Tensor> params);

}  // namespace gpubench::engine
