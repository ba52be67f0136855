#include "gpubench/core/analysis/scenario_groups.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/metric_catalog.hpp"

namespace gpubench {

namespace {

std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

RunSpread spread_of(const std::vector<double>& values) {
  RunSpread s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  s.mean = *mean_of(values);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  if (values.size() < 2) return s;
  double ss = 0;
  for (double x : values) ss += (x - s.mean) * (x - s.mean);
  const double n = static_cast<double>(values.size());
  const double stdev = std::sqrt(ss / (n - 1));
  s.half_width_95 = student_t_quantile(0.95, n - 1) * stdev / std::sqrt(n);
  if (s.mean != 0) s.cv_pct = stdev / std::fabs(s.mean) * 100.0;
  return s;
}

std::vector<ScenarioGroup> group_by_scenario(const std::vector<const RunRecord*>& runs) {
  std::vector<ScenarioGroup> groups;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = *runs[i];
    nlohmann::json id = scenario_identity(r);
    const std::string key = id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto it = index.find(key);
    if (it == index.end()) {
      ScenarioGroup g;
      g.identity = std::move(id);
      g.id = identity_id(g.identity);
      g.label = identity_label(r);
      g.model = r.scenario.model;
      g.mode = r.scenario.mode;
      g.device_model = r.environment.device_name.empty() ? r.environment.device_type : r.environment.device_name;
      g.unit = throughput_unit(r);
      it = index.emplace(key, groups.size()).first;
      groups.push_back(std::move(g));
    }
    ScenarioGroup& g = groups[it->second];
    g.runs.push_back(i);
    if (r.summary.peak_reserved_bytes) {
      g.peak_reserved_bytes = std::max(g.peak_reserved_bytes.value_or(0), *r.summary.peak_reserved_bytes);
    }
    if (r.status == RunStatus::kOk && r.summary.samples_per_s > 0) g.ok_runs.push_back(i);
  }
  for (ScenarioGroup& g : groups) {
    std::vector<double> rate, p50, p95, jps, mfu;
    std::map<std::string, int64_t> verdicts;
    for (size_t i : g.ok_runs) {
      const RunRecord& r = *runs[i];
      rate.push_back(r.summary.samples_per_s);
      // The figures as every view shows them (the metric catalog derives those an older record lacks).
      const Metrics ms = run_metrics(r);
      const auto take = [&](const char* tag, std::vector<double>& into) {
        if (const Metric* m = find_metric(ms, tag)) into.push_back(m->value);
      };
      take("step_time_median_ms", p50);
      take("step_time_p95_ms", p95);
      take("joules_per_sample", jps);
      take("mfu", mfu);
      g.epochs_max = std::max(g.epochs_max.value_or(0), static_cast<double>(r.epochs.size()));
    }
    // The verdict over every run: a scenario whose runs all ran out of memory is bounded by capacity.
    for (size_t i : g.runs) {
      const RunRecord& r = *runs[i];
      // Decided again from what the record holds, so records written before the attribution get today's answer.
      const std::string v = diagnose_bottleneck(r).bounded_by;
      if (!v.empty()) ++verdicts[v];
    }
    g.throughput = spread_of(rate);
    g.step_p50_ms = mean_of(p50);
    g.step_p95_ms = mean_of(p95);
    g.joules_per_sample = mean_of(jps);
    g.mfu = mean_of(mfu);
    for (const auto& [v, n] : verdicts) {
      g.verdicts += n;
      if (g.bounded_by.empty() || n > verdicts[g.bounded_by]) g.bounded_by = v;
    }
  }
  std::vector<nlohmann::json> ids;
  std::vector<std::string> labels;
  for (const auto& g : groups) {
    ids.push_back(g.identity);
    labels.push_back(g.label);
  }
  const auto distinct = distinct_labels(ids, labels);
  for (size_t i = 0; i < groups.size(); ++i) groups[i].label = distinct[i];
  std::stable_sort(groups.begin(), groups.end(), [](const ScenarioGroup& a, const ScenarioGroup& b) {
    const auto key = [](const ScenarioGroup& g) {
      const auto bs = g.identity.find("batch_size");
      const int64_t batch = bs != g.identity.end() && bs->is_number_integer() ? bs->get<int64_t>() : 0;
      const auto ws = g.identity.find("world_size");
      const int64_t world = ws != g.identity.end() && ws->is_number_integer() ? ws->get<int64_t>() : 1;
      return std::make_tuple(g.device_model, g.mode == "train" ? 0 : 1, g.unit, g.model, batch, world, g.label);
    };
    return key(a) < key(b);
  });
  return groups;
}

}  // namespace gpubench
