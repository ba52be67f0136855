#pragma once
// Whole-step CUDA graphs: forward, backward and optimizer step captured once and replayed per step, so a step
// costs one graph launch instead of thousands of kernel launches from the host.

#include <ATen/ATen.h>

#include <functional>
#include <memory>

namespace gpubench::engine {

class StepGraph {
 public:
  virtual ~StepGraph() = default;
  /// Runs the captured step on the current stream; returns its loss, a tensor every replay overwrites.
  virtual const at::Tensor& replay() = 0;
};

/// True when this build can capture CUDA graphs.
bool cuda_graphs_compiled();

/// Runs `step` `side_warmup` times on a side stream (as PyTorch's torch.cuda.graph recipe asks), then captures one
/// run of it. `step` must do the whole step (including zero_grad) and return the loss; its inputs and parameters
/// must stay at the same addresses from then on. Throws (std::runtime_error, c10::Error) when capture fails; the
/// caller then runs eager.
std::unique_ptr<StepGraph> capture_step(const std::function<at::Tensor()>& step, int side_warmup);

}  // namespace gpubench::engine
