#include "cli/progress.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "gpubench/core/record_io.hpp"

namespace gpubench::cli {

ConsoleObserver::ConsoleObserver(bool quiet, std::function<std::string(const RunRecord&)> choose_output)
    : quiet_(quiet), live_(!quiet && isatty(STDERR_FILENO) != 0), choose_output_(std::move(choose_output)) {}

void ConsoleObserver::clear_line() {
  if (line_dirty_) {
    std::fputs("\r\033[K", stderr);
    line_dirty_ = false;
  }
}

void ConsoleObserver::on_start(const RunRecord& header) {
  output_ = choose_output_(header);
  stream_ = epochs_stream_path(output_);
  std::error_code ec;
  std::filesystem::remove(stream_, ec);  // a stale stream from an earlier run must not mix with this one
  unit_ = header.model.sample_unit;
  spdlog::info("{} ({} parameters) on {} [{}], {} ({}), batch {}, record -> {}", header.model.name,
               header.model.parameters, header.environment.device, header.environment.device_name,
               header.precision.resolved, header.precision.memory_format, *header.scenario.batch_size, output_);
}

void ConsoleObserver::on_note(const std::string& message) {
  clear_line();
  spdlog::warn("{}", message);
}

void ConsoleObserver::on_phase(const std::string& phase) {
  clear_line();
  spdlog::info("{}", phase);
}

void ConsoleObserver::on_step(const StepProgress& p) {
  if (!live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (p.step != p.steps && now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.step * p.batch_size) / p.elapsed_s : 0.0;
  const double eta = rate > 0 ? static_cast<double>((p.steps - p.step) * p.batch_size) / rate : 0.0;
  if (p.warmup) {
    std::fprintf(stderr, "\r\033[Kwarm-up step %lld/%lld", static_cast<long long>(p.step),
                 static_cast<long long>(p.steps));
  } else {
    std::fprintf(stderr, "\r\033[Kepoch %lld/%lld  step %lld/%lld  %.1f %s/s  eta %d:%02d",
                 static_cast<long long>(p.epoch + 1), static_cast<long long>(p.epochs),
                 static_cast<long long>(p.step), static_cast<long long>(p.steps), rate, unit_.c_str(),
                 static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  }
  std::fflush(stderr);
  line_dirty_ = true;
}

void ConsoleObserver::on_epoch(const EpochRecord& e) {
  clear_line();
  if (!stream_.empty()) {
    try {
      append_json_line(stream_, nlohmann::json(e));
    } catch (const std::exception& ex) {
      spdlog::warn("could not stream the epoch to {}: {}", stream_, ex.what());
    }
  }
  spdlog::info("epoch {}: {} steps in {:.2f} s, {:.1f} {}/s, median step {:.2f} ms{}", e.index + 1, e.steps,
               e.seconds, e.samples_per_s, unit_, e.step_time.median_ms, e.complete ? "" : " (partial)");
}

}  // namespace gpubench::cli
