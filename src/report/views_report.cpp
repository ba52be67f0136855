// The report and export views: many records at once.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/analysis/scenario_groups.hpp"
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
      {"throughput.png", "Throughput per scenario: mean over runs with its 95 % interval, one panel per model and unit"},
      {"step_time.png", "Step-time distribution per scenario (every timed step of every run)"},
      {"epoch_time.png", "Epoch time over epochs (runs of several epochs)"},
      {"telemetry.png", "Power, SM clock and temperature over time"},
      {"batch_size.png", "Throughput against batch size"},
      {"compare.png", "Comparison: change with its 95 % interval and the verdict threshold"},
      {"profile.png", "Kernel time per step by category (runs with --profile), with each run's bottleneck verdict"},
      {"trend.png", "A metric over time, per scenario and GPU model, with software changes marked"}};
  return all;
}

std::string chart_title(const std::string& name) {
  for (const auto& [file, title] : charts()) {
    if (file == name) return title;
  }
  return name;
}

std::vector<const RunRecord*> records_of(const ReportInput& in) {
  std::vector<const RunRecord*> out;
  out.reserve(in.runs.size());
  for (const auto& lr : in.runs) out.push_back(&lr.record);
  return out;
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

/// "a" when every value is a; "a (12), b (3)" by count when they differ (at most four, then "and N more").
std::string values_summary(const std::vector<std::string>& values) {
  std::map<std::string, int> count;
  for (const auto& v : values) ++count[v.empty() ? "not recorded" : v];
  if (count.size() == 1) return count.begin()->first;
  std::vector<std::pair<std::string, int>> sorted(count.begin(), count.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < 4; ++i) {
    out += fmt::format("{}{} ({})", i ? ", " : "", sorted[i].first, sorted[i].second);
  }
  if (sorted.size() > 4) out += fmt::format(" and {} more", sorted.size() - 4);
  return out;
}

/// A scenario's label under its device's heading: without ", NVIDIA H200" (kept before any " [key=value]" suffix).
std::string short_label(const ScenarioGroup& g) {
  const std::string tail = ", " + g.device_model;
  const size_t at = g.label.find(tail);
  if (g.device_model.empty() || at == std::string::npos) return g.label;
  const size_t end = at + tail.size();
  if (end != g.label.size() && g.label.compare(end, 2, " [") != 0) return g.label;
  return g.label.substr(0, at) + g.label.substr(end);
}

/// "images" -> "image": what one sample is, for a header.
std::string singular(std::string unit) {
  if (unit.size() > 1 && unit.back() == 's') unit.pop_back();
  return unit;
}

std::string mode_title(const std::string& mode) {
  return mode == "inference" ? "Inference" : mode == "generate" ? "Generation" : "Training";
}

/// The date part of an ISO 8601 time ("2026-11-30").
std::string day_of(const std::string& iso) { return iso.substr(0, std::min<size_t>(10, iso.size())); }

/// The environment that matters for one device model's runs: one row per attribute.
Table environment_table(const std::string& device, const std::vector<const RunRecord*>& runs) {
  Table t;
  t.id = "environment";
  const Column what = Column::text("attribute", "environment"), value = Column::text("value", device);
  t.add_column(what);
  t.add_column(value);
  const auto row = [&](const std::string& name, const std::function<std::string(const RunRecord&)>& get) {
    std::vector<std::string> vs;
    for (const RunRecord* r : runs) vs.push_back(get(*r));
    t.rows.push_back({Cell::str(name), Cell::str(values_summary(vs))});
  };
  row("GPUs per run", [](const RunRecord& r) { return std::to_string(r.distributed ? r.distributed->world_size : 1); });
  row("NVIDIA driver", [](const RunRecord& r) { return nvidia_driver_of(r); });
  row("CUDA runtime", [](const RunRecord& r) { return r.environment.cuda_runtime_version; });
  row("cuDNN", [](const RunRecord& r) { return r.environment.cudnn_version; });
  row("LibTorch", [](const RunRecord& r) { return r.environment.libtorch_version; });
  row("power limit", [](const RunRecord& r) {
    return r.telemetry.power_limit_w ? fmt::format("{:.0f} W", *r.telemetry.power_limit_w) : std::string();
  });
  row("clocks locked", [](const RunRecord& r) {
    return !r.telemetry.clocks_locked ? std::string() : *r.telemetry.clocks_locked ? "yes" : "no";
  });
  row("host", [](const RunRecord& r) {
    std::string h = r.environment.hostname;
    if (!r.environment.cpu_model.empty()) h += (h.empty() ? "" : ", ") + r.environment.cpu_model;
    return h;
  });
  row("gpubench revision", [](const RunRecord& r) { return r.environment.git_revision; });
  std::vector<std::string> days;
  for (const RunRecord* r : runs) {
    if (!r->environment.start_time_utc.empty()) days.push_back(day_of(r->environment.start_time_utc));
  }
  std::sort(days.begin(), days.end());
  t.rows.push_back({Cell::str("dates (UTC)"),
                    Cell::str(days.empty() ? "not recorded"
                                           : days.front() == days.back() ? days.front() : days.front() + " to " + days.back())});
  t.rows.push_back({Cell::str("runs"), Cell::str(std::to_string(runs.size()))});
  return t;
}

/// The groups of one device model, by (mode, unit): each key one table (one unit per table).
using Section = std::pair<std::string, std::string>;  // mode, unit
std::vector<std::pair<Section, std::vector<const ScenarioGroup*>>> sections_of(const std::vector<ScenarioGroup>& groups,
                                                                                const std::string& device) {
  std::vector<std::pair<Section, std::vector<const ScenarioGroup*>>> out;
  for (const auto& g : groups) {
    if (g.device_model != device) continue;
    const Section key{g.mode, g.unit};
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.first == key; });
    if (it == out.end()) {
      out.push_back({key, {}});
      it = std::prev(out.end());
    }
    it->second.push_back(&g);
  }
  return out;
}

