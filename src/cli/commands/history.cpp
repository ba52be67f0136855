// gpubench history: a metric over time from a results store, one row per run; --detect finds step changes.

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/changepoint.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/engine/engine.hpp"
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
  size_t short_series = 0; ///< series with fewer runs than detection needs
  size_t series = 0;
};

/// `history --detect`: step changes in the finished runs' values (core/changepoint.hpp), each named by the first run
/// after it and what changed in its environment, and per series how many runs it has and needs.
Detection add_changes(Document& d, const std::vector<HistoryRow>& rows, const std::string& metric,
                      const std::string& unit) {
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
  Detection result;
  result.series = series_of.size();
  size_t runs = 0;
  Table counts;
  counts.id = "series";
  counts.title = "Series (runs of one scenario identity):";
  counts.add_column(Column::text("scenario", "scenario"));
  counts.add_column(Column::count("runs", "runs"));
  counts.add_column(Column::count("needed", "needed"));
  counts.add_column(Column::text("detection", "detection"));
  const size_t needed = 2 * options.min_segment;
  for (const auto& [key, ok] : series_of) {
    std::vector<double> series;
    for (const auto* r : ok) series.push_back(*r->value);
    runs += series.size();
    const HistoryRow& first = *ok.front();
    const nlohmann::json id = nlohmann::json::parse(key, nullptr, false);
    const int64_t world = id.is_object() ? id.value("world_size", int64_t{1}) : 1;
    const std::string label = first.model + " bs" + (first.batch_size ? std::to_string(*first.batch_size) : "?") + " " +
                              first.precision + " " + first.device_name +
                              (world > 1 ? ", " + std::to_string(world) + " GPUs" : std::string());
    const bool enough = series.size() >= needed;
    if (!enough) ++result.short_series;
    counts.rows.push_back({Cell::str(label), Cell::num(static_cast<double>(series.size())),
                           Cell::num(static_cast<double>(needed)),
                           Cell::str(enough ? "searched" : "too few runs: not searched")});
    for (const auto& c : detect_changes(series, options)) {
      const HistoryRow& after = *ok[c.index];
      const HistoryRow& before = *ok[c.index - 1];
      const bool up = c.after_mean > c.before_mean;
      const std::string verdict = after.better == "higher" ? (up ? "better" : "WORSE")
                                  : after.better == "lower" ? (up ? "WORSE" : "better")
                                                            : (up ? "higher" : "lower");
      result.worse = result.worse || verdict == "WORSE";
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
    t.notes.push_back(fmt::format("none found in {} finished runs ({} series, {} of them too short to search)", runs,
                                  series_of.size(), result.short_series));
  }
  d.table(std::move(counts));
  d.table(std::move(t));
  return result;
}

/// "2026-11-01" or "2026-11-01T12:00[:00][Z]".
bool valid_date(const std::string& s) {
  auto digits = [&s](size_t from, size_t n) {
    if (s.size() < from + n) return false;
    for (size_t i = from; i < from + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
  };
  if (!(digits(0, 4) && s.size() >= 10 && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2))) return false;
  const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  if (month < 1 || month > 12 || day < 1 || day > 31) return false;
  if (s.size() == 10) return true;
  if (s[10] != 'T' || !digits(11, 2) || s.size() < 16 || s[13] != ':' || !digits(14, 2)) return false;
  std::string rest = s.substr(16);
  if (!rest.empty() && rest[0] == ':') {
    if (!digits(17, 2)) return false;
    rest = s.substr(19);
  }
  return rest.empty() || rest == "Z";
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// Filters that name something that does not exist are usage errors with the valid choices, never an empty answer.
void check_filters(const HistoryQuery& q, const ResultsStore& store) {
  if (!q.model.empty()) {
    const std::vector<std::string> models = model_names();
    if (std::find(models.begin(), models.end(), q.model) == models.end()) {
      const std::string best = closest_match(q.model, models);
      throw UsageError("--model " + q.model + ": unknown model" + (best.empty() ? "" : " (did you mean " + best + "?)") +
                       "; models: " + joined(models));
    }
  }
  std::vector<std::string> keys;
  for (const auto& k : all_scenario_keys(model_options())) keys.push_back(k.key);
  for (const auto& [key, value] : q.scenario) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string best = closest_match(key, keys);
      throw UsageError("--scenario " + key + "=" + value + ": unknown scenario key" +
                       (best.empty() ? "" : " (did you mean " + best + "?)") + "; keys: " + joined(keys));
    }
  }
  std::vector<std::string> tags;
  for (const auto& m : standard_metrics()) tags.push_back(m.tag);
  for (const auto& t : store.metric_tags()) {
    if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
  }
  if (std::find(tags.begin(), tags.end(), q.metric) == tags.end()) {
    const std::string best = closest_match(q.metric, tags);
    throw UsageError("--metric " + q.metric + ": no such metric" + (best.empty() ? "" : " (did you mean " + best + "?)") +
                     "; metrics: " + joined(tags));
  }
  if (!q.since.empty() && !valid_date(q.since)) {
    throw UsageError("--since " + q.since + ": expected a date such as 2026-11-01 or 2026-11-01T12:00:00Z");
  }
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
    cmd.add_flag("--allow-missing", allow_missing_, "With --detect: exit 0 instead of 7 when a series is too short");
    cmd.add_flag("--detect", detect_,
                 "Look for step changes in the metric (permutation test, 1 % false alarms per series) and name the "
                 "first run after each with what changed; exit 3 on a change for the worse");
  }

  void files(FileRoles& roles) const override { roles.store(store_, "STORE"); }

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
  std::unique_ptr<ResultsStore> store;
  try {
    store = std::make_unique<ResultsStore>(store_, ResultsStore::Access::kRead);  // a read never makes a store
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  check_filters(q, *store);
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
  Detection found;
  if (detect_) found = add_changes(d, rows, metric_, unit);
  ctx.print(d);
  if (found.worse) return kExitRegression;
  if (detect_ && (found.short_series > 0 || found.series == 0) && !allow_missing_) {
    spdlog::error("history --detect: {} of {} series have fewer than {} runs (change detection needs {} on each side "
                  "of a change); --allow-missing accepts that",
                  found.series == 0 ? 0 : found.short_series, found.series, 2 * DetectOptions{}.min_segment,
                  DetectOptions{}.min_segment);
    return kExitTooFewRuns;
  }
  return kExitOk;
  }

 private:
  std::string store_, model_, metric_ = "samples_per_s", since_;
  std::vector<std::string> scenario_;
  bool detect_ = false, allow_missing_ = false;
};

}  // namespace

CommandSpec history_command() {
  return {"history", "A metric over time from a results store, one row per run",
          {kExitOk, kExitUsage, kExitRegression, kExitOutputNotWritten, kExitTooFewRuns}, "console",
          [] { return std::make_unique<HistoryCommand>(); }};
}

}  // namespace gpubench::cli
