// gpubench history: a metric over time from a results store, one row per run; --detect finds step changes.

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/store_filters.h"
#include "gpubench/core/analysis/changepoint.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

/// What differs between two stored runs' software (the usual suspects of a step change).
std::string environment_change(const HistoryRow& before, const HistoryRow& after) {
  std::string out;
  auto diff = [&out](const char* name, const std::string& a, const std::string& b) {
    if (a != b) out += (out.empty() ? "" : "; ") + std::string(name) + " " + (a.empty() ? "?" : a) + " -> " + (b.empty() ? "?" : b);
  };
  diff("driver", before.driver_version, after.driver_version);
  diff("CUDA", before.cuda_runtime_version, after.cuda_runtime_version);
  diff("cuDNN", before.cudnn_version, after.cudnn_version);
  diff("LibTorch", before.libtorch_version, after.libtorch_version);
  diff("gpubench", before.git_revision, after.git_revision);
  diff("GPU", before.device_name, after.device_name);
  return out.empty() ? "no software difference recorded" : out;
}

struct Detection {
  bool worse = false;      ///< a change for the worse was found
  bool inconclusive = false;  ///< a change next to a run timed on a busy host
  size_t short_series = 0; ///< series with fewer runs than detection needs
  size_t series = 0;
};

/// `history --detect`: step changes in the finished runs' values (core/changepoint.hpp), each named by the first run
/// after it and what changed in its environment, and per series how many runs it has and needs.
Detection add_changes(Document& d, const std::vector<HistoryRow>& rows, const std::string& metric,
                      const std::string& unit, const DetectOptions& options) {
  // One series per scenario identity (its GPU model and world size included): only the same work forms a history.
  std::vector<std::pair<std::string, std::vector<const HistoryRow*>>> series_of;
  for (const auto& r : rows) {
    if (r.status != "ok" || !r.value) continue;
    const std::string& key = r.identity_json;
    auto it = std::find_if(series_of.begin(), series_of.end(), [&key](const auto& s) { return s.first == key; });
    if (it == series_of.end()) {
      series_of.push_back({key, {&r}});
    } else {
      it->second.push_back(&r);
    }
  }
  // Series named as every view names scenarios: with the keys that tell same-looking ones apart.
  std::vector<nlohmann::json> identities;
  for (const auto& [key, ok] : series_of) identities.push_back(nlohmann::json::parse(key, nullptr, false));
  const std::vector<std::string> labels = scenario_labels(identities);
  Table t;
  t.id = "changes";
  t.title = fmt::format(
      "Step changes in {} (per scenario and GPU model, false-alarm rate {:g} % per series: a permutation test with at "
      "least {} runs on each side{}):",
      metric, options.alpha * 100, options.min_segment,
      options.min_after < options.min_segment
          ? fmt::format(", and the newest {} to {} runs against the runs before them (t test)", options.min_after,
                        options.min_segment - 1)
          : "");
  t.add_column(Column::text("scenario_id", "scenario id"));
  t.add_column(Column::text("scenario", "scenario"));
  t.add_column(Column::count("first_run_after", "first run after"));
  t.add_column(Column::text("start_time_utc", "its start (UTC)"));
  t.add_column(Column{"before", "mean before", unit, Better::kNeither});
  t.add_column(Column{"after", "mean after", unit, Better::kNeither});
  t.add_column(Column{"change_pct", "change", "%", Better::kNeither});
  t.add_column(Column{"p_value", "p", "", Better::kNeither});
  t.add_column(Column::text("verdict", "verdict"));
  t.add_column(Column::text("environment_change", "what changed"));
  Detection result;
  result.series = series_of.size();
  size_t runs = 0;
  Table counts;
  counts.id = "series";
  counts.title = "Series (runs of one scenario identity):";
  counts.add_column(Column::text("scenario_id", "scenario id"));
  counts.add_column(Column::text("scenario", "scenario"));
  counts.add_column(Column::count("runs", "runs"));
  counts.add_column(Column::count("needed", "needed"));
  counts.add_column(Column::text("detection", "detection"));
  const size_t needed = options.min_segment + options.min_after;
  for (size_t si = 0; si < series_of.size(); ++si) {
    const auto& ok = series_of[si].second;
    const std::string& label = labels[si];
    const std::string id = identity_id(identities[si]);
    std::vector<double> series;
    for (const auto* r : ok) series.push_back(*r->value);
    runs += series.size();
    const bool enough = series.size() >= needed;
    if (!enough) ++result.short_series;
    counts.rows.push_back({Cell::str(id), Cell::str(label), Cell::num(static_cast<double>(series.size())),
                           Cell::num(static_cast<double>(needed)),
                           Cell::str(enough ? "searched" : "too few runs: not searched")});
    const std::vector<ChangePoint> changes = detect_changes(series, options);
    for (size_t ci = 0; ci < changes.size(); ++ci) {
      const ChangePoint& c = changes[ci];
      const HistoryRow& after = *ok[c.index];
      const HistoryRow& before = *ok[c.index - 1];
      const bool up = c.after_mean > c.before_mean;
      std::string verdict = after.better == "higher" ? (up ? "better" : "WORSE")
                            : after.better == "lower" ? (up ? "WORSE" : "better")
                                                      : (up ? "higher" : "lower");
      // A run timed on a busy host measured the host's other work too: a change with one on either side of it is
      // not evidence about the GPU, driver or library (compare says the same of a pair).
      const size_t from = ci == 0 ? 0 : changes[ci - 1].index, to = ci + 1 < changes.size() ? changes[ci + 1].index : ok.size();
      auto busy_in = [&ok](size_t first, size_t last) -> std::string {
        for (size_t i = first; i < last; ++i) {
          if (!ok[i]->busy_host.empty()) return "run " + std::to_string(ok[i]->id) + ", " + ok[i]->busy_host;
        }
        return "";
      };
      const std::string busy_before = busy_in(from, c.index), busy_after = busy_in(c.index, to);
      std::string busy;
      if (!busy_before.empty() || !busy_after.empty()) {
        busy = "inconclusive, busy host (" + (busy_before.empty() ? "" : "before: " + busy_before) +
               (!busy_before.empty() && !busy_after.empty() ? "; " : "") +
               (busy_after.empty() ? "" : "after: " + busy_after) + ")";
        verdict = "inconclusive";
        result.inconclusive = true;
      }
      result.worse = result.worse || verdict == "WORSE";
      t.rows.push_back({Cell::str(id), Cell::str(label), Cell::num(static_cast<double>(after.id)), Cell::str(after.start_time_utc),
                        Cell::num(c.before_mean), Cell::num(c.after_mean),
                        Cell::num((c.after_mean / c.before_mean - 1) * 100), Cell::num(c.p_value), Cell::str(verdict),
                        Cell::str(busy.empty() ? environment_change(before, after)
                                               : busy + "; " + environment_change(before, after))});
      d.cases.push_back(TestCase{fmt::format("{} {} change at run {}", label, metric, after.id),
                                 verdict == "WORSE"          ? TestCase::Outcome::kFail
                                 : verdict == "inconclusive" ? TestCase::Outcome::kSkip
                                                             : TestCase::Outcome::kPass,
                                 fmt::format("{} -> {} ({})", c.before_mean, c.after_mean,
                                             busy.empty() ? environment_change(before, after) : busy)});
    }
  }
  if (t.rows.empty()) {
    t.notes.push_back(fmt::format("none found in {} finished runs ({} series, {} of them too short to search)", runs,
                                  series_of.size(), result.short_series));
  }
  d.table(std::move(counts));
  d.table(std::move(t));
  return result;
}

