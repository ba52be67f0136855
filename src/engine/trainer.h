#pragma once
// The timed training loop for one resolved scenario.

#include <atomic>

#include "device.h"
#include "distributed.h"
#include "gpubench/core/record/run_record.hpp"
#include "gpubench/engine/observer.hpp"
#include "models/registry.h"
#include "precision.h"

namespace gpubench::engine {

/// Everything the loop needs, resolved: no defaults left to decide.
struct TrainingPlan {
  Scenario scenario;          ///< resolved (batch size, warm-up, optimizer, memory format all concrete)
  ResolvedDevice device;
  PrecisionPlan precision;
  bool channels_last = false;
  const std::atomic<bool>* stop_requested = nullptr;
  /// Multi-process data parallelism: this rank's process group (null for a single process). Stop decisions
  /// (time budget, interrupt, non-finite loss) are then taken together at epoch ends, so ranks never disagree
  /// about the next collective.
  Communicator* comm = nullptr;
};

/// Runs warm-up and the timed epochs, filling `record.epochs`, `record.summary`, `record.status`.
/// `record.model` must already be filled. Throws c10::OutOfMemoryError and other errors to the caller.
void train(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record);

}  // namespace gpubench::engine
