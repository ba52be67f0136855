#pragma once
// The scenario's kernel_options put in force for a run: the engine calls this once before it builds anything, so every
// choice a kernel, a cache or the prefill makes during the run comes from the resolved scenario (never from the
// environment; the resolver reads the documented variables into the scenario).

#include "gpubench/core/scenario/kernel_options.hpp"

namespace gpubench::engine {

void apply_kernel_options(const KernelOptions& options);

}  // namespace gpubench::engine