class HistoryCommand final : public Command {
 public:
  bool has_metrics() const override { return true; }
  void declare(CLI::App& cmd) override {
    cmd.add_option("STORE", store_, "A results store written by `db add` or `run --db`: a SQLite file or a postgresql:// URL")->required()->type_name("STORE");
    filters_.declare(cmd);
    cmd.add_option("--metric", metric_, "The run-level metric to list (default samples_per_s)")->type_name("TAG");
    auto* allow = cmd.add_flag("--allow-missing", allow_missing_,
                               "With --detect: exit 0 instead of 7 when a series is too short");
    auto* detect = cmd.add_flag("--detect", detect_,
                 "Look for step changes in the metric (permutation test, 1 % false alarms per series) and name the "
                 "first run after each with what changed; exit 3 on a change for the worse");
    cmd.add_option("--min-after", min_after_,
                   "With --detect: the fewest runs after a change (1 to 5, default 5; 5 before it always). Below 5 the "
                   "newest runs are t-tested against the runs before them, so 1 flags a change the night it happens; "
                   "the false-alarm rate of each setting on the committed A/A series is in docs/guide.md")
        ->check(CLI::Range(1, 5).description(""))
        ->type_name("N")->transform(decimal_whole())
        ->needs(detect);  // an option that does nothing alone is an error, not silence
    allow->needs(detect);
  }

  void files(FileRoles& roles) const override { roles.store(store_, "STORE"); }

