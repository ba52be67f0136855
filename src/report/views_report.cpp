// The report and export views: many records at once.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/report/views.hpp"
#include "report/view_helpers.h"

namespace gpubench {

using namespace views;  // NOLINT(google-build-using-namespace): the views' shared helpers

namespace {

/// Each chart file with its title, in display order.
const std::vector<std::pair<std::string, std::string>>& charts() {
  static const std::vector<std::pair<std::string, std::string>> all{
      {"throughput.png", "Throughput per run"},
      {"epoch_time.png", "Epoch time"},
      {"telemetry.png", "Power, SM clock and temperature"},
      {"batch_size.png", "Throughput against batch size"},
      {"compare.png", "Comparison with 95 % intervals"},
      {"profile.png", "Kernel time per step by category (runs with --profile), with each run's bottleneck verdict"},
      {"trend.png", "A metric over time, per scenario and GPU model"}};
  return all;
}

std::string chart_title(const std::string& name) {
  for (const auto& [file, title] : charts()) {
    if (file == name) return title;
  }
  return name;
}

/// Runs whose scenario identity differs only in batch size (and so dataset size), grouped, each sorted by batch.
std::vector<std::vector<const RunRecord*>> sweep_groups(const ReportInput& in) {
  std::map<std::string, std::vector<const RunRecord*>> groups;
  for (const auto& lr : in.runs) {
    if (lr.record.status != RunStatus::kOk && lr.record.status != RunStatus::kOom) continue;
    const nlohmann::json key = without_keys(scenario_identity(lr.record), {"batch_size", "dataset_size"});
    groups[key.dump()].push_back(&lr.record);
  }
  std::vector<std::vector<const RunRecord*>> out;
  for (auto& [k, g] : groups) {
    std::sort(g.begin(), g.end(), [](const RunRecord* a, const RunRecord* b) {
      return a->scenario.batch_size.value_or(0) < b->scenario.batch_size.value_or(0);
    });
    if (g.size() > 1 && g.front()->scenario.batch_size != g.back()->scenario.batch_size) out.push_back(g);
  }
  return out;
}

/// Runs of one scenario identity (repeats: same work, world size, execution, data path and GPU model): their spread.
struct RepeatGroup {
  std::string label, unit;
  std::vector<double> rates;
};

std::vector<RepeatGroup> repeat_groups(const ReportInput& in) {
  std::map<std::string, RepeatGroup> groups;
  for (const auto& lr : in.runs) {
    const RunRecord& r = lr.record;
    if (r.status != RunStatus::kOk || r.summary.samples_per_s <= 0) continue;
    RepeatGroup& g = groups[scenario_identity(r).dump()];
    g.label = identity_label(r);
    g.unit = throughput_unit(r);
    g.rates.push_back(r.summary.samples_per_s);
  }
  std::vector<RepeatGroup> out;
  for (auto& [k, g] : groups) {
    if (g.rates.size() > 1) out.push_back(g);
  }
  return out;
}

/// Each run's verdict, and for profiled runs their kernel time per step by category (the chart is profile.png).
void add_bottlenecks(Document& d, const ReportInput& in) {
  // Records written before the verdict needed no profile carry none: theirs is decided here from what they hold.
  std::vector<BottleneckVerdict> verdicts;
  bool derived = false;
  for (const auto& lr : in.runs) {
    const RunSummary& s = lr.record.summary;
    if (s.bounded_by.empty() && s.bottleneck_evidence.empty()) {
      verdicts.push_back(diagnose_bottleneck(lr.record));
      derived = derived || !verdicts.back().bounded_by.empty();
    } else {
      verdicts.push_back({s.bounded_by, s.bottleneck_evidence});
    }
  }
  const bool any = std::any_of(verdicts.begin(), verdicts.end(), [](const BottleneckVerdict& v) { return !v.bounded_by.empty(); }) ||
                   std::any_of(in.runs.begin(), in.runs.end(), [](const LoadedRecord& lr) { return lr.record.profile.has_value(); });
  if (!any) return;
  d.heading("Bottlenecks", 2);
  Table t;
  t.id = "bottlenecks";
  const Column verdict = Column::text("bounded_by", "bounded by"), busy{"device_busy_fraction", "busy", "fraction",
                                                                          Better::kHigher},
               evidence = Column::text("evidence", "evidence");
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const LoadedRecord& lr = in.runs[i];
    const RunRecord& r = lr.record;
    auto& row = t.add_row();
    put_identity(t, row, lr);
    t.put(row, verdict, Cell::str(verdicts[i].bounded_by.empty() ? "-" : verdicts[i].bounded_by));
    if (r.profile) {
      t.put(row, busy, Cell::num(r.profile->busy_fraction_of_timed_step.value_or(r.profile->busy_fraction)));
      for (const auto& c : r.profile->categories) {
        t.put(row, Column{"ms_" + c.category, category_display_name(c.category), "ms", Better::kLower},
              Cell::num(c.ms_per_step));
      }
    }
  }
  // The evidence last (it is the widest column): a second pass, once every category has its column.
  for (size_t i = 0; i < in.runs.size(); ++i) t.put(t.rows[i], evidence, Cell::str(verdicts[i].evidence));
  if (derived) t.notes.push_back("verdicts of records that carry none are decided from the record as it is read");
  for (auto& row : t.rows) row.resize(t.columns.size());
  if (std::any_of(in.runs.begin(), in.runs.end(), [](const LoadedRecord& lr) { return lr.record.profile.has_value(); })) {
    t.notes.push_back("category columns: kernel time per step (ms) in the profiled steps; the chart below draws them");
  }
  d.table(std::move(t));
}

}  // namespace