/// The key figures of each scenario: repeats collapsed to their mean with a 95 % interval and n.
Table headline_table(const Section& section, const std::vector<const ScenarioGroup*>& groups,
                     const std::vector<const RunRecord*>& runs) {
  const std::string& unit = section.second;
  Table t;
  t.id = "headline";
  t.title = mode_title(section.first) + ", throughput in " + unit + ":";
  const Column scenario = Column::text("scenario", "scenario"), n = Column::text("runs", "runs"),
               mean{"samples_per_s_mean", "throughput", unit, Better::kHigher},
               ci{"samples_per_s_ci95", "± 95 %", unit, Better::kNeither},
               p50{"step_time_median_ms", "step p50", "ms", Better::kLower},
               p95{"step_time_p95_ms", "step p95", "ms", Better::kLower},
               jps{"joules_per_sample", "energy per " + singular(unit.substr(0, unit.find('/'))), "J", Better::kLower},
               mfu{"mfu", "MFU", "fraction", Better::kHigher},
               peak{"peak_reserved_bytes", "peak memory", "bytes", Better::kLower},
               verdict = Column::text("bounded_by", "bounded by");
  for (const Column& c : {scenario, n, mean, ci, p50, p95, jps, mfu, peak, verdict}) t.add_column(c);
  const auto opt = [](const std::optional<double>& v) { return v ? Cell::num(*v) : Cell::none(); };
  bool failed = false;
  for (const ScenarioGroup* g : groups) {
    std::string count = std::to_string(g->ok_runs.size());
    if (g->ok_runs.size() != g->runs.size()) {
      std::vector<std::string> statuses;
      for (size_t i : g->runs) {
        if (runs[i]->status != RunStatus::kOk) statuses.push_back(to_string(runs[i]->status));
      }
      count += " (+" + std::to_string(g->runs.size() - g->ok_runs.size()) + " " + values_summary(statuses) + ")";
      failed = true;
    }
    const bool any = g->throughput.n > 0;
    t.rows.push_back({Cell::str(short_label(*g)), Cell::str(count), any ? Cell::num(g->throughput.mean) : Cell::none(),
                      opt(g->throughput.half_width_95), opt(g->step_p50_ms), opt(g->step_p95_ms),
                      opt(g->joules_per_sample), opt(g->mfu),
                      g->peak_reserved_bytes ? Cell::num(static_cast<double>(*g->peak_reserved_bytes)) : Cell::none(),
                      Cell::str(g->bounded_by.empty() ? "-" : g->bounded_by)});
  }
  t.notes.push_back("one row per scenario identity (as compare pairs runs); throughput is the mean over its ok runs "
                    "± the half-width of a Student t 95 % interval (none from one run); step times, energy and MFU are "
                    "means over runs, peak memory (reserved) the largest");
  if (failed) t.notes.push_back("runs: ok runs, then those that ended otherwise (oom, nan, interrupted, failed)");
  return t;
}

