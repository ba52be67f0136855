#include "cli/run_session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "gpubench/core/record_io.hpp"

namespace gpubench::cli {

RunSession::RunSession(bool quiet, std::function<std::string(const RunRecord&)> choose_output)
    : quiet_(quiet), live_(!quiet && isatty(STDERR_FILENO) != 0), choose_output_(std::move(choose_output)) {}

RunSession::~RunSession() = default;

void RunSession::clear_line() {
  if (line_dirty_) {
    std::fputs("\r\033[K", stderr);
    line_dirty_ = false;
  }
}

void RunSession::on_start(const RunRecord& header) {
  output_ = choose_output_(header);
  stream_ = epochs_stream_path(output_);
  std::error_code ec;
  std::filesystem::remove(stream_, ec);  // a stale stream from an earlier run must not mix with this one
  unit_ = header.model.sample_unit;
  trace_path_ = header.scenario.telemetry_trace;
  spdlog::info("{} ({} parameters) on {} [{}], {} ({}), batch {}, record -> {}", header.model.name,
               header.model.parameters, header.environment.device, header.environment.device_name,
               header.precision.resolved, header.precision.memory_format, *header.scenario.batch_size, output_);

  telemetry_info_ = TelemetryInfo{};
  telemetry_info_.reader = "none";
  if (!header.scenario.telemetry) {
    telemetry_info_.reason = "telemetry switched off (telemetry: false)";
    return;
  }
  const std::string& dev = header.environment.device;
  const auto colon = dev.find(':');
  telemetry::DeviceSelector sel{header.environment.device_type,
                                colon == std::string::npos ? 0 : std::stoi(dev.substr(colon + 1)),
                                header.environment.pci_bus_id};
  std::string why_not;
  auto reader = telemetry::open_reader(sel, &why_not);
  if (!reader) {
    telemetry_info_.reason = why_not;
    spdlog::warn("no power/clock telemetry: {}", why_not);
    return;
  }
  telemetry_info_ = reader->info();
  telemetry_info_.interval_s = header.scenario.telemetry_interval_s;
  sampler_ = std::make_unique<telemetry::Sampler>(std::move(reader), header.scenario.telemetry_interval_s);
  spdlog::info("telemetry: {} every {:.0f} ms{}", telemetry_info_.reader, telemetry_info_.interval_s * 1000,
               telemetry_info_.power_limit_w ? fmt::format(", power limit {:.0f} W", *telemetry_info_.power_limit_w)
                                             : std::string());
}

void RunSession::on_note(const std::string& message) {
  clear_line();
  spdlog::warn("{}", message);
}

void RunSession::on_phase(const std::string& phase) {
  clear_line();
  spdlog::info("{}", phase);
}

void RunSession::on_epoch_begin(int64_t) {
  if (!sampler_) return;
  sampler_->start();  // after warm-up: the first epoch's start is the first reading
  epoch_begin_s_ = sampler_->now_s();
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
    line = fmt::format("epoch {}{}  step {}/{}  {:.1f} {}/s  epoch eta {}:{:02d}", p.epoch + 1,
                       p.epochs > 0 ? "/" + std::to_string(p.epochs) : "", p.step, p.steps, rate, unit_,
                       static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  line_dirty_ = true;
}

void RunSession::on_epoch(const EpochRecord& e) {
  clear_line();
  nlohmann::json line = e;
  std::string power;
  if (sampler_) {
    EpochTelemetry t = aggregate_epoch(sampler_->samples(), epoch_begin_s_, sampler_->now_s(), e.samples);
    if (t.power_avg_w) power = fmt::format(", {:.0f} W avg", *t.power_avg_w);
    if (t.joules_per_sample) power += fmt::format(", {:.2f} J/{}", *t.joules_per_sample, unit_.substr(0, unit_.size() - 1));
    if (t.sm_clock_avg_mhz) power += fmt::format(", SM {:.0f} MHz", *t.sm_clock_avg_mhz);
    if (t.temperature_peak_c) power += fmt::format(", {:.0f} C peak", *t.temperature_peak_c);
    line["telemetry"] = t;
    epoch_telemetry_[e.index] = std::move(t);
  }
  if (!stream_.empty()) {
    try {
      append_json_line(stream_, line);
    } catch (const std::exception& ex) {
      spdlog::warn("could not stream the epoch to {}: {}", stream_, ex.what());
    }
  }
  spdlog::info("epoch {}: {} steps in {:.2f} s, {:.1f} {}/s, median step {:.2f} ms{}{}", e.index + 1, e.steps,
               e.seconds, e.samples_per_s, unit_, e.step_time.median_ms, power, e.complete ? "" : " (partial)");
}

void RunSession::complete(RunRecord& record) {
  if (sampler_) sampler_->stop();
  if (telemetry_info_.reader.empty()) {  // the run never started (e.g. no device): say so
    telemetry_info_.reader = "none";
    telemetry_info_.reason = "the run did not start";
  }
  for (auto& e : record.epochs) {
    auto it = epoch_telemetry_.find(e.index);
    if (it != epoch_telemetry_.end()) e.telemetry = it->second;
  }
  if (sampler_ && !trace_path_.empty()) {
    try {
      write_file_atomic(trace_path_, samples_to_csv(sampler_->samples()));
      telemetry_info_.trace_path = trace_path_;
    } catch (const std::exception& ex) {
      spdlog::warn("could not write the telemetry trace: {}", ex.what());
    }
  }
  record.telemetry = telemetry_info_;
  compute_drift(record);
}

}  // namespace gpubench::cli
