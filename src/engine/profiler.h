#pragma once
// `--profile`: a few training steps under LibTorch's Kineto profiler (CUPTI kernels and copies on CUDA, the operator
// profiler on the CPU), handed to core/profile.hpp as plain events, with a Chrome trace written beside them.

#include <functional>
#include <string>
#include <vector>

#include "device.h"
#include "gpubench/core/analysis/profile.hpp"

namespace gpubench::engine {

struct ProfileCapture {
  std::vector<ProfileEvent> events;  ///< empty when profiling failed (see error)
  std::string source;                ///< what the events are: "CUDA kernels and copies (Kineto/CUPTI)", ...
  std::string trace_path;            ///< the Chrome trace written, or empty
  std::string error;                 ///< why there is no profile
};

/// Runs `step` once unrecorded under the profiler (its start-up cost lands there), then `steps` times inside
/// "gpubench::profiled_step" markers, synchronises the device, and stops. The Chrome trace goes to `trace_path`
/// (written to a temporary name and renamed, so a reader never sees half of it); empty = no trace.
ProfileCapture profile_steps(const ResolvedDevice& device, int64_t steps, const std::function<void()>& step,
                             const std::string& trace_path);

}  // namespace gpubench::engine
