// What the views share (view_helpers.h).

#include "report/view_helpers.h"

#include <fmt/format.h>

#include <cmath>

#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/analysis/profile.hpp"

namespace gpubench::views {

std::string file_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string sample_unit(const RunRecord& r) { return r.model.sample_unit.empty() ? "samples" : r.model.sample_unit; }
std::string device_label(const RunRecord& r) {
  return r.environment.device_name.empty() ? r.environment.device : r.environment.device_name;
}
std::string precision_label(const RunRecord& r) {
  return r.precision.resolved.empty() ? r.scenario.precision : r.precision.resolved;
}
std::string mode_label(const RunRecord& r) { return r.execution.mode.empty() ? "eager" : r.execution.mode; }


/// Puts `m` in its column of `row`, adding the column when the table lacks it. Rates of different sample units
/// share one column, headed in samples/s.
void put_metric(Table& t, std::vector<Cell>& row, const Metric& m) {
  Column& c = t.columns[t.put(row, metric_column(m), Cell::num(m.value))];
  if (c.unit != m.unit && is_rate_unit(c.unit)) c.unit = "samples/s";
}

/// The metrics of `ms` whose tags are in `wanted` (in that order), then every extra metric (not in the standard
/// catalog): views show a chosen few standard metrics and every metric someone added.
Metrics pick(const Metrics& ms, const std::vector<std::string>& wanted) {
  Metrics out;
  for (const auto& tag : wanted) {
    if (const Metric* m = find_metric(ms, tag)) out.push_back(*m);
  }
  for (const auto& m : ms) {
    if (!is_standard_metric(m.tag)) out.push_back(m);
  }
  return out;
}

/// Identity of a run for tables that list runs.
void put_identity(Table& t, std::vector<Cell>& row, const LoadedRecord& lr) {
  const RunRecord& r = lr.record;
  const auto put = [&](const Column& c, Cell v) { t.put(row, c, std::move(v)); };
  put(Column::text("record", "record"), Cell::str(file_name(lr.path)));
  put(Column::text("model", "model"), Cell::str(r.scenario.model));
  put(Column::text("device", "device"), Cell::str(device_label(r)));
  put(Column::text("precision", "precision"), Cell::str(precision_label(r)));
  put(Column::count("batch_size", "batch"),
      r.scenario.batch_size ? Cell::num(static_cast<double>(*r.scenario.batch_size)) : Cell::none());
  put(Column::count("world_size", "GPUs"), Cell::num(static_cast<double>(r.distributed ? r.distributed->world_size : 1)));
  put(Column::text("mode", "train/inference"), Cell::str(r.scenario.mode));
  put(Column::text("execution_mode", "execution"), Cell::str(mode_label(r)));
  put(Column::text("status", "status"), Cell::str(to_string(r.status)));
}

std::vector<std::pair<std::string, std::string>> run_labels(const RunRecord& r) {
  const auto count = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string(); };
  return {{"model", r.scenario.model},
          {"mode", r.scenario.mode},
          {"precision", precision_label(r)},
          {"batch_size", count(r.scenario.batch_size)},
          {"world_size", std::to_string(r.distributed ? r.distributed->world_size : 1)},
          {"kernels", r.scenario.kernels},
          {"data", r.scenario.data},
          {"device", r.environment.device},
          {"device_model", device_label(r)},
          {"scenario_id", identity_id(scenario_identity(r))},
          {"host", r.environment.hostname},
          {"driver_version", nvidia_driver_of(r)},
          {"libtorch_version", r.environment.libtorch_version},
          {"gpubench_revision", r.environment.git_revision},
          {"start_time_utc", r.environment.start_time_utc},
          {"repeat", std::to_string(r.repeat_index)},
          {"status", to_string(r.status)}};
}

void add_gauges(Document& d, const std::vector<std::pair<std::string, std::string>>& labels, const Metrics& metrics) {
  for (const auto& m : metrics) {
    if (!std::isfinite(m.value)) continue;
    const std::string help = m.name + (m.unit.empty() ? std::string() : " (" + m.unit + ")");
    std::string family = "gpubench_" + openmetrics_name(m.tag);
    // Suffixes OpenMetrics keeps for counters, histograms and info metrics are not a gauge's.
    for (const char* reserved : {"_total", "_created", "_count", "_sum", "_bucket", "_gcount", "_gsum", "_info"}) {
      const std::string r(reserved);
      if (family.size() > r.size() && family.compare(family.size() - r.size(), r.size(), r) == 0) family += "_value";
    }
    d.gauges.push_back(Gauge{family, help, labels, m.value});
  }
}

