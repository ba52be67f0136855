#pragma once
// Turns engine events into log lines, a live progress line on terminals, and the epoch JSON Lines stream.

#include <chrono>
#include <functional>
#include <string>

#include "gpubench/engine/engine.hpp"

namespace gpubench::cli {

class ConsoleObserver final : public RunObserver {
 public:
  /// `choose_output` maps the resolved header to the record path (called once, in on_start).
  ConsoleObserver(bool quiet, std::function<std::string(const RunRecord&)> choose_output);
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