  int run(Context& ctx) override {
  const std::unique_ptr<ResultsStore> store = open_store_for_reading(store_);
  const HistoryQuery q = filters_.query(metric_, *store);
  const std::vector<HistoryRow> rows = store->history(q);
  std::string unit;  // the metric's unit when every run shares it (images/s and sequences/s do not mix)
  bool mixed = false;
  for (const auto& r : rows) {
    if (r.unit.empty()) continue;
    mixed = mixed || (!unit.empty() && unit != r.unit);
    unit = r.unit;
  }
  if (mixed) unit = "samples/s" == unit || unit.size() > 2 ? "" : unit;
  Document d;
  d.kind = "history";
  d.title = "gpubench history " + store->name();
  Table t;
  t.id = "runs";
  t.add_column(Column::count("id", "id"));
  t.add_column(Column::text("start_time_utc", "start (UTC)"));
  t.add_column(Column::text("scenario_id", "scenario id"));
  t.add_column(Column::text("scenario", "scenario"));
  t.add_column(Column::text("model", "model"));
  t.add_column(Column::text("device", "device"));
  t.add_column(Column::text("precision", "precision"));
  t.add_column(Column::count("batch_size", "batch"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column{metric_, metric_, unit, Better::kNeither});
  t.add_column(Column::text("driver_version", "driver"));
  t.add_column(Column::text("cuda_runtime_version", "CUDA"));
  t.add_column(Column::text("cudnn_version", "cuDNN"));
  t.add_column(Column::text("libtorch_version", "LibTorch"));
  t.add_column(Column::text("git_revision", "gpubench"));
  t.add_column(Column::text("source", "record"));
  std::vector<nlohmann::json> identities;
  for (const auto& r : rows) identities.push_back(nlohmann::json::parse(r.identity_json, nullptr, false));
  const std::vector<std::string> labels = scenario_labels(identities);
  for (size_t i = 0; i < rows.size(); ++i) {
    const HistoryRow& r = rows[i];
    t.rows.push_back({Cell::num(static_cast<double>(r.id)), Cell::str(r.start_time_utc),
                      Cell::str(identity_id(identities[i])), Cell::str(labels[i]), Cell::str(r.model),
                      Cell::str(r.device_name), Cell::str(r.precision),
                      r.batch_size ? Cell::num(static_cast<double>(*r.batch_size)) : Cell::none(), Cell::str(r.status),
                      Cell::num(r.value), Cell::str(r.driver_version), Cell::str(r.cuda_runtime_version),
                      Cell::str(r.cudnn_version), Cell::str(r.libtorch_version), Cell::str(r.git_revision),
                      Cell::str(r.source)});
    // OpenMetrics: every run (failed ones too) has gpubench_run_ok, and the metric where it has one; labelled as
    // run and export label theirs (docs/fleet.md), the store's id telling runs apart.
    const nlohmann::json scenario = nlohmann::json::parse(r.scenario_json, nullptr, false);
    const auto field = [&scenario](const char* key) {
      return scenario.is_object() && scenario.contains(key) && scenario[key].is_string() ? scenario[key].get<std::string>()
                                                                                          : std::string();
    };
    const std::vector<std::pair<std::string, std::string>> om_labels{
        {"model", r.model}, {"mode", field("mode")}, {"precision", r.precision},
        {"batch_size", r.batch_size ? std::to_string(*r.batch_size) : std::string()}, {"kernels", field("kernels")},
        {"data", field("data")}, {"device_model", r.device_name}, {"scenario_id", identity_id(identities[i])},
        {"scenario", labels[i]}, {"host", r.hostname}, {"driver_version", r.driver_version},
        {"cuda_runtime_version", r.cuda_runtime_version}, {"cudnn_version", r.cudnn_version},
        {"libtorch_version", r.libtorch_version}, {"gpubench_revision", r.git_revision},
        {"start_time_utc", r.start_time_utc}, {"repeat", r.repeat ? std::to_string(*r.repeat) : std::string()},
        {"run_id", std::to_string(r.id)}, {"status", r.status}};
    d.gauges.push_back(Gauge{"gpubench_run_ok", "1 when the run finished with status ok, else 0", om_labels,
                             r.status == "ok" ? 1.0 : 0.0});
    if (r.value && std::isfinite(*r.value)) {
      d.gauges.push_back(Gauge{"gpubench_" + openmetrics_name(metric_),
                               metric_ + (unit.empty() ? "" : " (" + unit + ")"), om_labels, *r.value});
    }
  }
  t.notes.push_back(std::to_string(rows.size()) + " run(s)");
  d.table(std::move(t));
  Detection found;
  DetectOptions detect_options;
  detect_options.min_after = static_cast<size_t>(min_after_);
  if (detect_) found = add_changes(d, rows, metric_, unit, detect_options);
  ctx.print(d);
  if (found.worse) return kExitRegression;
  if (found.inconclusive) return kExitInconclusive;
  if (detect_ && (found.short_series > 0 || found.series == 0) && !allow_missing_) {
    spdlog::error("history --detect: {} of {} series have fewer than {} runs (change detection needs {} before a change "
                  "and {} after it); --allow-missing accepts that",
                  found.series == 0 ? 0 : found.short_series, found.series,
                  detect_options.min_segment + detect_options.min_after, detect_options.min_segment,
                  detect_options.min_after);
    return kExitTooFewRuns;
  }
  return kExitOk;
  }

 private:
  std::string store_, metric_ = "samples_per_s";
  StoreFilters filters_;
  bool detect_ = false, allow_missing_ = false;
  int min_after_ = 5;
};

}  // namespace

CommandSpec history_command() {
  return {"history", "A metric over time from a results store, one row per run",
          {kExitOk, kExitUsage, kExitRegression, kExitOutputNotWritten, kExitTooFewRuns, kExitInconclusive}, "console",
          [] { return std::make_unique<HistoryCommand>(); }};
}

}  // namespace gpubench::cli
