#include "checkpoint.h"

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

#include "fp8.h"
#include "precision.h"

namespace gpubench::engine {

namespace {

/// What backward needs to rerun the block exactly as forward ran it.
struct Replay : torch::CustomClassHolder {
  BlockFn fn;
  at::DeviceType device_type = at::kCPU;
  std::optional<at::ScalarType> autocast;
  at::Generator generator;
  at::Tensor rng_state;
  const fp8::Plan* fp8_plan = nullptr;  ///< precision: fp8's plan, thread-local in forward; backward runs elsewhere
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                c10::intrusive_ptr<Replay> replay, at::TensorList inputs) {
    {
      std::lock_guard<std::mutex> lock(replay->generator.mutex());
      replay->rng_state = replay->generator.get_state();
    }
    at::Tensor out;
    {
      at::NoGradGuard no_grad;
      out = replay->fn(inputs.vec());
    }
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["replay"] = c10::IValue::make_capsule(replay);
    return {out};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto replay = c10::static_intrusive_pointer_cast<Replay>(ctx->saved_data["replay"].toCapsule());
    std::vector<at::Tensor> inputs;
    for (const auto& v : ctx->get_saved_variables()) {
      inputs.push_back(v.detach().requires_grad_(v.requires_grad()));
    }
    // Same random numbers as the forward (dropout), then the generator continues where it was. The generator's
    // mutex guards only the state swaps: the rerun's own random draws take it again.
    at::Tensor now;
    {
      std::lock_guard<std::mutex> lock(replay->generator.mutex());
      now = replay->generator.get_state();
      replay->generator.set_state(replay->rng_state);
    }
    at::Tensor out;
    {
      at::AutoGradMode grad(true);
      AutocastScope autocast(replay->device_type, replay->autocast);
      const fp8::PlanScope fp8_scope(replay->fp8_plan);  // the rerun's Linear layers in FP8 as the forward's were
      out = replay->fn(inputs);
    }
    {
      std::lock_guard<std::mutex> lock(replay->generator.mutex());
      replay->generator.set_state(now);
    }
    torch::autograd::backward({out}, {grad_outputs[0]});
    torch::autograd::variable_list grads{at::Tensor()};  // none for the replay argument
    for (const auto& x : inputs) grads.push_back(x.requires_grad() ? x.grad() : at::Tensor());
    return grads;
  }
};

}  // namespace

at::Tensor checkpoint(const BlockFn& fn, const std::vector<at::Tensor>& inputs) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  auto replay = c10::make_intrusive<Replay>();
  replay->fn = fn;
  const at::Device device = inputs.front().device();
  replay->device_type = device.type();
  if (at::autocast::is_autocast_enabled(device.type())) {
    replay->autocast = at::autocast::get_autocast_dtype(device.type());
  }
  replay->generator = at::globalContext().defaultGenerator(device);
  replay->fp8_plan = fp8::active_plan();
  // As an at::TensorList, so autograd sees the tensors as inputs (a std::vector would pass as an opaque argument).
  return CheckpointFunction::apply(replay, at::TensorList(inputs))[0];
}

}  // namespace gpubench::engine
