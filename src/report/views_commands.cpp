// The views of the small commands: the resolved scenario (`run --dry-run`, `validate --resolved`), repeats, metrics,
// and the two-column tables `info`, `db` and `dataset make` print.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/report/views.hpp"
#include "report/view_helpers.h"

namespace gpubench {

Table fields_table(std::string id, std::string title, const std::vector<std::pair<std::string, std::string>>& rows) {
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  t.add_column(Column::text("field", "field"));
  t.add_column(Column::text("value", "value"));
  for (const auto& [k, v] : rows) t.rows.push_back({Cell::str(k), v.empty() ? Cell::none() : Cell::str(v)});
  return t;
}

namespace {

/// A scenario value as one line of text ("128", "sgd", "null").
std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

/// The scenario's keys flattened ("optimizer.lr") with their values.
void flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [k, v] : j.items()) {
    if (v.is_object()) {
      flatten(v, prefix + k + ".", out);
    } else {
      out.emplace_back(prefix + k, value_text(v));
    }
  }
}

}  // namespace

Document resolved_document(const ResolvedScenario& r, const std::string& source) {
  Document d;
  d.kind = "resolved_scenario";
  d.title = "resolved scenario" + (source.empty() ? std::string() : " of " + source);
  d.paragraph(fmt::format("{}: {} on {}{}, precision {} (resolves to {})", d.title, r.scenario.model, r.device.id,
                          r.device.available ? "" : " (not available here: " + r.device.reason + ")",
                          r.scenario.precision, r.precision));
  std::vector<std::pair<std::string, std::string>> keys;
  flatten(nlohmann::json(r.scenario), "", keys);
  Table t;
  t.id = "scenario";
  t.add_column(Column::text("key", "key"));
  t.add_column(Column::text("value", "value"));
  t.add_column(Column::text("source", "from"));
  for (const auto& [key, value] : keys) {
    const auto o = r.scenario.origins.find(key);
    t.rows.push_back({Cell::str(key), value == "-" ? Cell::none() : Cell::str(value),
                      Cell::str(o != r.scenario.origins.end() ? o->second.describe() : "default")});
  }
  d.table(std::move(t));
  if (!r.record_paths.empty()) {
    d.paragraph("record" + std::string(r.record_paths.size() > 1 ? "s: " : ": ") +
                fmt::format("{}", fmt::join(r.record_paths, ", ")));
  }
  if (r.memory) {
    const MemoryEstimate& m = *r.memory;
    d.paragraph(fmt::format("memory estimate: {} ({} parameters: weights {}, gradients {}, optimizer state {}; "
                            "activations {}){}",
                            format_bytes(m.total_bytes), m.parameters, format_bytes(m.weights_bytes + m.autocast_copy_bytes),
                            format_bytes(m.gradient_bytes), format_bytes(m.optimizer_bytes),
                            format_bytes(m.activation_bytes),
                            m.available_bytes > 0 ? fmt::format("; {} has {} ({})", r.device.id,
                                                                format_bytes(m.available_bytes), m.available_source)
                                                  : std::string()));
  }
  for (const auto& n : r.notes) d.paragraph("note: " + n);
  d.data = r;
  if (!source.empty()) d.data["source"] = source;
  return d;
}

Document repeats_document(const std::vector<RepeatRow>& repeats) {
  Document d;
  d.kind = "repeats";
  d.title = fmt::format("{} repeats", repeats.size());
  Table t;
  t.id = "repeats";
  t.add_column(Column::count("repeat", "repeat"));
  t.add_column(Column::text("record", "record"));
  t.add_column(Column::text("status", "status"));
  std::vector<double> rates;
  std::string unit = "samples/s";
  for (const auto& r : repeats) {
    auto& row = t.add_row();
    row[0] = Cell::num(static_cast<double>(r.index));
    row[1] = Cell::str(r.record_path);
    row[2] = Cell::str(to_string(r.record.status));
    for (const auto& m : views::pick(run_metrics(r.record), {kThroughputTag, "step_time_median_ms"})) {
      if (!is_standard_metric(m.tag)) continue;
      views::put_metric(t, row, m);
    }
    if (r.record.status == RunStatus::kOk) {
      rates.push_back(r.record.summary.samples_per_s);
      unit = throughput_unit(r.record);
    }
  }
  d.table(std::move(t));
  if (rates.size() > 1) {
    const StepTimeStats s = summarize_step_times(rates);  // the step-time statistics, applied to throughput
    d.paragraph(fmt::format("repeats: {}, {} mean {:.1f}, min {:.1f}, max {:.1f}, coefficient of variation {:.2f}%",
                            rates.size(), unit, s.mean_ms, s.min_ms, s.max_ms, s.stdev_ms / s.mean_ms * 100.0));
  }
  for (const auto& r : repeats) {
    d.cases.push_back(TestCase{"repeat " + std::to_string(r.index),
                               r.record.status == RunStatus::kOk ? TestCase::Outcome::kPass : TestCase::Outcome::kFail,
                               r.record.reason});
  }
  return d;
}

Document metrics_document() {
  Document d;
  d.kind = "metrics";
  d.title = "metric tags";
  Table t;
  t.id = "metrics";
  for (const char* k : {"tag", "unit", "better", "per", "meaning"}) t.add_column(Column::text(k, k));
  for (const auto& m : standard_metrics()) {
    const std::string per = m.per_epoch && m.per_run ? "epoch, run" : (m.per_epoch ? "epoch" : "run");
    const std::string unit = m.unit == "<samples>/s" ? "images/s, ..." : m.unit;
    t.rows.push_back({Cell::str(m.tag), Cell::str(unit), Cell::str(to_string(m.better)), Cell::str(per),
                      Cell::str(m.help)});
  }
  t.notes.push_back("Records may carry more (extra metrics added where they are measured); `gpubench export` shows "
                    "them all.");
  d.table(std::move(t));
  return d;
}

}  // namespace gpubench
