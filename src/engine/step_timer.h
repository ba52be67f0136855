#pragma once
// Per-step times without a host synchronisation per step: on CUDA an event is recorded at every step
// boundary and the elapsed times are read once, after the epoch's closing synchronisation.

#include <memory>
#include <vector>

#include "device.h"

namespace gpubench::engine {

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  /// Prepares for up to `max_steps` steps and marks the epoch's first boundary.
  virtual void begin_epoch(int64_t max_steps) = 0;
  /// Marks the end of a step (= start of the next).
  virtual void mark() = 0;
  /// Durations between consecutive marks, in ms. Call after the device has been synchronised.
  virtual std::vector<double> end_epoch_ms() = 0;
  /// How the times are taken, for the record's notes.
  virtual const char* method() const = 0;
};

/// CUDA events on CUDA/ROCm devices; the host clock elsewhere (synchronising each step on MPS, where work is
/// asynchronous and there are no events in LibTorch's C++ API).
std::unique_ptr<StepTimer> make_step_timer(const ResolvedDevice& device);

}  // namespace gpubench::engine
