#pragma once
// Whole-step CUDA graphs: forward, backward and optimizer step captured once and replayed per step, so a step
// costs one graph launch instead of thousands of kernel launches from the host.

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>

namespace gpubench::engine {

class StepGraph {
 public:
  virtual ~StepGraph() = default;
  /// Runs the captured step on the current stream; returns its loss, a tensor every replay overwrites.
  virtual const at::Tensor& replay() = 0;
  /// The most memory allocated on the device while the step was warmed up and captured (bytes; 0 where unknown):
  /// what a replay works in. A replay allocates nothing, and the memory its intermediates use lies in the graph's own
  /// pool, which the allocator's allocated counter does not see, so a peak read across replays leaves it out
  /// (ResNet-50's bf16 training step at batch 256: 0.56 GiB counted against 11 GiB eager on the H200).
  int64_t working_set_bytes() const { return working_set_bytes_; }

 protected:
  int64_t working_set_bytes_ = 0;
};

/// `allocated` (a peak read across replays of `graph`, if any) raised to the graph's working set.
std::optional<int64_t> with_graph_working_set(std::optional<int64_t> allocated, const StepGraph* graph);

/// True when this build can capture CUDA graphs.
bool cuda_graphs_compiled();

/// Runs `step` `side_warmup` times on a side stream (as PyTorch's torch.cuda.graph recipe asks), then captures one
/// run of it. `step` must do the whole step (including zero_grad) and return the loss; its inputs and parameters
/// must stay at the same addresses from then on. Throws (std::runtime_error, c10::Error) when capture fails; the
/// caller then runs eager.
std::unique_ptr<StepGraph> capture_step(const std::function<at::Tensor()>& step, int side_warmup);

}  // namespace gpubench::engine