/// Spread over repeats (min, max, coefficient of variation) of the scenarios run more than once, folded.
std::optional<Table> spread_table(const std::string& unit, const std::vector<const ScenarioGroup*>& groups) {
  Table t;
  t.id = "repeats";
  t.details = "Spread over repeats (" + unit + ")";
  for (const Column& c : {Column::text("scenario", "scenario"), Column::count("runs", "runs"),
                          Column{"mean", "mean", unit, Better::kHigher}, Column{"min", "min", unit, Better::kHigher},
                          Column{"max", "max", unit, Better::kHigher},
                          Column{"cv_pct", "coefficient of variation", "%", Better::kLower}}) {
    t.add_column(c);
  }
  for (const ScenarioGroup* g : groups) {
    if (g->throughput.n < 2) continue;
    t.rows.push_back({Cell::str(short_label(*g)), Cell::num(static_cast<double>(g->throughput.n)), Cell::num(g->throughput.mean),
                      Cell::num(g->throughput.min), Cell::num(g->throughput.max), Cell::num(g->throughput.cv_pct)});
  }
  if (t.rows.empty()) return std::nullopt;
  return t;
}

/// Every run of one section: the headline columns, then the rest of each record's metrics folded in two tables.
void add_run_tables(Document& d, const std::string& device, const Section& section,
                    const std::vector<const ScenarioGroup*>& groups, const ReportInput& in) {
  Table main;
  main.id = "runs";
  std::string mode = mode_title(section.first);
  mode[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(mode[0])));
  main.title = device + ", " + mode + " (" + section.second + "):";
  const Column record = Column::text("record", "record");
  Table timing, power, other;
  other.id = "runs_other";
  other.details = "Every other figure of these runs";
  for (const Column& c : {record, Column::text("figure", "figure"), Column::text("value", "value"), Column::text("tag", "tag")}) {
    other.add_column(c);
  }
  timing.id = "runs_timing";
  timing.details = "Step times, compute and memory of these runs";
  power.id = "runs_power";
  power.details = "Energy, power, clocks and drift of these runs";
  static const std::vector<std::string> timing_tags{
      "steps_per_s", "step_time_mean_ms", "step_time_p5_ms", "step_time_max_ms", "step_time_stdev_ms",
      "achieved_tflops", "mfu", "peak_allocated_bytes", "warmup_seconds"};
  static const std::vector<std::string> power_tags{
      "energy_j", "joules_per_sample", "power_avg_w", "power_peak_w", "sm_clock_avg_mhz", "temperature_peak_c",
      "gpu_util_avg_pct", "throttle_fraction", "throughput_drift_pct", "sm_clock_drift_pct", "temperature_drift_c"};
  for (const Column& c : {Column::text("scenario", "scenario"), record, Column::text("status", "status")}) main.add_column(c);
  const std::vector<Column> headline{{kThroughputTag, "throughput", section.second, Better::kHigher},
                                     {"epoch_seconds", "epoch time", "s", Better::kLower},
                                     {"step_time_median_ms", "step p50", "ms", Better::kLower},
                                     {"step_time_p95_ms", "step p95", "ms", Better::kLower},
                                     {"peak_reserved_bytes", "peak reserved", "bytes", Better::kLower}};
  for (const Column& c : headline) main.add_column(c);
  for (const ScenarioGroup* g : groups) {
    for (size_t i : g->runs) {
      const LoadedRecord& lr = in.runs[i];
      const RunRecord& r = lr.record;
      const bool ok = r.status == RunStatus::kOk;
      const Metrics ms = run_metrics(r);
      auto& row = main.add_row();
      main.put(row, Column::text("scenario", "scenario"), Cell::str(short_label(*g)));
      main.put(row, record, Cell::str(file_name(lr.path)));
      main.put(row, Column::text("status", "status"),
               Cell::str(to_string(r.status) + (r.reason.empty() || ok ? "" : ": " + r.reason)));
      for (size_t k = 0; k < headline.size(); ++k) {
        const Metric* m = find_metric(ms, headline[k].key);
        if (m && (ok || m->unit == "bytes")) main.put(row, headline[k], Cell::num(m->value));  // failed: no rates
      }
      const auto fill = [&](Table& t, const std::vector<std::string>& tags) {
        auto& x = t.add_row();
        t.put(x, record, Cell::str(file_name(lr.path)));
        for (const auto& tag : tags) {
          if (const Metric* m = find_metric(ms, tag); m && (ok || m->unit == "bytes")) put_metric(t, x, *m);
        }
      };
      fill(timing, timing_tags);
      fill(power, power_tags);
      // Every other figure (a pipeline's, generation's, a profile's): one row each, so any number of them fits.
      for (const auto& m : ms) {
        if (is_standard_metric(m.tag) || !ok) continue;
        other.rows.push_back({Cell::str(file_name(lr.path)), Cell::str(m.name), Cell::str(format_value(m.value, m.unit)),
                              Cell::str(m.tag)});
      }
      d.cases.push_back(TestCase{file_name(lr.path), ok ? TestCase::Outcome::kPass : TestCase::Outcome::kFail,
                                 to_string(r.status) + (r.reason.empty() ? "" : ": " + r.reason)});
    }
  }
  for (Table* t : {&main, &timing, &power}) {
    for (auto& row : t->rows) row.resize(t->columns.size());
  }
  d.table(std::move(main));
  if (timing.columns.size() > 1) d.table(std::move(timing));
  if (power.columns.size() > 1) d.table(std::move(power));
  if (!other.rows.empty()) d.table(std::move(other));
}

