#pragma once
// Per-step times without a host synchronisation per step where the device has events: an event is recorded at every
// step boundary and the elapsed times are read once, after the epoch's closing synchronisation. Which timer a device
// gets is its backend's choice (backend/backend.h).

#include <functional>
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

/// The device's backend's timer: CUDA events (CUDA), c10::Event (generic), the host clock (CPU).
std::unique_ptr<StepTimer> make_step_timer(const ResolvedDevice& device);

/// The host clock; `synchronize_each_step`, where given, runs before every mark (a device without timing events).
std::unique_ptr<StepTimer> make_host_step_timer(std::function<void()> synchronize_each_step);

}  // namespace gpubench::engine
