#include "optimizers.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <stdexcept>

namespace gpubench::engine {

void Optimizer::zero_grad() {
  for (auto& p : params_) {
    if (p.grad().defined()) p.mutable_grad().reset();
  }
}

void Optimizer::with_grads(std::vector<at::Tensor>& ps, std::vector<at::Tensor>& gs) const {
  ps.clear();
  gs.clear();
  for (const auto& p : params_) {
    if (p.grad().defined()) {
      ps.push_back(p);
      gs.push_back(p.grad());
    }
  }
}

void ForeachSgd::step() {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps, gs;
  with_grads(ps, gs);
  if (ps.empty()) return;
  if (o_.weight_decay != 0) gs = at::_foreach_add(gs, ps, o_.weight_decay);
  if (o_.momentum != 0) {
    if (momentum_.empty()) {
      momentum_.reserve(gs.size());
      for (const auto& g : gs) momentum_.push_back(g.detach().clone());
    } else {
      at::_foreach_mul_(momentum_, o_.momentum);
      at::_foreach_add_(momentum_, gs, 1.0 - o_.dampening);
    }
    if (o_.nesterov) {
      gs = at::_foreach_add(gs, momentum_, o_.momentum);
    } else {
      gs = momentum_;
    }
  }
  at::_foreach_add_(ps, gs, -o_.lr);
}

ForeachAdamW::ForeachAdamW(std::vector<at::Tensor> params, AdamWOptions o)
    : Optimizer(std::move(params)), o_(o) {
  exp_avg_.reserve(params_.size());
  exp_avg_sq_.reserve(params_.size());
  for (const auto& p : params_) {
    exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
    exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
  }
}

void ForeachAdamW::step() {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps, gs, m, v;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined()) {
      ps.push_back(params_[i]);
      gs.push_back(params_[i].grad());
      m.push_back(exp_avg_[i]);
      v.push_back(exp_avg_sq_[i]);
    }
  }
  if (ps.empty()) return;
  ++step_;
  const double bias1 = 1.0 - std::pow(o_.beta1, static_cast<double>(step_));
  const double bias2 = 1.0 - std::pow(o_.beta2, static_cast<double>(step_));
  if (o_.weight_decay != 0) at::_foreach_mul_(ps, 1.0 - o_.lr * o_.weight_decay);
  at::_foreach_lerp_(m, gs, 1.0 - o_.beta1);
  at::_foreach_mul_(v, o_.beta2);
  at::_foreach_addcmul_(v, gs, gs, 1.0 - o_.beta2);
  std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
  at::_foreach_div_(denom, std::sqrt(bias2));
  at::_foreach_add_(denom, o_.eps);
  at::_foreach_addcdiv_(ps, m, denom, -o_.lr / bias1);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& s, std::vector<at::Tensor> params) {
  if (s.name == "sgd") {
    SgdOptions o;
    o.lr = s.lr.value_or(o.lr);
    o.momentum = s.momentum.value_or(o.momentum);
    o.weight_decay = s.weight_decay.value_or(o.weight_decay);
    o.nesterov = s.nesterov.value_or(o.nesterov);
    return std::make_unique<ForeachSgd>(std::move(params), o);
  }
  if (s.name == "adamw") {
    AdamWOptions o;
    o.lr = s.lr.value_or(o.lr);
    o.beta1 = s.beta1.value_or(o.beta1);
    o.beta2 = s.beta2.value_or(o.beta2);
    o.eps = s.eps.value_or(o.eps);
    o.weight_decay = s.weight_decay.value_or(o.weight_decay);
    return std::make_unique<ForeachAdamW>(std::move(params), o);
  }
  throw std::invalid_argument("unknown optimizer '" + s.name + "'");
}

}  // namespace gpubench::engine
