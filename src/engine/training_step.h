#pragma once
// The pieces of a training run that are not the run's sequence (trainer.cpp): one optimisation step
// with loss scaling and gradient accumulation, why a whole step cannot be captured, the
// fault-injection test hook, and how the ranks' telemetry of an epoch is combined.

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "distributed.h"
#include "models/registry.h"
#include "optimizers.h"
#include "precision.h"
#include "trainer.h"

namespace gpubench::engine {

/// One optimisation step: forward (autocast), backward, optimizer; loss scaling for fp16.
class StepRunner {
 public:
  StepRunner(const TrainingPlan& plan, Workload& w, const Batch& batch, Optimizer& opt,
             GradientBuckets* buckets);
  /// Returns the (unscaled, detached) loss, averaged over micro-batches; counts steps the scaler
  /// skipped.
  at::Tensor run();
  /// Steps the loss scaler skipped since the last call (reads the device counter: call between
  /// epochs).
  int64_t take_skipped();

 private:
  const TrainingPlan& plan_;
  Workload& workload_;
  const Batch& batch_;
  Optimizer& opt_;
  GradientBuckets* buckets_;
  std::optional<LossScaler> scaler_;
  int64_t skipped_ = 0;
  at::Tensor skipped_on_device_;
};

/// Why the whole step cannot be captured for this plan; empty when it can. `opt` is null in
/// inference mode (a forward pass alone: no all-reduces, no recomputation, no optimizer to check).
std::string graph_unsupported_reason(const TrainingPlan& plan, const Optimizer* optimizer);

/// Test hook for fault handling (Scenario::fault_inject, from GPUBENCH_FAULT_INJECT): ACTION-rank:R:step:N sends this
/// process a
/// signal at its Nth step (warm-up and timed steps counted together, from 1);
/// ACTION-rank:R:after-epoch:E does it right after epoch E (1-based) was reported and streamed.
/// ACTION: kill (SIGKILL), term (SIGTERM), stop (SIGSTOP: a hung rank). A single process is rank 0.
struct FaultInjection {
  int signal = 0, rank = -1;
  int64_t step = -1, after_epoch = -1;
  static FaultInjection from_spec(const std::string& spec);
  bool mine(const Communicator* comm) const {
    return signal != 0 && (comm != nullptr ? comm->rank() : 0) == rank;
  }
  void maybe_fire(const Communicator* comm, int64_t step_now) const;
  void maybe_fire_after_epoch(const Communicator* comm, int64_t epoch_1based) const;
};

std::string describe_loss(double v);

/// Multi-process runs: every rank's telemetry for the epoch goes to every rank; the record keeps
/// each rank's and the job's totals. A rank without telemetry contributes an empty entry, which
/// leaves the totals unknown (not too low).
void gather_rank_telemetry(Communicator& comm, const std::optional<EpochTelemetry>& local,
                           EpochRecord& ep);

}  // namespace gpubench::engine
