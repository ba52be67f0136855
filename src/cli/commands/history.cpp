// gpubench history: a metric over time from a results store, one row per run; --detect finds step changes.

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/changepoint.hpp"
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

/// `history --detect`: step changes in the finished runs' values (core/changepoint.hpp), each named by the first run
/// after it and what changed in its environment. Returns whether one of them is a change for the worse.
bool add_changes(Document& d, const std::vector<HistoryRow>& rows, const std::string& metric, const std::string& unit) {
  // One series per scenario and GPU model: only like-for-like runs form a history.
  std::vector<std::pair<std::string, std::vector<const HistoryRow*>>> series_of;
  for (const auto& r : rows) {
    if (r.status != "ok" || !r.value) continue;
    const std::string key = r.scenario_json + "|" + r.device_name;
    auto it = std::find_if(series_of.begin(), series_of.end(), [&key](const auto& s) { return s.first == key; });
    if (it == series_of.end()) {
      series_of.push_back({key, {&r}});
    } else {
      it->second.push_back(&r);
    }
  }
  const DetectOptions options;
  Table t;
  t.id = "changes";
  t.title = fmt::format("Step changes in {} (per scenario and GPU model; permutation test, false-alarm rate {:g} % per "
                        "series, at least {} runs on each side):",
                        metric, options.alpha * 100, options.min_segment);
  t.add_column(Column::text("scenario", "scenario"));
  t.add_column(Column::count("first_run_after", "first run after"));
  t.add_column(Column::text("start_time_utc", "its start (UTC)"));
  t.add_column(Column{"before", "mean before", unit, Better::kNeither});
  t.add_column(Column{"after", "mean after", unit, Better::kNeither});
  t.add_column(Column{"change_pct", "change", "%", Better::kNeither});
  t.add_column(Column{"p_value", "p", "", Better::kNeither});
  t.add_column(Column::text("verdict", "verdict"));
  t.add_column(Column::text("environment_change", "what changed"));
  bool worse = false;
  size_t runs = 0;
  for (const auto& [key, ok] : series_of) {
    std::vector<double> series;
    for (const auto* r : ok) series.push_back(*r->value);
    runs += series.size();
    const HistoryRow& first = *ok.front();
    const std::string label = first.model + " bs" + (first.batch_size ? std::to_string(*first.batch_size) : "?") + " " +
                              first.precision + " " + first.device_name;
    for (const auto& c : detect_changes(series, options)) {
      const HistoryRow& after = *ok[c.index];
      const HistoryRow& before = *ok[c.index - 1];
      const bool up = c.after_mean > c.before_mean;
      const std::string verdict = after.better == "higher" ? (up ? "better" : "WORSE")
                                  : after.better == "lower" ? (up ? "WORSE" : "better")
                                                            : (up ? "higher" : "lower");
      worse = worse || verdict == "WORSE";
      t.rows.push_back({Cell::str(label), Cell::num(static_cast<double>(after.id)), Cell::str(after.start_time_utc),
                        Cell::num(c.before_mean), Cell::num(c.after_mean),
                        Cell::num((c.after_mean / c.before_mean - 1) * 100), Cell::num(c.p_value), Cell::str(verdict),
                        Cell::str(environment_change(before, after))});
      d.cases.push_back(TestCase{fmt::format("{} {} change at run {}", label, metric, after.id),
                                 verdict == "WORSE" ? TestCase::Outcome::kFail : TestCase::Outcome::kPass,
                                 fmt::format("{} -> {} ({})", c.before_mean, c.after_mean,
                                             environment_change(before, after))});
    }
  }
  if (t.rows.empty()) {
    t.notes.push_back(fmt::format("none found in {} finished runs ({} series)", runs, series_of.size()));
  }
  d.table(std::move(t));
  return worse;
}

class HistoryCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("STORE", store_, "SQLite file written by `db add` or `run --db`")->required()->type_name("STORE");
    cmd.add_option("--model", model_, "Only this model")->type_name("NAME");
    cmd.add_option("--scenario", scenario_,
                   "Only runs whose resolved scenario has KEY=VALUE (repeatable), e.g. batch_size=256")
        ->type_name("KEY=VALUE");
    cmd.add_option("--metric", metric_, "The run-level metric to list (default samples_per_s)")->type_name("TAG");
    cmd.add_option("--since", since_, "Only runs that started at or after this date (2026-11-01)")->type_name("DATE");
    cmd.add_flag("--detect", detect_,
                 "Look for step changes in the metric (permutation test, 1 % false alarms per series) and name the "
                 "first run after each with what changed; exit 3 on a change for the worse");
  }

  int run(Context& ctx) override {
  HistoryQuery q;
  q.model = model_;
  q.metric = metric_;
  q.since = since_;
  for (const auto& kv : scenario_) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--scenario: expected KEY=VALUE (e.g. batch_size=256), got '" + kv + "'");
    }
    q.scenario[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<HistoryRow> rows;
  try {
    rows = ResultsStore(store_).history(q);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
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
  d.title = "gpubench history " + store_;
  Table t;
  t.id = "runs";
  t.add_column(Column::count("id", "id"));
  t.add_column(Column::text("start_time_utc", "start (UTC)"));
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
  for (const auto& r : rows) {
    t.rows.push_back({Cell::num(static_cast<double>(r.id)), Cell::str(r.start_time_utc), Cell::str(r.model),
                      Cell::str(r.device_name), Cell::str(r.precision),
                      r.batch_size ? Cell::num(static_cast<double>(*r.batch_size)) : Cell::none(), Cell::str(r.status),
                      Cell::num(r.value), Cell::str(r.driver_version), Cell::str(r.cuda_runtime_version),
                      Cell::str(r.cudnn_version), Cell::str(r.libtorch_version), Cell::str(r.git_revision),
                      Cell::str(r.source)});
  }
  t.notes.push_back(std::to_string(rows.size()) + " run(s)");
  d.table(std::move(t));
  bool worse = false;
  if (detect_) worse = add_changes(d, rows, metric_, unit);
  ctx.print(d);
  return worse ? kExitRegression : kExitOk;
  }

 private:
  std::string store_, model_, metric_ = "samples_per_s", since_;
  std::vector<std::string> scenario_;
  bool detect_ = false;
};

}  // namespace

CommandSpec history_command() {
  return {"history", "A metric over time from a results store, one row per run",
          {kExitOk, kExitUsage, kExitRegression, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<HistoryCommand>(); }};
}

}  // namespace gpubench::cli
