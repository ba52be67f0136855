#pragma once
// One `gpubench run` as rank 0's console sees it: engine and runner events become log lines and a live progress
// line, and each finished epoch (with its telemetry) is streamed to a JSON Lines file after a header line. Telemetry
// itself belongs to the Runner (gpubench/runner/runner.hpp).

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "gpubench/engine/engine.hpp"

namespace gpubench::cli {

class RunSession final : public RunObserver {
 public:
  /// `choose_output` maps the resolved header to the record path (called once, in on_start).
  RunSession(bool quiet, std::function<std::string(const RunRecord&)> choose_output);
  ~RunSession() override;

  void on_start(const RunRecord& header) override;
  void on_telemetry(const TelemetryInfo& info, bool active) override;
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
  bool quiet_, live_, telemetry_requested_ = true;
  std::function<std::string(const RunRecord&)> choose_output_;
  std::string output_, stream_, unit_ = "samples";
  bool line_dirty_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace gpubench::cli
