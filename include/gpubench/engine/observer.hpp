#pragma once
// What a running benchmark tells its front end: progress events with plain types (no torch), so the CLI and other
// front ends never see LibTorch's headers.

#include <cstdint>
#include <optional>
#include <string>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

/// Progress of the running benchmark, for progress lines.
struct StepProgress {
  bool warmup = false;
  int64_t epoch = 0, epochs = 0;  ///< 0-based epoch index and count (warm-up: 0 of 0)
  int64_t step = 0, steps = 0;    ///< steps done in this epoch (or warm-up) and its length
  int64_t batch_size = 0;
  double elapsed_s = 0;           ///< host time since this epoch (or warm-up) started (s)
};

/// Receives events while a benchmark runs. Called on the training thread: keep handlers cheap.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// Once the scenario is resolved (defaults filled, device chosen), before any training step. `header` has
  /// the resolved scenario, environment, model and precision; no epochs yet.
  virtual void on_start(const RunRecord& /*header*/) {}
  /// Which reader samples the device and its static facts (`active` false: none, and `info.reason` says why).
  /// Sent by the Runner once, after on_start and before training.
  virtual void on_telemetry(const TelemetryInfo& /*info*/, bool /*active*/) {}
  /// Something the user must know, e.g. "ran on the CPU with a 30 s budget".
  virtual void on_note(const std::string& /*message*/) {}
  /// A phase begins: "building model", "warm-up", "epoch 1/3", ...
  virtual void on_phase(const std::string& /*phase*/) {}
  /// A timed epoch is about to start (the device has just been synchronised). 0-based index.
  virtual void on_epoch_begin(int64_t /*index*/) {}
  /// After every step (timed or warm-up). No device synchronisation happens for this.
  virtual void on_step(const StepProgress& /*progress*/) {}
  /// A timed epoch has just ended (the device synchronised), on every rank of a multi-process run: this process's
  /// device telemetry for the epoch, which trained `samples` samples here; empty when there is none. The engine
  /// combines the ranks' figures into the epoch record (per rank and the job's totals).
  virtual std::optional<EpochTelemetry> on_epoch_end(int64_t /*index*/, int64_t /*samples*/) { return std::nullopt; }
  /// After every timed epoch, with its finished record (telemetry included).
  virtual void on_epoch(const EpochRecord& /*epoch*/) {}
};

}  // namespace gpubench