/// Each run's verdict (those that have one), and the kernel time per step by category of the profiled runs.
void add_bottlenecks(Document& d, const ReportInput& in, const std::vector<std::string>& labels, bool profile_chart) {
  Table t;
  t.id = "bottlenecks";
  const Column scenario = Column::text("scenario", "scenario"), record = Column::text("record", "record"),
               verdict = Column::text("bounded_by", "bounded by"), shares = Column::text("shares", "shares of the step"),
               evidence = Column::text("evidence", "evidence");
  for (const Column& c : {scenario, record, verdict, shares, evidence}) t.add_column(c);
  size_t without = 0;
  Table prof;
  prof.id = "profile_categories";
  prof.title = "Kernel time per step by category, in the profiled steps (ms):";
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const RunRecord& r = in.runs[i].record;
    const BottleneckVerdict v = diagnose_bottleneck(r);  // from the record as read: old records get today's answer
    if (v.bounded_by.empty()) {
      ++without;
    } else {
      std::string ev = v.verdict_factor()->evidence;
      if (!v.tied.empty()) ev += " (tied within the run's noise with " + v.tied.front() + ")";
      for (const auto& x : v.disagreements) ev += "; profile and telemetry disagree: " + x;
      t.rows.push_back({Cell::str(labels[i]), Cell::str(file_name(in.runs[i].path)), Cell::str(v.bounded_by),
                        Cell::str(format_top_factors(v.factors)), Cell::str(ev)});
    }
    if (!r.profile) continue;
    auto& row = prof.add_row();
    prof.put(row, scenario, Cell::str(labels[i]));
    prof.put(row, Column{"device_busy_fraction", "busy", "fraction", Better::kHigher},
             Cell::num(r.profile->busy_fraction_of_timed_step.value_or(r.profile->busy_fraction)));
    for (const auto& c : r.profile->categories) {
      prof.put(row, Column{"ms_" + c.category, category_display_name(c.category), "ms", Better::kLower},
               Cell::num(c.ms_per_step));
    }
  }
  if (t.rows.empty() && prof.rows.empty()) return;
  d.heading("Bottlenecks", 2);
  if (!t.rows.empty()) {
    t.notes.push_back("each factor's share of the timed step, decided from the record as it is read (records "
                      "written before the attribution included); docs/bottleneck.md explains the estimates");
    if (without > 0) {
      t.notes.push_back(fmt::format("{} other run(s) hold too little evidence for a verdict (failed, or no "
                                    "telemetry and no --profile)", without));
    }
    d.table(std::move(t));
  }
  if (!prof.rows.empty()) {
    for (auto& row : prof.rows) row.resize(prof.columns.size());
    if (profile_chart) prof.notes.push_back("the chart \"Kernel time per step by category\" below draws them");
    d.table(std::move(prof));
  }
}

/// Each run's scenario label (distinct across the report), by index.
std::vector<std::string> run_labels(const std::vector<ScenarioGroup>& groups, size_t runs) {
  std::vector<std::string> out(runs);
  for (const auto& g : groups) {
    for (size_t i : g.runs) out[i] = g.label;
  }
  return out;
}

}  // namespace