Document report_document(const ReportInput& in) {
  Document d;
  d.kind = "report";
  d.title = in.title;
  d.heading(in.title, 1);
  d.paragraph(fmt::format("{} run record(s).", in.runs.size()));
  d.heading("Runs", 2);
  Table runs;
  runs.id = "runs";
  const std::vector<std::string> shown{kThroughputTag,       "epoch_seconds", "step_time_median_ms", "step_time_p95_ms",
                                       "peak_reserved_bytes", "power_avg_w",   "joules_per_sample",   "mfu"};
  for (const auto& lr : in.runs) {
    auto& row = runs.add_row();
    put_identity(runs, row, lr);
    const bool ok = lr.record.status == RunStatus::kOk;
    for (const auto& m : pick(run_metrics(lr.record), shown)) {
      if (ok || m.unit == "bytes") put_metric(runs, row, m);  // a failed run's rates and times mean nothing
    }
    d.cases.push_back(TestCase{file_name(lr.path), ok ? TestCase::Outcome::kPass : TestCase::Outcome::kFail,
                               to_string(lr.record.status) + (lr.record.reason.empty() ? "" : ": " + lr.record.reason)});
  }
  for (auto& row : runs.rows) row.resize(runs.columns.size());
  d.table(std::move(runs));
  add_bottlenecks(d, in);
  const auto sweeps = sweep_groups(in);
  if (!sweeps.empty()) {
    d.heading("Throughput against batch size", 2);
    for (const auto& g : sweeps) {
      const RunRecord& f = *g.front();
      Table t;
      t.id = "batch_sizes";
      t.title = fmt::format("{} {} on {}:", f.scenario.model, f.precision.resolved, f.environment.device_name);
      t.add_column(Column::count("batch_size", "batch"));
      t.add_column(Column::text("status", "status"));
      t.add_column(Column{kThroughputTag, "throughput", throughput_unit(f), Better::kHigher});
      t.add_column(Column{"peak_reserved_bytes", "peak reserved", "bytes", Better::kLower});
      for (const RunRecord* r : g) {
        t.rows.push_back({Cell::num(static_cast<double>(r->scenario.batch_size.value_or(0))), Cell::str(to_string(r->status)),
                          r->status == RunStatus::kOk ? Cell::num(r->summary.samples_per_s) : Cell::none(),
                          r->summary.peak_reserved_bytes ? Cell::num(static_cast<double>(*r->summary.peak_reserved_bytes))
                                                         : Cell::none()});
      }
      d.table(std::move(t));
    }
  }
  const auto repeats = repeat_groups(in);
  if (!repeats.empty()) {
    // One table per throughput unit (images/s and sequences/s never share a column), each scenario identity a row:
    // repeats collapse to their mean with a Student t 95 % interval over runs, n, and the spread.
    d.heading("Repeats", 2);
    std::map<std::string, std::vector<const RepeatGroup*>> by_unit;
    for (const auto& g : repeats) by_unit[g.unit].push_back(&g);
    for (auto& [unit, groups] : by_unit) {
      std::sort(groups.begin(), groups.end(),
                [](const RepeatGroup* a, const RepeatGroup* b) { return a->label < b->label; });
      Table t;
      t.id = "repeats";
      if (by_unit.size() > 1) t.title = "Throughput in " + unit + ":";
      t.add_column(Column::text("scenario", "scenario"));
      t.add_column(Column::count("runs", "runs"));
      t.add_column(Column{"mean", "mean", unit, Better::kHigher});
      t.add_column(Column{"ci95_low", "95% interval, low", unit, Better::kHigher});
      t.add_column(Column{"ci95_high", "95% interval, high", unit, Better::kHigher});
      t.add_column(Column{"min", "min", unit, Better::kHigher});
      t.add_column(Column{"max", "max", unit, Better::kHigher});
      t.add_column(Column{"cv_pct", "coefficient of variation", "%", Better::kLower});
      for (const RepeatGroup* g : groups) {
        const StepTimeStats st = summarize_step_times(g->rates);  // the step-time statistics, applied to samples/s
        const auto n = static_cast<double>(g->rates.size());
        const double half = student_t_quantile(0.95, n - 1) * st.stdev_ms / std::sqrt(n);
        t.rows.push_back({Cell::str(g->label), Cell::num(n), Cell::num(st.mean_ms), Cell::num(st.mean_ms - half),
                          Cell::num(st.mean_ms + half), Cell::num(st.min_ms), Cell::num(st.max_ms),
                          Cell::num(st.mean_ms > 0 ? st.stdev_ms / st.mean_ms * 100.0 : 0.0)});
      }
      t.notes.push_back("each row is one scenario identity (as compare pairs runs: training and inference, data "
                        "pipelines and GPU counts apart); the interval is over the runs' throughputs");
      d.table(std::move(t));
    }
  }
  d.heading("Charts", 2);
  if (in.charts.empty()) d.paragraph("No charts: " + (in.chart_note.empty() ? std::string("nothing to plot") : in.chart_note));
  for (const auto& c : in.charts) d.image(c, chart_title(c));
  return d;
}

