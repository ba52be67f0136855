#pragma once
// LibTorch's C++ API as it differs between the releases gpubench builds against (2.11.0 through 2.15.0, the newest on
// PyPI on 2026-12-04; CI builds the first and the last). Each difference is absorbed here, once, preferably by naming
// what a call returns rather than by testing version numbers; the rest of the engine uses these names and never tests
// TORCH_VERSION itself. A new release that breaks the build should need a line here, not a change everywhere.

#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <utility>

namespace gpubench::engine::compat {

/// LibTorch's major * 100 + minor, e.g. 211 or 215 (for messages and tests; code below never branches on it).
inline constexpr int kTorchVersion = TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR;

/// The handle to a parameter's gradient accumulator (autograd::impl::grad_accumulator): std::shared_ptr<Node> up to
/// 2.14, c10::intrusive_ptr<Node> from 2.15 on. Holding it keeps the node and the hooks on it alive.
using GradAccumulatorPtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

}  // namespace gpubench::engine::compat
