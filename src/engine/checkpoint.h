#pragma once
// Gradient checkpointing for LibTorch C++ (which has no torch.utils.checkpoint): a block's activations are not kept;
// backward reruns the block and backpropagates through the rerun.

#include <ATen/ATen.h>

#include <functional>
#include <vector>

namespace gpubench::engine {

using BlockFn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

/// Runs `fn(inputs)` without recording activations. Backward reruns it with the RNG and autocast state of the
/// forward (so dropout masks and casts repeat exactly) and returns the gradients of `inputs`; parameter gradients
/// accumulate as usual. `inputs` must be every tensor the block reads that needs a gradient.
at::Tensor checkpoint(const BlockFn& fn, const std::vector<at::Tensor>& inputs);

}  // namespace gpubench::engine