nlohmann::json report_chart_groups(const ReportInput& in) {
  nlohmann::json sweeps = nlohmann::json::array();
  for (const auto& group : sweep_groups(in)) {
    nlohmann::json paths = nlohmann::json::array();
    for (const RunRecord* r : group) {
      for (const auto& lr : in.runs) {
        if (&lr.record == r) paths.push_back(lr.path);
      }
    }
    sweeps.push_back(std::move(paths));
  }
  return {{"sweeps", sweeps}};
}

const std::vector<std::string>& report_chart_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out;
    for (const auto& c : charts()) out.push_back(c.first);
    return out;
  }();
  return files;
}

// ---------------------------------------------------------------------------------------------------------------
// export

Document export_document(const std::vector<LoadedRecord>& records, ExportPer per) {
  Document d;
  d.kind = "export";
  d.title = per == ExportPer::kEpoch ? "gpubench epochs" : "gpubench runs";
  Table t;
  t.id = per == ExportPer::kEpoch ? "epochs" : "runs";
  auto identity = [&t](std::vector<Cell>& row, const LoadedRecord& lr) {
    const RunRecord& r = lr.record;
    put_identity(t, row, lr);
    const auto put = [&](const Column& c, Cell v) { t.put(row, c, std::move(v)); };
    put(Column::text("path", "path"), Cell::str(lr.path));
    // What a notebook groups by (docs/cli.md lists them): one id per scenario identity, as compare pairs runs.
    const nlohmann::json id = scenario_identity(r);
    put(Column::text("scenario_id", "scenario id"), Cell::str(identity_id(id)));
    put(Column::text("scenario", "scenario"), Cell::str(identity_label(r)));
    put(Column::text("precision_requested", "precision asked"), Cell::str(r.scenario.precision));
    put(Column::text("kernels", "kernels"), Cell::str(r.scenario.kernels));
    put(Column::text("throughput_unit", "throughput unit"), Cell::str(throughput_unit(r)));
    put(Column::text("data", "data"), Cell::str(r.scenario.data));
    put(Column::text("decode", "decode"), Cell::str(r.data ? r.data->decode : std::string()));
    put(Column::text("data_only", "data only"), Cell::str(r.scenario.data_only ? "true" : "false"));
    put(Column::count("dataset_size", "dataset size"), Cell::num(static_cast<double>(r.scenario.dataset_size)));
    put(Column::text("device_type", "device type"), Cell::str(r.environment.device_type));
    put(Column::text("device_model", "device model"), Cell::str(r.environment.device_name));
    put(Column::count("grad_accumulation", "gradient accumulation"), Cell::num(static_cast<double>(r.scenario.grad_accumulation)));
    put(Column::count("repeat_index", "repeat"), Cell::num(static_cast<double>(r.repeat_index)));
    put(Column::text("start_time_utc", "start (UTC)"), Cell::str(r.environment.start_time_utc));
    put(Column::text("driver_version", "driver"), Cell::str(nvidia_driver_of(r)));
    put(Column::text("cuda_runtime_version", "CUDA runtime"), Cell::str(r.environment.cuda_runtime_version));
    put(Column::text("cudnn_version", "cuDNN"), Cell::str(r.environment.cudnn_version));
    put(Column::text("libtorch_version", "LibTorch"), Cell::str(r.environment.libtorch_version));
    put(Column{"power_limit_w", "power limit", "W", Better::kNeither},
        r.telemetry.power_limit_w ? Cell::num(*r.telemetry.power_limit_w) : Cell::none());
    put(Column::text("clocks_locked", "clocks locked"),
        Cell::str(!r.telemetry.clocks_locked ? "" : *r.telemetry.clocks_locked ? "true" : "false"));
    put(Column::text("git_revision", "gpubench revision"), Cell::str(r.environment.git_revision));
  };
  for (const auto& lr : records) {
    if (per == ExportPer::kRun) {
      auto& row = t.add_row();
      identity(row, lr);
      for (const auto& m : run_metrics(lr.record)) put_metric(t, row, m);
      continue;
    }
    for (const auto& e : lr.record.epochs) {
      auto& row = t.add_row();
      identity(row, lr);
      const auto put = [&](const Column& c, Cell v) { t.put(row, c, std::move(v)); };
      put(Column::count("epoch", "epoch"), Cell::num(static_cast<double>(e.index)));
      put(Column::text("complete", "complete"), Cell::str(e.complete ? "true" : "false"));
      put(Column::count("steps", "steps"), Cell::num(static_cast<double>(e.steps)));
      put(Column::count("samples", "samples"), Cell::num(static_cast<double>(e.samples)));
      for (const auto& m : epoch_metrics(lr.record, e)) put_metric(t, row, m);
    }
  }
  for (auto& row : t.rows) row.resize(t.columns.size());
  d.table(std::move(t));
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// sweep and scaling

}  // namespace gpubench
