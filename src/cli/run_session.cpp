#include "cli/run_session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

RunSession::RunSession(bool quiet, std::string record_path)
    : quiet_(quiet), live_(!quiet && isatty(STDERR_FILENO) != 0), output_(std::move(record_path)) {}

RunSession::~RunSession() = default;

void RunSession::clear_line() {
  if (line_dirty_) {
    std::fputs("\r\033[K", stderr);
    line_dirty_ = false;
  }
}

void RunSession::on_start(const RunRecord& header) {
  if (!output_.empty()) {
    stream_ = epochs_stream_path(output_);
    std::error_code ec;
    std::filesystem::remove(stream_, ec);  // a stale stream from an earlier run must not mix with this one
    try {  // the header first: a launcher or a reader can rebuild a killed run's record from the stream
      append_json_line(stream_, nlohmann::json{{"header", header}});
    } catch (const std::exception& ex) {
      spdlog::warn("could not start the epochs stream: {}", ex.what());
    }
  }
  unit_ = header.model.sample_unit;
  spdlog::info("{} ({} parameters) on {} [{}], {} ({}), batch {}, record -> {}", header.model.name,
               header.model.parameters, header.environment.device, header.environment.device_name,
               header.precision.resolved, header.precision.memory_format, *header.scenario.batch_size,
               output_.empty() ? std::string("standard output") : output_);
  telemetry_requested_ = header.scenario.telemetry;
}

void RunSession::on_telemetry(const TelemetryInfo& t, bool active) {
  if (!active) {
    if (telemetry_requested_) spdlog::warn("no power/clock telemetry: {}", t.reason);
    return;
  }
  spdlog::info("telemetry: {} every {:.0f} ms{}", t.reader, t.interval_s * 1000,
               t.power_limit_w ? fmt::format(", power limit {:.0f} W", *t.power_limit_w) : std::string());
  if (t.other_processes && !t.other_processes->empty()) {
    std::string who;
    for (const auto& p : *t.other_processes) {
      who += fmt::format("{}pid {} ({}{})", who.empty() ? "" : ", ", p.pid, p.name.empty() ? "?" : p.name,
                         p.used_memory_bytes ? ", " + format_bytes(*p.used_memory_bytes) : std::string());
    }
    spdlog::warn("other processes are using this GPU: {}; the timings are not like-for-like", who);
  }
  if (t.clocks_locked.value_or(false)) spdlog::info("clocks are pinned: {}", t.clocks_locked_evidence);
}

void RunSession::on_note(const std::string& message) {
  clear_line();
  spdlog::warn("{}", message);
}

void RunSession::on_phase(const std::string& phase) {
  clear_line();
  spdlog::info("{}", phase);
}

void RunSession::on_step(const StepProgress& p) {
  if (!live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (p.step != p.steps && now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.step * p.batch_size) / p.elapsed_s : 0.0;
  const double eta = rate > 0 ? static_cast<double>((p.steps - p.step) * p.batch_size) / rate : 0.0;
  std::string line;
  if (p.warmup) {
    line = fmt::format("warm-up step {}/{}", p.step, p.steps);
  } else {
    line = fmt::format("epoch {}{}  step {}/{}  {} {}/s  epoch eta {}:{:02d}", p.epoch + 1,
                       p.epochs > 0 ? "/" + std::to_string(p.epochs) : "", p.step, p.steps, format_rate(rate), unit_,
                       static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  line_dirty_ = true;
}

void RunSession::on_epoch(const EpochRecord& e) {
  clear_line();
  std::string power;
  if (e.telemetry) {
    const EpochTelemetry& t = *e.telemetry;
    const std::string total = t.devices > 1 ? " total" : "";
    if (t.devices > 1) power = fmt::format(", {} GPUs", t.devices);
    if (t.power_avg_w) power += fmt::format(", {:.0f} W{} avg", *t.power_avg_w, total);
    if (t.joules_per_sample) {
      power += fmt::format(", {:.3f} J/{}", *t.joules_per_sample, unit_.substr(0, unit_.size() - 1));
    }
    if (t.sm_clock_avg_mhz) power += fmt::format(", SM {:.0f} MHz", *t.sm_clock_avg_mhz);
    if (t.temperature_peak_c) power += fmt::format(", {:.0f} C peak", *t.temperature_peak_c);
  }
  if (!stream_.empty()) {
    try {
      append_json_line(stream_, nlohmann::json(e));
    } catch (const std::exception& ex) {
      spdlog::warn("could not stream the epoch to {}: {}", stream_, ex.what());
    }
  }
  spdlog::info("epoch {}: {} steps in {:.2f} s, {} {}/s, median step {:.2f} ms{}{}", e.index + 1, e.steps,
               e.seconds, format_rate(e.samples_per_s), unit_, e.step_time.median_ms, power, e.complete ? "" : " (partial)");
  if (e.host) {
    const std::string busy = busy_host_reason(*e.host);
    if (!busy.empty()) {
      spdlog::warn("epoch {} ran on a busy host: {}; its times measure that work too (compare and history --detect "
                   "call a difference involving this run inconclusive)", e.index + 1, busy);
    }
  }
}

}  // namespace gpubench::cli