Document report_document(const ReportInput& in) {
  Document d;
  d.kind = "report";
  d.title = in.title;
  d.heading(in.title, 1);
  const std::vector<const RunRecord*> records = records_of(in);
  const std::vector<ScenarioGroup> groups = group_by_scenario(records);
  std::vector<std::string> devices, days;
  size_t ok = 0;
  for (const RunRecord* r : records) {
    ok += r->status == RunStatus::kOk ? 1 : 0;
    if (!r->environment.start_time_utc.empty()) days.push_back(day_of(r->environment.start_time_utc));
  }
  std::map<std::string, size_t> runs_on;  // the device most runs are from leads the headline, then first seen
  for (const auto& g : groups) {
    if (std::find(devices.begin(), devices.end(), g.device_model) == devices.end()) devices.push_back(g.device_model);
    runs_on[g.device_model] += g.runs.size();
  }
  std::stable_sort(devices.begin(), devices.end(),
                   [&runs_on](const std::string& a, const std::string& b) { return runs_on[a] > runs_on[b]; });
  std::sort(days.begin(), days.end());
  d.paragraph(fmt::format("{} run record(s) ({} ok), {} scenario(s), on {}{}.", in.runs.size(), ok, groups.size(),
                          fmt::join(devices, ", "),
                          days.empty() ? "" : ", " + (days.front() == days.back() ? days.front()
                                                                                  : days.front() + " to " + days.back())));
  d.heading("Headline", 2);
  for (const auto& device : devices) {
    std::vector<const RunRecord*> mine;
    for (const auto& g : groups) {
      if (g.device_model != device) continue;
      for (size_t i : g.runs) mine.push_back(records[i]);
    }
    d.heading(device, 3);
    d.table(environment_table(device, mine));
    for (const auto& [section, members] : sections_of(groups, device)) {
      d.table(headline_table(section, members, records));
      if (auto spread = spread_table(section.second, members)) d.table(std::move(*spread));
    }
  }
  d.heading("Runs", 2);
  d.paragraph("Every run, grouped by scenario as in the headline; more of each record's figures are one click away.");
  for (const auto& device : devices) {
    for (const auto& [section, members] : sections_of(groups, device)) add_run_tables(d, device, section, members, in);
  }
  const bool profile_chart = std::find(in.charts.begin(), in.charts.end(), "profile.png") != in.charts.end();
  add_bottlenecks(d, in, run_labels(groups, in.runs.size()), profile_chart);
  const auto sweeps = sweep_groups(in);
  if (!sweeps.empty()) {
    d.heading("Throughput against batch size", 2);
    for (const auto& g : sweeps) {
      const RunRecord& f = *g.front();
      Table t;
      t.id = "batch_sizes";
      t.title = fmt::format("{} {} {} on {}:", f.scenario.model, precision_label(f), f.scenario.mode, device_label(f));
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
  d.heading("Charts", 2);
  if (in.charts.empty()) d.paragraph("No charts: " + (in.chart_note.empty() ? std::string("nothing to plot") : in.chart_note));
  for (const auto& c : in.charts) {
    const auto it = in.chart_labels.find(c);
    d.image(c, chart_title(c), it == in.chart_labels.end() ? std::vector<std::string>{} : it->second);
  }
  return d;
}

nlohmann::json report_chart_groups(const ReportInput& in) {
  const auto path_of = [&](const RunRecord* r) {
    for (const auto& lr : in.runs) {
      if (&lr.record == r) return lr.path;
    }
    return std::string();
  };
  nlohmann::json sweeps = nlohmann::json::array();
  for (const auto& group : sweep_groups(in)) {
    nlohmann::json paths = nlohmann::json::array();
    for (const RunRecord* r : group) paths.push_back(path_of(r));
    sweeps.push_back(std::move(paths));
  }
  nlohmann::json scenarios = nlohmann::json::array();
  const std::vector<const RunRecord*> records = records_of(in);
  for (const auto& g : group_by_scenario(records)) {
    nlohmann::json paths = nlohmann::json::array(), ok = nlohmann::json::array(), values = nlohmann::json::array();
    for (size_t i : g.runs) paths.push_back(in.runs[i].path);
    for (size_t i : g.ok_runs) {
      ok.push_back(in.runs[i].path);
      values.push_back(records[i]->summary.samples_per_s);
    }
    nlohmann::json s{{"id", g.id},       {"label", g.label},   {"model", g.model},   {"mode", g.mode},
                     {"device_model", g.device_model},          {"unit", g.unit},     {"n", g.throughput.n},
                     {"mean", g.throughput.mean},               {"values", values},   {"paths", paths},
                     {"ok_paths", ok},   {"epochs_max", g.epochs_max.value_or(0)}};
    s["half_width_95"] = g.throughput.half_width_95 ? nlohmann::json(*g.throughput.half_width_95) : nlohmann::json();
    scenarios.push_back(std::move(s));
  }
  return {{"sweeps", sweeps}, {"scenarios", scenarios}};
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
  // One label per scenario, distinct among the exported ones (the keys in which same-looking scenarios differ).
  std::vector<nlohmann::json> identities;
  for (const auto& lr : records) identities.push_back(scenario_identity(lr.record));
  const std::vector<std::string> labels = scenario_labels(identities);
  auto identity = [&t, &identities, &labels, &records](std::vector<Cell>& row, const LoadedRecord& lr) {
    const RunRecord& r = lr.record;
    const size_t index = static_cast<size_t>(&lr - records.data());
    put_identity(t, row, lr);
    const auto put = [&](const Column& c, Cell v) { t.put(row, c, std::move(v)); };
    put(Column::text("path", "path"), Cell::str(lr.path));
    // What a notebook groups by (docs/cli.md lists them): one id per scenario identity, as compare pairs runs.
    put(Column::text("scenario_id", "scenario id"), Cell::str(identity_id(identities[index])));
    put(Column::text("scenario", "scenario"), Cell::str(labels[index]));
    put(Column::text("precision_requested", "precision asked"), Cell::str(r.scenario.precision));
    put(Column::text("kernels", "kernels"), Cell::str(r.scenario.kernels));
    put(Column::text("throughput_unit", "throughput unit"), Cell::str(throughput_unit(r)));
    put(Column::text("data", "data"), Cell::str(r.scenario.data));
    put(Column::text("decode", "decode"), Cell::str(r.data ? r.data->decode : std::string()));
    put(Column::text("data_only", "data only"), Cell::flag(r.scenario.data_only));
    put(Column::count("dataset_size", "dataset size"), Cell::num(static_cast<double>(r.scenario.dataset_size)));
    const auto opt_count = [](const std::optional<int64_t>& v) {
      return v ? Cell::num(static_cast<double>(*v)) : Cell::none();
    };
    put(Column::count("prompt_tokens", "prompt tokens"), opt_count(r.scenario.prompt_tokens));  // mode: generate
    put(Column::count("new_tokens", "new tokens"), opt_count(r.scenario.new_tokens));
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
        Cell::flag(r.telemetry.clocks_locked));
    put(Column::text("git_revision", "gpubench revision"), Cell::str(r.environment.git_revision));
  };
  for (const auto& lr : records) {
    if (per == ExportPer::kRun) {
      auto& row = t.add_row();
      identity(row, lr);
      for (const auto& m : run_metrics(lr.record)) put_metric(t, row, m);
      add_run_gauges(d, lr.record);
      // The attribution, decided from the record as read (old records and stores included): the verdict and every
      // factor's share, one column per factor so that a notebook's columns do not depend on the runs exported.
      const BottleneckVerdict v = diagnose_bottleneck(lr.record);
      t.put(row, Column::text("bounded_by", "bounded by"), Cell::str(v.bounded_by));
      for (const auto& name : bottleneck_factor_names()) {
        t.put(row, Column{"share_" + name, name + " share", "fraction", Better::kNeither},
              v.bounded_by.empty() ? Cell::none() : Cell::num(factor_share(v.factors, name)));
      }
      continue;
    }
    for (const auto& e : lr.record.epochs) {
      auto& row = t.add_row();
      identity(row, lr);
      const auto put = [&](const Column& c, Cell v) { t.put(row, c, std::move(v)); };
      put(Column::count("epoch", "epoch"), Cell::num(static_cast<double>(e.index)));
      put(Column::text("complete", "complete"), Cell::flag(e.complete));
      put(Column::count("steps", "steps"), Cell::num(static_cast<double>(e.steps)));
      put(Column::count("samples", "samples"), Cell::num(static_cast<double>(e.samples)));
      for (const auto& m : epoch_metrics(lr.record, e)) put_metric(t, row, m);
      auto labels = run_labels(lr.record);
      labels.emplace_back("epoch", std::to_string(e.index));
      add_gauges(d, labels, epoch_metrics(lr.record, e));
    }
  }
  for (auto& row : t.rows) row.resize(t.columns.size());
  d.table(std::move(t));
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// sweep and scaling

}  // namespace gpubench
