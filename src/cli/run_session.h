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
  /// `record_path`: where the record will go (the epochs stream goes beside it); empty: no stream (the record goes to
  /// standard output).
  RunSession(bool quiet, std::string record_path);
  ~RunSession() override;

  void on_start(const RunRecord& header) override;
  void on_telemetry(const TelemetryInfo& info, bool active) override;
  void on_note(const std::string& message) override;
  void on_phase(const std::string& phase) override;
  void on_step(const StepProgress& p) override;
  void on_epoch(const EpochRecord& epoch) override;

  /// The JSON Lines stream of completed epochs (empty if none was opened).
  const std::string& stream_path() const { return stream_; }

 private:
  void clear_line();
  bool quiet_, live_, telemetry_requested_ = true;
  std::string output_, stream_, unit_ = "samples";
  bool line_dirty_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace gpubench::cli
