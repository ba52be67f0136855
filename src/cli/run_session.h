#pragma once
// One `gpubench run` as the CLI sees it. MonitoringObserver samples this process's device during the timed epochs
// (every rank has one); RunSession, rank 0's, also turns engine events into log lines and a live progress line and
// streams each finished epoch (with its telemetry) to a JSON Lines file.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "gpubench/engine/engine.hpp"
#include "gpubench/telemetry/device_monitor.hpp"

namespace gpubench::cli {

/// Device telemetry only: what a rank other than 0 runs.
class MonitoringObserver : public RunObserver {
 public:
  void on_start(const RunRecord& header) override;
  void on_epoch_begin(int64_t index) override;
  std::optional<EpochTelemetry> on_epoch_end(int64_t index, int64_t samples) override;

  /// Stops sampling and adds the telemetry block to `record` (and clocks-locked evidence from its epochs);
  /// writes the raw-sample trace when the scenario asks for one.
  void complete(RunRecord& record);

 protected:
  std::unique_ptr<telemetry::DeviceMonitor> monitor_;
  std::string trace_path_;
};

class RunSession final : public MonitoringObserver {
 public:
  /// `choose_output` maps the resolved header to the record path (called once, in on_start).
  RunSession(bool quiet, std::function<std::string(const RunRecord&)> choose_output);
  ~RunSession() override;

  void on_start(const RunRecord& header) override;
  void on_note(const std::string& message) override;
  void on_phase(const std::string& phase) override;
  void on_step(const StepProgress& p) override;
  void on_epoch(const EpochRecord& epoch) override;

  /// The record path chosen in on_start (empty if the run never started).
  const std::string& output_path() const { return output_; }
  /// The JSON Lines stream of completed epochs (empty if none was opened).
  const std::string& stream_path() const { return stream_; }

 private:
  void clear_line();
  bool quiet_, live_;
  std::function<std::string(const RunRecord&)> choose_output_;
  std::string output_, stream_, unit_ = "samples";
  bool line_dirty_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace gpubench::cli
