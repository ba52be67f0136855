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

bool Optimizer::host_says_skip(const at::Tensor& found_inf) {
  // As PyTorch's GradScaler.step with a non-fused optimizer: the decision needs the flag on the host.
  return found_inf.defined() && found_inf.item<float>() != 0.0f;
}

void ForeachSgd::step(const at::Tensor& found_inf) {
  if (host_says_skip(found_inf)) return;
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

FusedSgd::FusedSgd(std::vector<at::Tensor> params, SgdOptions o) : Optimizer(std::move(params)), o_(o) {
  if (o_.momentum != 0) {
    momentum_.reserve(params_.size());
    for (const auto& p : params_) momentum_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
  }
}

void FusedSgd::step(const at::Tensor& found_inf) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps, gs, bufs;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    ps.push_back(params_[i]);
    gs.push_back(params_[i].grad());
    if (!momentum_.empty()) bufs.push_back(momentum_[i]);
  }
  if (ps.empty()) return;
  // The first step sets the buffer to the gradient (PyTorch's rule). With dampening 0 that is what the general
  // rule gives from a zero buffer, so only a dampened first step needs the kernel's first-step path; this keeps
  // a step skipped on the device (found_inf) from leaving an uninitialised buffer behind.
  const bool first = first_ && o_.dampening != 0;
  first_ = false;
  const std::optional<at::Tensor> inf = found_inf.defined() ? std::optional<at::Tensor>(found_inf) : std::nullopt;
  at::_fused_sgd_(ps, gs, bufs, o_.weight_decay, o_.momentum, o_.lr, o_.dampening, o_.nesterov,
                  /*maximize=*/false, first, /*grad_scale=*/std::nullopt, inf);
}

namespace {
void init_moments(const std::vector<at::Tensor>& params, std::vector<at::Tensor>& m, std::vector<at::Tensor>& v) {
  m.reserve(params.size());
  v.reserve(params.size());
  for (const auto& p : params) {
    m.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
    v.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
  }
}
/// Parameters that have gradients, with their gradients and AdamW moments, in matching order.
void with_grads_and_moments(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& exp_avg,
                            const std::vector<at::Tensor>& exp_avg_sq, std::vector<at::Tensor>& ps,
                            std::vector<at::Tensor>& gs, std::vector<at::Tensor>& m, std::vector<at::Tensor>& v) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].grad().defined()) continue;
    ps.push_back(params[i]);
    gs.push_back(params[i].grad());
    m.push_back(exp_avg[i]);
    v.push_back(exp_avg_sq[i]);
  }
}
}  // namespace

ForeachAdamW::ForeachAdamW(std::vector<at::Tensor> params, AdamWOptions o)
    : Optimizer(std::move(params)), o_(o) {
  init_moments(params_, exp_avg_, exp_avg_sq_);
}

void ForeachAdamW::step(const at::Tensor& found_inf) {
  if (host_says_skip(found_inf)) return;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps, gs, m, v;
  with_grads_and_moments(params_, exp_avg_, exp_avg_sq_, ps, gs, m, v);
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

FusedAdamW::FusedAdamW(std::vector<at::Tensor> params, AdamWOptions o) : Optimizer(std::move(params)), o_(o) {
  init_moments(params_, exp_avg_, exp_avg_sq_);
  const at::Device dev = params_.empty() ? at::Device(at::kCPU) : params_.front().device();
  step_ = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(dev));
}

void FusedAdamW::step(const at::Tensor& found_inf) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> ps, gs, m, v;
  with_grads_and_moments(params_, exp_avg_, exp_avg_sq_, ps, gs, m, v);
  if (ps.empty()) return;
  // One shared step count: the kernel reads a step tensor per parameter, so every entry aliases the same one.
  step_.add_(1);
  const std::vector<at::Tensor> steps(ps.size(), step_);
  const std::optional<at::Tensor> inf = found_inf.defined() ? std::optional<at::Tensor>(found_inf) : std::nullopt;
  at::_fused_adamw_(ps, gs, m, v, /*max_exp_avg_sqs=*/{}, steps, o_.lr, o_.beta1, o_.beta2, o_.weight_decay, o_.eps,
                    /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/std::nullopt, inf);
  if (inf) step_.sub_(found_inf.reshape({}));  // a skipped update does not count (torch.optim does the same)
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& s, std::vector<at::Tensor> params) {
  const bool fused = s.implementation == "fused";
  if (!fused && !s.implementation.empty() && s.implementation != "foreach") {
    throw std::invalid_argument("unknown optimizer implementation '" + s.implementation + "'");
  }
  if (s.name == "sgd") {
    SgdOptions o;
    o.lr = s.lr.value_or(o.lr);
    o.momentum = s.momentum.value_or(o.momentum);
    o.weight_decay = s.weight_decay.value_or(o.weight_decay);
    o.nesterov = s.nesterov.value_or(o.nesterov);
    if (fused) return std::make_unique<FusedSgd>(std::move(params), o);
    return std::make_unique<ForeachSgd>(std::move(params), o);
  }
  if (s.name == "adamw") {
    AdamWOptions o;
    o.lr = s.lr.value_or(o.lr);
    o.beta1 = s.beta1.value_or(o.beta1);
    o.beta2 = s.beta2.value_or(o.beta2);
    o.eps = s.eps.value_or(o.eps);
    o.weight_decay = s.weight_decay.value_or(o.weight_decay);
    if (fused) return std::make_unique<FusedAdamW>(std::move(params), o);
    return std::make_unique<ForeachAdamW>(std::move(params), o);
  }
  throw std::invalid_argument("unknown optimizer '" + s.name + "'");
}

}  // namespace gpubench::engine
