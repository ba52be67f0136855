#pragma once
// One `gpubench run` as the CLI sees it: turns engine events into log lines and a live progress line, samples
// telemetry during the timed epochs, and streams each finished epoch (with its telemetry) to a JSON Lines file.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "gpubench/engine/engine.hpp"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench::cli {

class RunSession final : public RunObserver {
 public:
  /// `choose_output` maps the resolved header to the record path (called once, in on_start).
  RunSession(bool quiet, std::function<std::string(const RunRecord&)> choose_output);
  ~RunSession() override;

  void on_start(const RunRecord& header) override;
  void on_note(const std::string& message) override;
  void on_phase(const std::string& phase) override;
  void on_epoch_begin(int64_t index) override;
  void on_step(const StepProgress& p) override;
  void on_epoch(const EpochRecord& epoch) override;

  /// Adds what the session measured to the engine's record: per-epoch telemetry, the telemetry block, drift;
  /// writes the raw-sample trace when the scenario asks for one.
  void complete(RunRecord& record);

  /// The record path chosen in on_start (empty if the run never started).
  const std::string& output_path() const { return output_; }
  /// The JSON Lines stream of completed epochs (empty if none was opened).
  const std::string& stream_path() const { return stream_; }

 private:
  void clear_line();
  bool quiet_, live_;
  std::function<std::string(const RunRecord&)> choose_output_;
  std::string output_, stream_, unit_ = "samples", trace_path_;
  bool line_dirty_ = false;
  std::chrono::steady_clock::time_point last_draw_{};

  TelemetryInfo telemetry_info_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  double epoch_begin_s_ = 0;
  std::map<int64_t, EpochTelemetry> epoch_telemetry_;
};

}  // namespace gpubench::cli
