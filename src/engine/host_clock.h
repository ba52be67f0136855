#pragma once
// The host's monotonic clock, for what the device's step timer does not time: warm-up, generations, whole epochs, the
// input pipeline's and the all-reduce's waits, the peak measurements.

#include <chrono>

namespace gpubench::engine {

using Clock = std::chrono::steady_clock;

/// Seconds on the host's clock since `t0`.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace gpubench::engine
