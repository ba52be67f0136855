// The views (views.hpp): each command's Document. Layout lives here once; formats live in printers.cpp.

#include "gpubench/report/views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpubench/core/stats.hpp"

namespace gpubench {

namespace {

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
  put(Column::text("execution_mode", "mode"), Cell::str(mode_label(r)));
  put(Column::text("status", "status"), Cell::str(to_string(r.status)));
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
  d.paragraph("profiled: " + p.when + (p.trace_path.empty() ? std::string() : "; trace: " + p.trace_path));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// run

Document run_summary_document(const RunRecord& r) {
  const Scenario& s = r.scenario;
  const std::string unit = sample_unit(r);
  Document d;
  d.kind = "run";
  d.title = (r.model.name.empty() ? s.model : r.model.name) + " on " +
            (r.environment.device.empty() ? s.device : r.environment.device);
  d.paragraph(fmt::format("{} ({}), {} [{}], {}, batch {}, {}", d.title, r.environment.device_name, precision_label(r),
                          r.precision.requested.empty() ? s.precision : r.precision.requested, s.memory_format,
                          s.batch_size ? std::to_string(*s.batch_size) : "?",
                          s.mode == "inference" ? std::string("inference") : s.optimizer.name));
  if (s.mode == "inference") {
    d.paragraph(fmt::format("inference, {}{}: {}", r.execution.mode == "cuda_graph" ? "CUDA graph" : "eager",
                            r.execution.graph_fallback.empty() ? "" : " (graph not used: " + r.execution.graph_fallback + ")",
                            r.model.step));
  } else if (!r.execution.optimizer_implementation.empty()) {
    d.paragraph(fmt::format("execution: {}, {} optimizer{}", r.execution.mode == "cuda_graph" ? "CUDA graph" : "eager",
                            r.execution.optimizer_implementation,
                            r.execution.graph_fallback.empty() ? "" : " (graph not used: " + r.execution.graph_fallback + ")"));
  }
  if (!r.epochs.empty()) {
    Table t;
    t.id = "epochs";
    t.add_column(Column::count("epoch", "epoch"));
    t.add_column(Column::count("steps", "steps"));
    t.add_column(Column::count("samples", "samples"));
    const bool device_mem = r.epochs.front().peak_allocated_bytes.has_value();
    const std::vector<std::string> shown{"epoch_seconds", kThroughputTag, "step_time_median_ms", "step_time_p5_ms",
                                         "step_time_p95_ms", device_mem ? "peak_allocated_bytes" : "peak_host_rss_bytes",
                                         "power_avg_w", "loss_first", "loss_last"};
    for (const auto& e : r.epochs) {
      auto& row = t.add_row();
      row[0] = Cell::num(static_cast<double>(e.index + 1));
      row[1] = Cell::num(static_cast<double>(e.steps));
      row[2] = Cell::num(static_cast<double>(e.samples));
      for (const auto& m : pick(epoch_metrics(r, e), shown)) put_metric(t, row, m);
    }
    const size_t note = t.add_column(Column::text("note", ""));
    for (size_t i = 0; i < r.epochs.size(); ++i) t.rows[i][note] = Cell::str(r.epochs[i].complete ? "" : "(partial)");
    for (auto& row : t.rows) {
      if (row[note].text.empty()) row[note] = Cell::str(" ");  // an empty note is blank, not "-"
    }
    d.table(std::move(t));
    const RunSummary& m = r.summary;
    std::string total = fmt::format("total: {} {} in {:.2f} s = {:.1f} {}/s, {:.3g} TFLOP/s of model FLOPs", m.samples,
                                    unit, m.seconds, m.samples_per_s, unit, m.achieved_tflops);
    if (m.mfu && m.peak_tflops) total += fmt::format(" ({:.1f}% of the {:g} TFLOP/s peak)", *m.mfu * 100.0, *m.peak_tflops);
    if (m.peak_reserved_bytes) total += fmt::format(", peak reserved {}", format_bytes(*m.peak_reserved_bytes));
    total += fmt::format(" (warm-up: {} steps, {:.1f} s)", m.warmup_steps, m.warmup_seconds);
    d.paragraph(total);
    const JobEnergy energy = job_energy(r);
    if (energy.energy_j) {
      d.paragraph(fmt::format("energy: {:.1f} J, {} J/{}, {} W{}", *energy.energy_j,
                              energy.joules_per_sample ? fmt::format("{:.4g}", *energy.joules_per_sample) : "-",
                              unit.substr(0, unit.size() - 1),
                              energy.power_avg_w ? fmt::format("{:.0f}", *energy.power_avg_w) : "-",
                              energy.devices > 1 ? fmt::format(" over {} GPUs", energy.devices) : ""));
    }
    std::vector<std::string> extras;
    for (const auto& x : run_metrics(r)) {
      if (is_standard_metric(x.tag)) continue;
      const Column c = metric_column(x);
      extras.push_back(header_with_unit(c) + ": " + format_value(x.value, x.unit));
    }
    if (!extras.empty()) d.paragraph("also measured: " + [&] {
      std::string all;
      for (const auto& x : extras) all += (all.empty() ? "" : ", ") + x;
      return all;
    }());
    if (!m.stopped_by.empty()) d.paragraph("stopped by: " + m.stopped_by);
  }
  if (r.profile) add_profile(d, *r.profile);
  if (!r.summary.bounded_by.empty()) {
    d.paragraph("bounded by: " + r.summary.bounded_by + " - " + r.summary.bottleneck_evidence);
  } else if (!r.summary.bottleneck_evidence.empty() && r.status == RunStatus::kOk) {
    d.paragraph("bottleneck: " + r.summary.bottleneck_evidence);
  }
  d.paragraph("status: " + to_string(r.status) + (r.reason.empty() ? "" : " - " + r.reason));
  d.cases.push_back(TestCase{d.title, r.status == RunStatus::kOk ? TestCase::Outcome::kPass : TestCase::Outcome::kFail,
                             to_string(r.status) + (r.reason.empty() ? "" : ": " + r.reason)});
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// compare

namespace {

std::string change(const Comparison& c) {
  if (c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline) return "-";
  if (c.interval_basis == "none") return fmt::format("{:+.2f}% (one value per side: no interval)", (c.ratio - 1) * 100);
  return fmt::format("{:+.2f}% [{:+.2f}%, {:+.2f}%]", (c.ratio - 1) * 100, (c.ci_low - 1) * 100, (c.ci_high - 1) * 100);
}

std::string why(const Comparison& c) {
  if (c.verdict == Verdict::kNotComparable) {
    std::string keys;
    for (const auto& k : c.differing_keys) keys += (keys.empty() ? "" : ", ") + k;
    return "differs in: " + keys;
  }
  if (c.verdict == Verdict::kNoBaseline) return "no baseline run of this model";
  std::string issues;
  for (const auto& i : c.not_like_for_like) issues += (issues.empty() ? "" : "; ") + i;
  return issues.empty() ? "" : "NOT like-for-like: " + issues;
}

nlohmann::json compare_json(const CompareResult& r, double threshold) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.comparisons) {
    rows.push_back({{"label", c.label},
                    {"metric", c.metric},
                    {"metric_name", c.metric_name},
                    {"unit", c.metric_unit},
                    {"better", to_string(c.better)},
                    {"verdict", verdict_text(c)},
                    {"ratio", c.ratio},
                    {"ci_low", c.ci_low},
                    {"ci_high", c.ci_high},
                    {"interval_basis", c.interval_basis},
                    {"base_value", c.base_value},
                    {"new_value", c.new_value},
                    {"base_samples_per_s", c.base_samples_per_s},
                    {"new_samples_per_s", c.new_samples_per_s},
                    {"differing_keys", c.differing_keys},
                    {"like_for_like", c.like_for_like()},
                    {"not_like_for_like", c.not_like_for_like},
                    {"base_paths", c.base_paths},
                    {"new_paths", c.new_paths}});
  }
  return {{"schema", "gpubench.compare"},
          {"schema_version", 2},
          {"metric", r.metric},
          {"threshold", threshold},
          {"regression", r.any_regression()},
          {"like_for_like", r.environment.like_for_like},
          {"environment_differences", r.environment.differences},
          {"comparisons", rows}};
}

}  // namespace

Document compare_document(const CompareResult& r, double threshold) {
  Document d;
  d.kind = "compare";
  d.title = "gpubench compare";
  d.data = compare_json(r, threshold);
  // The metric's description from the first comparison that found it.
  std::string name = r.metric, unit;
  Better better = r.metric == kThroughputTag ? Better::kHigher : Better::kNeither;
  for (const auto& c : r.comparisons) {
    if (!c.metric_unit.empty()) {
      name = c.metric_name;
      unit = c.metric_unit;
      better = c.better;
      break;
    }
  }
  if (r.metric != kThroughputTag) {
    d.paragraph(fmt::format("metric: {} ({}{}), {}", name, r.metric, unit.empty() ? "" : ", " + unit,
                            better == Better::kNeither ? "no better direction"
                                                       : to_string(better) + " is better"));
  }
  Table t;
  t.id = "comparisons";
  t.add_column(Column::text("scenario", "scenario"));
  t.add_column(Column{"base", "base", unit, better});
  t.add_column(Column{"new", "new", unit, better});
  t.add_column(Column::text("change", "change [95% CI]"));
  t.add_column(Column::text("verdict", "verdict"));
  t.add_column(Column::text("detail", "detail"));
  for (const auto& c : r.comparisons) {
    const bool numbers = c.verdict != Verdict::kNotComparable && c.verdict != Verdict::kNoBaseline;
    t.rows.push_back({Cell::str(c.label), numbers ? Cell::num(c.base_value) : Cell::none(),
                      numbers ? Cell::num(c.new_value) : Cell::none(), Cell::str(change(c)),
                      Cell::str(c.verdict == Verdict::kRegression ? "REGRESSION" : verdict_text(c)), Cell::str(why(c))});
    TestCase tc{c.label, TestCase::Outcome::kPass, verdict_text(c) + ": " + change(c)};
    if (c.verdict == Verdict::kRegression) {
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = fmt::format("regression: {} {} beyond the {:.1f}% threshold", name, change(c), threshold * 100);
    } else if (!numbers) {
      tc.outcome = TestCase::Outcome::kSkip;
      tc.message = verdict_text(c) + ": " + why(c);
    }
    d.cases.push_back(tc);
  }
  t.notes.push_back(fmt::format("A regression is a change for the worse whose 95% interval excludes no change and "
                                "which exceeds {:.1f}%.", threshold * 100));
  d.table(std::move(t));
  if (!r.environment.differences.empty()) {
    d.paragraph(r.environment.like_for_like ? "Environment differences:"
                                            : "Environment differences (NOT like-for-like):");
    d.list(r.environment.differences);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// published

Document published_document(const PublishedReference& ref, const std::vector<PublishedRun>& runs) {
  Document d;
  d.kind = "published";
  d.title = "gpubench vs published " + ref.id;
  d.data = nlohmann::json::array();
  auto value = [](const std::optional<double>& v, const std::string& unit) {
    return v ? Cell::str(format_value(*v, unit)) : Cell::none();
  };
  for (const auto& pr : runs) {
    const RunRecord& run = *pr.run;
    const PublishedComparison& c = pr.comparison;
    const std::string unit = sample_unit(run);
    d.heading(pr.path + " vs published `" + ref.id + "`", 2);
    d.paragraph("Published: " + ref.source);
    d.quote(ref.quote);
    Table t;
    t.id = "published";
    t.add_column(Column::text("figure", ""));
    t.add_column(Column::text("published", "published"));
    t.add_column(Column::text("measured", "measured here"));
    t.rows.push_back({Cell::str("device"), Cell::str(ref.device), Cell::str(device_label(run))});
    t.rows.push_back({Cell::str("mode"), Cell::str(ref.mode), Cell::str(run.scenario.mode)});
    t.rows.push_back({Cell::str(unit + "/s"), value(c.published_samples_per_s, "samples/s"), value(c.measured_samples_per_s, "samples/s")});
    if (ref.epoch_seconds) {
      t.rows.push_back({Cell::str(fmt::format("epoch of {} samples (s)",
                                              ref.dataset_size ? std::to_string(*ref.dataset_size) : "?")),
                        value(ref.epoch_seconds, "s"), value(c.measured_epoch_seconds, "s")});
    }
    if (ref.steps_per_s) {
      t.rows.push_back({Cell::str("it/s"), value(ref.steps_per_s, "it/s"), value(run.summary.steps_per_s, "it/s")});
    }
    if (c.published_joules_per_sample || c.measured_joules_per_sample) {
      t.rows.push_back({Cell::str("energy per sample (J)"), value(c.published_joules_per_sample, "J/sample"),
                        value(c.measured_joules_per_sample, "J/sample")});
    }
    if (c.published_price_performance || c.recomputed_price_performance || c.measured_price_performance) {
      auto pp = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
      t.rows.push_back({Cell::str("price-performance (" + (ref.price_performance_unit.empty() ? std::string("epochs/min per 10,000 CNY")
                                                                                            : ref.price_performance_unit) + ")"),
                        Cell::str(pp(c.published_price_performance) + " as published; " +
                                  pp(c.recomputed_price_performance) + " from its own time and price"),
                        Cell::str(c.measured_price_performance ? pp(c.measured_price_performance)
                                                               : "no CNY price for this device in the table")});
    }
    if (ref.scaling_2gpu) {
      t.rows.push_back({Cell::str("2-device speed-up"), Cell::str(fmt::format("{:.2f}x", *ref.scaling_2gpu)),
                        Cell::str("run `gpubench scaling`")});
    }
    d.table(std::move(t));
    d.paragraph(c.percent_of_published
                    ? fmt::format("Measured throughput ({}) is **{:.1f} %** of the published figure.", c.percent_basis,
                                  *c.percent_of_published)
                    : std::string("No measured throughput to compare (the run did not finish ok)."));
    if (!c.same.empty()) {
      d.paragraph("Where the recipes agree:");
      d.list(c.same);
    }
    d.paragraph("How the recipes differ:");
    d.list(c.differences);
    if (!c.remarks.empty()) {
      d.paragraph("About the published figure:");
      d.list(c.remarks);
    }
    d.data.push_back({{"reference", ref.id}, {"record", pr.path}, {"published_samples_per_s", c.published_samples_per_s},
                      {"measured_samples_per_s", c.measured_samples_per_s}, {"percent_of_published", c.percent_of_published},
                      {"published_mode", ref.mode}, {"measured_mode", run.scenario.mode}, {"percent_basis", c.percent_basis},
                      {"published_steps_per_s", c.published_steps_per_s}, {"measured_steps_per_s", c.measured_steps_per_s},
                      {"measured_epoch_seconds", c.measured_epoch_seconds}, {"same", c.same}, {"differences", c.differences},
                      {"published_price_performance", c.published_price_performance},
                      {"recomputed_price_performance", c.recomputed_price_performance},
                      {"measured_price_performance", c.measured_price_performance},
                      {"published_joules_per_sample", c.published_joules_per_sample},
                      {"measured_joules_per_sample", c.measured_joules_per_sample}, {"remarks", c.remarks}});
  }
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// report

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

/// Runs that differ only in batch size, grouped (model, precision, device, mode), each group sorted by batch.
std::vector<std::vector<const RunRecord*>> sweep_groups(const ReportInput& in) {
  std::map<std::string, std::vector<const RunRecord*>> groups;
  for (const auto& lr : in.runs) {
    if (lr.record.status != RunStatus::kOk && lr.record.status != RunStatus::kOom) continue;
    nlohmann::json key = comparable_scenario(lr.record.scenario);
    key.erase("batch_size");
    key.erase("dataset_size");
    key["device_name"] = lr.record.environment.device_name;
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

/// Runs of the same scenario on the same device in the same mode (repeats): their throughput spread.
struct RepeatGroup {
  std::string label, unit;
  std::vector<double> rates;
};

std::vector<RepeatGroup> repeat_groups(const ReportInput& in) {
  std::map<std::string, RepeatGroup> groups;
  for (const auto& lr : in.runs) {
    const RunRecord& r = lr.record;
    if (r.status != RunStatus::kOk || r.summary.samples_per_s <= 0) continue;
    nlohmann::json key = comparable_scenario(r.scenario);
    key["device_name"] = r.environment.device_name;
    key["mode"] = r.execution.mode;
    RepeatGroup& g = groups[key.dump()];
    g.label = fmt::format("{} bs{} {} {}", r.scenario.model, r.scenario.batch_size.value_or(0), r.precision.resolved,
                          mode_label(r));
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
  const bool any = std::any_of(in.runs.begin(), in.runs.end(), [](const LoadedRecord& lr) {
    return !lr.record.summary.bounded_by.empty() || lr.record.profile.has_value();
  });
  if (!any) return;
  d.heading("Bottlenecks", 2);
  Table t;
  t.id = "bottlenecks";
  const Column verdict = Column::text("bounded_by", "bounded by"), busy{"device_busy_fraction", "busy", "fraction",
                                                                          Better::kHigher},
               evidence = Column::text("evidence", "evidence");
  for (const auto& lr : in.runs) {
    const RunRecord& r = lr.record;
    auto& row = t.add_row();
    put_identity(t, row, lr);
    t.put(row, verdict, Cell::str(r.summary.bounded_by.empty() ? "-" : r.summary.bounded_by));
    if (r.profile) {
      t.put(row, busy, Cell::num(r.profile->busy_fraction_of_timed_step.value_or(r.profile->busy_fraction)));
      for (const auto& c : r.profile->categories) {
        t.put(row, Column{"ms_" + c.category, category_display_name(c.category), "ms", Better::kLower},
              Cell::num(c.ms_per_step));
      }
    }
  }
  // The evidence last (it is the widest column): a second pass, once every category has its column.
  for (size_t i = 0; i < in.runs.size(); ++i) t.put(t.rows[i], evidence, Cell::str(in.runs[i].record.summary.bottleneck_evidence));
  for (auto& row : t.rows) row.resize(t.columns.size());
  t.notes.push_back("category columns: kernel time per step (ms) in the profiled steps; the chart below draws them");
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
    d.heading("Repeats", 2);
    Table t;
    t.id = "repeats";
    t.add_column(Column::text("scenario", "scenario"));
    t.add_column(Column::count("runs", "runs"));
    const std::string unit = repeats.front().unit;
    t.add_column(Column{"mean", "mean", unit, Better::kHigher});
    t.add_column(Column{"min", "min", unit, Better::kHigher});
    t.add_column(Column{"max", "max", unit, Better::kHigher});
    t.add_column(Column{"cv_pct", "coefficient of variation", "%", Better::kLower});
    for (const auto& g : repeats) {
      const StepTimeStats st = summarize_step_times(g.rates);  // the step-time statistics, applied to samples/s
      t.rows.push_back({Cell::str(g.label), Cell::num(static_cast<double>(g.rates.size())), Cell::num(st.mean_ms),
                        Cell::num(st.min_ms), Cell::num(st.max_ms),
                        Cell::num(st.mean_ms > 0 ? st.stdev_ms / st.mean_ms * 100.0 : 0.0)});
    }
    d.table(std::move(t));
  }
  d.heading("Charts", 2);
  if (in.charts.empty()) d.paragraph("No charts: " + (in.chart_note.empty() ? std::string("nothing to plot") : in.chart_note));
  for (const auto& c : in.charts) d.image(c, chart_title(c));
  return d;
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
    put(Column::text("device_type", "device type"), Cell::str(r.environment.device_type));
    put(Column::count("grad_accumulation", "gradient accumulation"), Cell::num(static_cast<double>(r.scenario.grad_accumulation)));
    put(Column::count("repeat_index", "repeat"), Cell::num(static_cast<double>(r.repeat_index)));
    put(Column::text("start_time_utc", "start (UTC)"), Cell::str(r.environment.start_time_utc));
    put(Column::text("driver_version", "driver"), Cell::str(r.telemetry.driver_version));
    put(Column::text("libtorch_version", "LibTorch"), Cell::str(r.environment.libtorch_version));
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

Document sweep_document(const std::string& model, const std::vector<SweepPointResult>& points) {
  Document d;
  d.kind = "sweep";
  d.title = "gpubench sweep " + model;
  Table t;
  t.id = "points";
  t.add_column(Column::text("point", "point"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column::count("batch_size", "batch"));
  t.add_column(Column{kThroughputTag, "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"step_time_median_ms", "step time median", "ms", Better::kLower});
  t.add_column(Column{"peak_allocated_bytes", "peak allocated", "bytes", Better::kLower});
  t.add_column(Column::text("record", "record"));
  nlohmann::json rows = nlohmann::json::array();
  std::string unit;
  for (const auto& p : points) {
    nlohmann::json row = {{"point", p.label}, {"swept", p.swept}, {"record", p.record_path}, {"exit_code", p.exit_code}};
    TestCase tc{p.label, TestCase::Outcome::kPass, ""};
    if (!p.record) {
      const std::string status = p.status_note.empty() ? fmt::format("no record (exit {})", p.exit_code) : p.status_note;
      row["status"] = p.status_note.empty() ? "missing" : "oom";
      if (!p.status_note.empty()) row["reason"] = p.status_note;
      t.rows.push_back({Cell::str(p.label), Cell::str(status), Cell::none(), Cell::none(), Cell::none(), Cell::none(), Cell::none()});
      tc.outcome = p.status_note.empty() ? TestCase::Outcome::kFail : TestCase::Outcome::kSkip;
      tc.message = status;
    } else {
      const RunRecord& r = *p.record;
      const bool ok = r.status == RunStatus::kOk;
      if (ok && unit.empty()) unit = throughput_unit(r);
      row["status"] = to_string(r.status);
      row["reason"] = r.reason;
      row["batch_size"] = r.scenario.batch_size ? *r.scenario.batch_size : 0;
      row["samples_per_s"] = r.summary.samples_per_s;
      row["peak_allocated_bytes"] = r.summary.peak_allocated_bytes;
      t.rows.push_back({Cell::str(p.label), Cell::str(ok ? "ok" : to_string(r.status) + ": " + r.reason),
                        r.scenario.batch_size ? Cell::num(static_cast<double>(*r.scenario.batch_size)) : Cell::none(),
                        ok ? Cell::num(r.summary.samples_per_s) : Cell::none(),
                        ok ? Cell::num(r.summary.step_time.median_ms) : Cell::none(),
                        r.summary.peak_allocated_bytes ? Cell::num(static_cast<double>(*r.summary.peak_allocated_bytes))
                                                       : Cell::none(),
                        Cell::str(file_name(p.record_path))});
      tc.outcome = ok ? TestCase::Outcome::kPass
                      : (r.status == RunStatus::kOom ? TestCase::Outcome::kSkip : TestCase::Outcome::kFail);
      tc.message = ok ? fmt::format("{:.1f} samples/s", r.summary.samples_per_s) : to_string(r.status) + ": " + r.reason;
    }
    rows.push_back(row);
    d.cases.push_back(tc);
  }
  if (!unit.empty()) t.columns[3].unit = unit;
  d.table(std::move(t));
  d.data = {{"schema", "gpubench.sweep"}, {"model", model}, {"points", rows}};
  return d;
}

Document scaling_document(const std::string& model, const ScalingResult& result) {
  Document d;
  d.kind = "scaling";
  d.title = "gpubench scaling " + model;
  Table t;
  t.id = "points";
  t.add_column(Column::count("ranks", "ranks"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column{kThroughputTag, "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"per_rank_samples_per_s", "per rank", "samples/s", Better::kHigher});
  t.add_column(Column{"scaling_efficiency", "scaling efficiency", "fraction", Better::kHigher});
  t.add_column(Column{"epoch_seconds", "epoch time", "s", Better::kLower});
  t.add_column(Column::count("slowest_rank", "slowest rank"));
  t.add_column(Column{"comm_wait_fraction", "comm wait (rank 0)", "fraction", Better::kLower});
  t.add_column(Column{"power_avg_w", "power, all GPUs", "W", Better::kNeither});
  t.add_column(Column{"joules_per_sample", "energy per sample", "J/sample", Better::kLower});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : result.points) {
    nlohmann::json row = {{"ranks", p.ranks}, {"record", p.record_path}, {"exit_code", p.exit_code}};
    auto& cells = t.add_row();
    cells[0] = Cell::num(static_cast<double>(p.ranks));
    TestCase tc{fmt::format("{} ranks", p.ranks), TestCase::Outcome::kPass, ""};
    if (!p.record) {
      row["status"] = "missing";
      cells[1] = Cell::str("no record (" + p.error + ")");
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = cells[1].text;
    } else if (!p.ok()) {
      const RunRecord& r = *p.record;
      row["status"] = to_string(r.status);
      row["samples_per_s"] = r.summary.samples_per_s;
      cells[1] = Cell::str(to_string(r.status) + ": " + r.reason);
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = cells[1].text;
    } else {
      const RunRecord& r = *p.record;
      const JobEnergy energy = job_energy(r);
      row["status"] = "ok";
      row["samples_per_s"] = *p.samples_per_s;
      row["scaling_efficiency"] = p.efficiency.value_or(0);
      row["comm_wait_fraction_rank0"] = p.comm_wait_fraction.value_or(0);
      row["power_avg_w"] = energy.power_avg_w;  // the whole job's: every GPU's power summed
      row["joules_per_sample"] = energy.joules_per_sample;
      row["power_devices"] = energy.devices;
      cells[1] = Cell::str("ok");
      cells[2] = Cell::num(p.samples_per_s);
      cells[3] = Cell::num(p.per_rank_samples_per_s);
      cells[4] = Cell::num(p.efficiency);
      cells[5] = Cell::num(r.summary.epoch_seconds_mean > 0 ? std::optional<double>(r.summary.epoch_seconds_mean) : std::nullopt);
      cells[6] = r.distributed ? Cell::num(static_cast<double>(r.distributed->slowest_rank)) : Cell::none();
      cells[7] = Cell::num(p.comm_wait_fraction);
      cells[8] = Cell::num(energy.power_avg_w);
      cells[9] = Cell::num(energy.joules_per_sample);
      t.columns[2].unit = t.columns[3].unit = throughput_unit(r);
      tc.message = fmt::format("efficiency {:.1f}%", p.efficiency.value_or(0) * 100);
    }
    rows.push_back(row);
    d.cases.push_back(tc);
  }
  if (result.base_ranks != 1 && result.base_ranks != 0) {
    t.notes.push_back(fmt::format("Efficiency is relative to the {}-rank run (no 1-rank run).", result.base_ranks));
  }
  d.table(std::move(t));
  d.data = {{"schema", "gpubench.scaling"}, {"model", model}, {"points", rows}};
  return d;
}


// ---------------------------------------------------------------------------------------------------------------
// trace


Document trace_document(const std::vector<std::pair<std::string, ProfileRecord>>& traces, size_t top) {
  Document d;
  d.kind = "trace";
  d.title = "Kernel profile";
  if (traces.size() == 1) {
    d.paragraph(traces[0].first);
    ProfileRecord p = traces[0].second;
    if (p.top_kernels.size() > top) p.top_kernels.resize(top);
    add_profile(d, p);
    return d;
  }
  const ProfileRecord& a = traces[0].second;
  const ProfileRecord& b = traces[1].second;
  d.paragraph("A: " + traces[0].first + " (" + std::to_string(a.steps) + " steps)");
  d.paragraph("B: " + traces[1].first + " (" + std::to_string(b.steps) + " steps)");
  const Column ms_a{"a_ms_per_step", "A", "ms", Better::kLower}, ms_b{"b_ms_per_step", "B", "ms", Better::kLower},
      diff{"diff_ms_per_step", "B - A", "ms", Better::kNeither};
  Table head;
  head.id = "trace_steps";
  head.title = "Per step";
  const Column what = Column::text("measure", "");
  auto line = [&](const std::string& label, double x, double y) {
    auto& row = head.add_row();
    head.put(row, what, Cell::str(label));
    head.put(row, ms_a, Cell::num(x));
    head.put(row, ms_b, Cell::num(y));
    head.put(row, diff, Cell::num(y - x));
  };
  line("wall", a.wall_ms_per_step, b.wall_ms_per_step);
  line("device busy", a.busy_ms_per_step, b.busy_ms_per_step);
  line("device idle", a.idle_ms_per_step, b.idle_ms_per_step);
  line("launch calls", a.launch_api_ms_per_step, b.launch_api_ms_per_step);
  d.table(std::move(head));

  Table cats;
  cats.id = "trace_categories";
  cats.title = "Kernel time by category";
  const Column cat = Column::text("category", "category");
  const Column n_a{"a_kernels_per_step", "A kernels", "", Better::kNeither},
      n_b{"b_kernels_per_step", "B kernels", "", Better::kNeither};
  for (const auto& category : kernel_categories()) {
    const ProfileCategory zero{category.first, 0, 0, 0};
    const auto find = [&zero](const ProfileRecord& p) {
      for (const auto& c : p.categories) {
        if (c.category == zero.category) return c;
      }
      return zero;
    };
    const ProfileCategory x = find(a), y = find(b);
    if (x.ms_per_step == 0 && y.ms_per_step == 0) continue;
    auto& row = cats.add_row();
    cats.put(row, cat, Cell::str(category.second));
    cats.put(row, ms_a, Cell::num(x.ms_per_step));
    cats.put(row, ms_b, Cell::num(y.ms_per_step));
    cats.put(row, diff, Cell::num(y.ms_per_step - x.ms_per_step));
    cats.put(row, n_a, Cell::num(x.kernels_per_step));
    cats.put(row, n_b, Cell::num(y.kernels_per_step));
  }
  d.table(std::move(cats));

  struct Pair {
    std::string category;
    double a = 0, b = 0, calls_a = 0, calls_b = 0;
  };
  std::map<std::string, Pair> kernels;
  for (const auto& k : a.top_kernels) {
    auto& p = kernels[k.name];
    p.category = k.category;
    p.a += k.ms_per_step;
    p.calls_a += k.calls_per_step;
  }
  for (const auto& k : b.top_kernels) {
    auto& p = kernels[k.name];
    p.category = k.category;
    p.b += k.ms_per_step;
    p.calls_b += k.calls_per_step;
  }
  std::vector<std::pair<std::string, Pair>> sorted(kernels.begin(), kernels.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    return std::fabs(x.second.b - x.second.a) > std::fabs(y.second.b - y.second.a);
  });
  if (sorted.size() > top) sorted.resize(top);
  Table k;
  k.id = "trace_kernels";
  k.title = "Kernels that differ most";
  const Column name = Column::text("kernel", "kernel"), kc = Column::text("category", "category"),
               c_a{"a_calls_per_step", "A calls", "", Better::kNeither},
               c_b{"b_calls_per_step", "B calls", "", Better::kNeither};
  for (const auto& [kn, p] : sorted) {
    auto& row = k.add_row();
    k.put(row, name, Cell::str(kn));
    k.put(row, kc, Cell::str(category_display_name(p.category)));
    k.put(row, ms_a, Cell::num(p.a));
    k.put(row, ms_b, Cell::num(p.b));
    k.put(row, diff, Cell::num(p.b - p.a));
    k.put(row, c_a, Cell::num(p.calls_a));
    k.put(row, c_b, Cell::num(p.calls_b));
  }
  d.table(std::move(k));
  return d;
}


Document projection_document(const Projection& p) {
  Document d;
  d.kind = "scaling_projection";
  d.title = "Scaling projection";
  d.paragraph(fmt::format("{} {} on {}: {:.2f} ms per step on 1 GPU, batch {} per GPU, {:.1f} MB of gradients in {} "
                          "buckets; interconnect {}",
                          p.model, p.precision, p.device_name.empty() ? "?" : p.device_name, p.compute_ms,
                          p.batch_per_gpu, p.gradient_bytes / 1e6, p.buckets, p.net.name));
  Table t;
  t.id = "projection";
  t.add_column(Column::count("gpus", "GPUs"));
  t.add_column(Column::count("nodes", "nodes"));
  t.add_column(Column{"comm_ms", "all-reduce", "ms", Better::kLower});
  t.add_column(Column{"exposed_ms", "exposed", "ms", Better::kLower});
  t.add_column(Column{"step_ms", "step", "ms", Better::kLower});
  t.add_column(Column{"efficiency", "efficiency", "fraction", Better::kHigher});
  t.add_column(Column{"measured_efficiency", "measured", "fraction", Better::kHigher});
  t.add_column(Column{"samples_per_s", "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"epoch_s", "epoch", "s", Better::kLower});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : p.points) {
    t.rows.push_back({Cell::num(static_cast<double>(x.gpus)), Cell::num(static_cast<double>(x.nodes)), Cell::num(x.comm_ms),
                      Cell::num(x.exposed_ms), Cell::num(x.step_ms), Cell::num(x.efficiency),
                      Cell::num(x.measured_efficiency), Cell::num(x.samples_per_s), Cell::num(x.epoch_s)});
    rows.push_back({{"gpus", x.gpus}, {"nodes", x.nodes}, {"comm_ms", x.comm_ms}, {"exposed_ms", x.exposed_ms},
                    {"step_ms", x.step_ms}, {"efficiency", x.efficiency},
                    {"measured_efficiency", x.measured_efficiency ? nlohmann::json(*x.measured_efficiency) : nlohmann::json()},
                    {"samples_per_s", x.samples_per_s}, {"epoch_s", x.epoch_s}});
  }
  t.notes.push_back("epoch: the scenario's dataset_size (" + std::to_string(p.dataset_size) +
                    " samples) split over all GPUs; efficiency: the 1-GPU step / the projected step");
  d.table(std::move(t));
  d.heading("Assumptions", 3);
  d.list(p.assumptions);
  d.data = {{"schema", "gpubench.scaling_projection"},
            {"model", p.model},
            {"precision", p.precision},
            {"device_name", p.device_name},
            {"interconnect",
             {{"name", p.net.name},
              {"description", p.net.description},
              {"intra", {{"latency_us", p.net.intra.latency_us}, {"bandwidth_gb_s", p.net.intra.bandwidth_gb_s}}},
              {"inter", {{"latency_us", p.net.inter.latency_us}, {"bandwidth_gb_s", p.net.inter.bandwidth_gb_s}}},
              {"gpus_per_node", p.net.gpus_per_node}}},
            {"compute_ms", p.compute_ms},
            {"backward_ms", p.backward_ms},
            {"gradient_bytes", p.gradient_bytes},
            {"buckets", p.buckets},
            {"residual_ms", p.residual_ms},
            {"calibrated_at_gpus", p.calibrated_at},
            {"points", rows},
            {"assumptions", p.assumptions}};
  return d;
}

}  // namespace gpubench
