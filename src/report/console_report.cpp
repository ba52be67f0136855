#include <fmt/format.h>

#include "gpubench/report/console.hpp"

namespace gpubench {

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

namespace {
std::string opt_bytes(const std::optional<int64_t>& b) { return b ? format_bytes(*b) : "-"; }
}  // namespace

std::string format_run_summary(const RunRecord& r) {
  const Scenario& s = r.scenario;
  const std::string unit = r.model.sample_unit.empty() ? "samples" : r.model.sample_unit;
  std::string out;
  out += fmt::format("{} on {} ({}), {} [{}], {}, batch {}, {}\n", r.model.name.empty() ? s.model : r.model.name,
                     r.environment.device.empty() ? s.device : r.environment.device, r.environment.device_name,
                     r.precision.resolved.empty() ? s.precision : r.precision.resolved,
                     r.precision.requested.empty() ? s.precision : r.precision.requested, s.memory_format,
                     s.batch_size ? std::to_string(*s.batch_size) : "?", s.optimizer.name);
  if (!r.execution.optimizer_implementation.empty()) {
    out += fmt::format("execution: {}, {} optimizer{}\n", r.execution.mode == "cuda_graph" ? "CUDA graph" : "eager",
                       r.execution.optimizer_implementation,
                       r.execution.graph_fallback.empty() ? "" : " (graph not used: " + r.execution.graph_fallback + ")");
  }
  if (!r.epochs.empty()) {
    const bool device_mem = r.epochs.front().peak_allocated_bytes.has_value();
    out += fmt::format("{:>5} {:>6} {:>9} {:>9} {:>11} {:>24} {:>12}  {}\n", "epoch", "steps", "samples", "time s",
                       unit + "/s", "step ms median/p5/p95", device_mem ? "peak alloc" : "peak RSS",
                       "loss first -> last");
    for (const auto& e : r.epochs) {
      out += fmt::format("{:>5} {:>6} {:>9} {:>9.2f} {:>11.1f} {:>24} {:>12}  {:.4g} -> {:.4g}{}\n", e.index + 1,
                         e.steps, e.samples, e.seconds, e.samples_per_s,
                         fmt::format("{:.2f}/{:.2f}/{:.2f}", e.step_time.median_ms, e.step_time.p5_ms,
                                     e.step_time.p95_ms),
                         opt_bytes(device_mem ? e.peak_allocated_bytes : e.peak_host_rss_bytes), e.loss_first,
                         e.loss_last, e.complete ? "" : "  (partial)");
    }
    const RunSummary& m = r.summary;
    out += fmt::format("total: {} {} in {:.2f} s = {:.1f} {}/s, {:.3g} TFLOP/s of model FLOPs", m.samples, unit,
                       m.seconds, m.samples_per_s, unit, m.achieved_tflops);
    if (m.mfu) out += fmt::format(" ({:.1f}% of the {:g} TFLOP/s peak)", *m.mfu * 100.0, *m.peak_tflops);
    if (m.peak_reserved_bytes) out += fmt::format(", peak reserved {}", format_bytes(*m.peak_reserved_bytes));
    out += fmt::format(" (warm-up: {} steps, {:.1f} s)\n", m.warmup_steps, m.warmup_seconds);
    if (!m.bounded_by.empty()) out += fmt::format("bounded by: {}\n", m.bounded_by);
  }
  out += fmt::format("status: {}{}\n", to_string(r.status), r.reason.empty() ? "" : " - " + r.reason);
  return out;
}

}  // namespace gpubench