void add_run_gauges(Document& d, const RunRecord& r) {
  const auto labels = run_labels(r);
  d.gauges.push_back(Gauge{"gpubench_run_ok", "1 when the run finished with status ok, else 0", labels,
                           r.status == RunStatus::kOk ? 1.0 : 0.0});
  add_gauges(d, labels, run_metrics(r));
}

/// The profile's headline, its time by category and its top kernels.
void add_profile(Document& d, const ProfileRecord& p) {
  std::string head = fmt::format("profile ({} steps, {}): device busy {:.2f} ms per step ({:.1f}% of the profiled "
                                 "{:.2f} ms",
                                 p.steps, p.source, p.busy_ms_per_step, p.busy_fraction * 100.0, p.wall_ms_per_step);
  if (p.busy_fraction_of_timed_step && p.timed_step_ms) {
    head += fmt::format(", {:.1f}% of the timed median {:.2f} ms", *p.busy_fraction_of_timed_step * 100.0,
                        *p.timed_step_ms);
  }
  head += fmt::format("), {:.0f} kernels per step", p.kernels_per_step);
  if (p.launch_api_ms_per_step > 0) head += fmt::format(", {:.2f} ms per step in launch calls", p.launch_api_ms_per_step);
  if (p.matrix_tflops) {
    head += fmt::format("; GEMM/conv/attention kernels at {:.3g} TFLOP/s", *p.matrix_tflops);
    if (p.matrix_peak_fraction) head += fmt::format(" ({:.0f}% of the dense peak)", *p.matrix_peak_fraction * 100.0);
    if (p.gemm_tflops && p.attention_tflops) {
      head += fmt::format(" (GEMM/conv {:.3g}, attention {:.3g})", *p.gemm_tflops, *p.attention_tflops);
    }
  }
  d.paragraph(head);
  Table c;
  c.id = "profile_categories";
  c.title = "Kernel time by category";
  const Column cat = Column::text("category", "category"), ms{"ms_per_step", "per step", "ms", Better::kLower},
               share{"fraction", "share", "fraction", Better::kNeither}, n{"kernels_per_step", "kernels/step", "", Better::kNeither};
  for (const auto& x : p.categories) {
    auto& row = c.add_row();
    c.put(row, cat, Cell::str(category_display_name(x.category)));
    c.put(row, ms, Cell::num(x.ms_per_step));
    c.put(row, share, Cell::num(x.fraction));
    c.put(row, n, Cell::num(x.kernels_per_step));
  }
  d.table(std::move(c));
  Table k;
  k.id = "profile_kernels";
  k.title = "Top kernels";
  const Column name = Column::text("kernel", "kernel"), kc = Column::text("category", "category"),
               calls{"calls_per_step", "calls/step", "", Better::kNeither},
               mean{"mean_us", "mean", "us", Better::kLower};
  for (const auto& x : p.top_kernels) {
    auto& row = k.add_row();
    k.put(row, name, Cell::str(x.name));
    k.put(row, kc, Cell::str(category_display_name(x.category)));
    k.put(row, calls, Cell::num(x.calls_per_step));
    k.put(row, ms, Cell::num(x.ms_per_step));
    k.put(row, share, Cell::num(x.fraction));
    k.put(row, mean, Cell::num(x.mean_us));
  }
  d.table(std::move(k));
  if (!p.idle_gaps.empty()) {
    Table g;
    g.id = "profile_idle_gaps";
    g.title = "Where the device waited: idle gaps by the kernels around them";
    const Column after = Column::text("after", "after"), before = Column::text("before", "before"),
                 count{"gaps_per_step", "gaps/step", "", Better::kNeither};
    for (const auto& x : p.idle_gaps) {
      auto& row = g.add_row();
      g.put(row, after, Cell::str(x.after));
      g.put(row, before, Cell::str(x.before));
      g.put(row, count, Cell::num(x.gaps_per_step));
      g.put(row, ms, Cell::num(x.ms_per_step));
    }
    d.table(std::move(g));
  }
  d.paragraph("profiled: " + p.when + (p.trace_path.empty() ? std::string() : "; trace: " + p.trace_path));
}
}  // namespace gpubench::views
