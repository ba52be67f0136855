#include "gpubench/core/analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "gpubench/core/record/record_io.hpp"

namespace gpubench {

namespace fs = std::filesystem;

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kNoChange: return "no significant change";
    case Verdict::kSlower: return "slower";
    case Verdict::kRegression: return "regression";
    case Verdict::kNotComparable: return "not comparable";
    case Verdict::kNoBaseline: return "no baseline";
    case Verdict::kChanged: return "changed";
  }
  return "?";
}

std::string verdict_text(const Comparison& c) {
  const bool rate = is_rate_unit(c.metric_unit);
  switch (c.verdict) {
    case Verdict::kFaster: return rate || c.metric == kThroughputTag ? "faster" : "better";
    case Verdict::kSlower: return rate || c.metric == kThroughputTag ? "slower" : "worse";
    case Verdict::kChanged: return c.ratio > 1 ? "higher" : "lower";
    default: return to_string(c.verdict);
  }
}

std::vector<std::string> metric_tags(const std::vector<LoadedRecord>& records) {
  std::vector<std::string> tags;
  auto add = [&tags](const Metrics& ms) {
    for (const auto& m : ms) {
      if (std::find(tags.begin(), tags.end(), m.tag) == tags.end()) tags.push_back(m.tag);
    }
  };
  for (const auto& lr : records) {
    add(run_metrics(lr.record));
    for (const auto& e : lr.record.epochs) add(epoch_metrics(lr.record, e));
  }
  return tags;
}

bool CompareResult::any_regression() const {
  return std::any_of(comparisons.begin(), comparisons.end(),
                     [](const Comparison& c) { return c.verdict == Verdict::kRegression; });
}

nlohmann::json comparable_scenario(const Scenario& s) {
  nlohmann::json j = s;
  for (const char* k : {"output", "name", "telemetry", "telemetry_interval_s", "telemetry_trace", "profile",
                        "profile_steps"}) {
    j.erase(k);
  }
  return j;
}

namespace {

/// Per-run step times (ms) of one side; a run without step times contributes its mean step from the summary.
using Runs = std::vector<std::vector<double>>;

Runs step_times(const std::vector<const LoadedRecord*>& side) {
  Runs runs;
  for (const auto* r : side) {
    std::vector<double> steps;
    for (const auto& e : r->record.epochs) steps.insert(steps.end(), e.step_times_ms.begin(), e.step_times_ms.end());
    if (steps.empty() && r->record.summary.steps > 0) steps.push_back(r->record.summary.step_time.mean_ms);
    if (!steps.empty()) runs.push_back(std::move(steps));
  }
  return runs;
}

/// Per-run values of a metric other than throughput: each complete epoch's value, or the run's one value for
/// metrics without per-epoch values. Also returns the metric's description from the first record that has it.
Runs metric_values(const std::vector<const LoadedRecord*>& side, const std::string& tag, std::optional<Metric>* about) {
  Runs runs;
  for (const auto* r : side) {
    std::vector<double> values;
    for (const auto& e : r->record.epochs) {
      if (!e.complete) continue;
      const Metrics ms = epoch_metrics(r->record, e);
      if (const Metric* m = find_metric(ms, tag)) {
        values.push_back(m->value);
        if (!*about) *about = *m;
      }
    }
    if (values.empty()) {
      const Metrics ms = run_metrics(r->record);
      if (const Metric* m = find_metric(ms, tag)) {
        values.push_back(m->value);
        if (!*about) *about = *m;
      }
    }
    if (!values.empty()) runs.push_back(std::move(values));
  }
  return runs;
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

/// Mean step time over runs (each run weighted equally).
double mean_of_runs(const Runs& runs) {
  double sum = 0;
  for (const auto& r : runs) sum += mean(r);
  return sum / static_cast<double>(runs.size());
}

/// Resamples runs with replacement, then steps within each chosen run: the spread between runs and within them.
double resample_mean(const Runs& runs, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick_run(0, runs.size() - 1);
  double sum = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[pick_run(rng)];
    std::uniform_int_distribution<size_t> pick_step(0, r.size() - 1);
    double s = 0;
    for (size_t k = 0; k < r.size(); ++k) s += r[pick_step(rng)];
    sum += s / static_cast<double>(r.size());
  }
  return sum / static_cast<double>(runs.size());
}

std::string label_of(const Scenario& s) {
  std::ostringstream os;
  os << s.model << " bs" << (s.batch_size ? std::to_string(*s.batch_size) : "?") << " " << s.precision << " "
     << s.device;
  return os.str();
}

std::vector<std::string> differing_keys(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> keys;
  const nlohmann::json patch = nlohmann::json::diff(a, b);
  for (const auto& op : patch) {
    std::string path = op.value("path", std::string());
    if (!path.empty() && path[0] == '/') path = path.substr(1);
    std::replace(path.begin(), path.end(), '/', '.');
    if (std::find(keys.begin(), keys.end(), path) == keys.end()) keys.push_back(path);
  }
  return keys;
}

void compare_environments(const std::vector<LoadedRecord>& base, const std::vector<LoadedRecord>& cand,
                          EnvironmentDiff& out) {
  if (base.empty() || cand.empty()) return;
  const EnvironmentRecord& a = base.front().record.environment;
  const EnvironmentRecord& b = cand.front().record.environment;
  const TelemetryInfo& ta = base.front().record.telemetry;
  const TelemetryInfo& tb = cand.front().record.telemetry;
  auto diff = [&out](const std::string& name, const std::string& x, const std::string& y, bool breaks_like_for_like) {
    if (x == y) return;
    out.differences.push_back(name + ": " + (x.empty() ? "?" : x) + " -> " + (y.empty() ? "?" : y));
    if (breaks_like_for_like) out.like_for_like = false;
  };
  auto num = [](const std::optional<double>& v) { return v ? std::to_string(static_cast<int64_t>(*v)) : ""; };
  auto flag = [](const std::optional<bool>& v) { return v ? (*v ? "on" : "off") : ""; };
  diff("device_name", a.device_name, b.device_name, true);
  diff("nvidia_driver", ta.driver_version, tb.driver_version, false);
  diff("cuda_driver_api", a.driver_version, b.driver_version, false);
  diff("cuda_runtime", a.cuda_runtime_version, b.cuda_runtime_version, false);
  diff("cudnn", a.cudnn_version, b.cudnn_version, false);
  diff("libtorch", a.libtorch_version, b.libtorch_version, false);
  diff("gpubench", a.gpubench_version + " " + a.git_revision, b.gpubench_version + " " + b.git_revision, false);
  diff("build_type", a.build_type, b.build_type, true);
  diff("power_limit_w", num(ta.power_limit_w), num(tb.power_limit_w), true);
  diff("ecc", flag(ta.ecc_enabled), flag(tb.ecc_enabled), false);
  diff("hostname", a.hostname, b.hostname, false);
}

/// The values one side's records hold for a condition, in first-seen order ("a, b" when repeats disagree).
std::string side_values(const std::vector<const LoadedRecord*>& side,
                        const std::function<std::string(const RunRecord&)>& value) {
  std::vector<std::string> seen;
  for (const auto* r : side) {
    const std::string v = value(r->record);
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  std::string out;
  for (const auto& v : seen) out += (out.empty() ? "" : ", ") + v;
  return out;
}

/// Conditions that change throughput without changing the scenario: the GPU model, its power limit, whether clocks
/// were locked, and other processes sharing the GPU. Unknown values ("?") never count as a difference.
std::vector<std::string> like_for_like_issues(const std::vector<const LoadedRecord*>& base,
                                              const std::vector<const LoadedRecord*>& cand) {
  std::vector<std::string> issues;
  auto check = [&](const std::string& name, const std::function<std::string(const RunRecord&)>& value) {
    const std::string a = side_values(base, value), b = side_values(cand, value);
    if (a != b && a.find('?') == std::string::npos && b.find('?') == std::string::npos) {
      issues.push_back(name + ": " + a + " -> " + b);
    }
  };
  check("gpu_model", [](const RunRecord& r) {
    return r.environment.device_name.empty() ? "?" : r.environment.device_name;
  });
  check("power_limit_w", [](const RunRecord& r) {
    return r.telemetry.power_limit_w ? std::to_string(std::lround(*r.telemetry.power_limit_w)) : "?";
  });
  check("clocks_locked", [](const RunRecord& r) -> std::string {
    return r.telemetry.clocks_locked ? (*r.telemetry.clocks_locked ? "locked" : "not locked") : "?";
  });
  // Another process on the GPU competes for it: not like-for-like on whichever side had one.
  auto co_running = [](const std::vector<const LoadedRecord*>& side) {
    std::vector<std::string> seen;
    for (const auto* r : side) {
      for (const auto& p : r->record.telemetry.other_processes.value_or(std::vector<GpuProcess>{})) {
        const std::string who = "pid " + std::to_string(p.pid) + (p.name.empty() ? "" : " " + p.name);
        if (std::find(seen.begin(), seen.end(), who) == seen.end()) seen.push_back(who);
      }
    }
    std::string all;
    for (const auto& w : seen) all += (all.empty() ? "" : ", ") + w;
    return all;
  };
  const std::string a = co_running(base), b = co_running(cand);
  if (!a.empty() || !b.empty()) {
    issues.push_back("co-running processes: " + (a.empty() ? "none" : a) + " -> " + (b.empty() ? "none" : b));
  }
  return issues;
}

}  // namespace

CompareResult compare_runs(const std::vector<LoadedRecord>& baselines, const std::vector<LoadedRecord>& candidates,
                           const CompareOptions& options) {
  CompareResult result;
  result.metric = options.metric;
  compare_environments(baselines, candidates, result.environment);

  // Group both sides by comparable scenario, in first-seen order.
  auto group_by_scenario = [](const std::vector<LoadedRecord>& side) {
    std::vector<std::pair<nlohmann::json, std::vector<const LoadedRecord*>>> groups;
    for (const auto& r : side) {
      if (r.record.status != RunStatus::kOk) continue;  // failed runs have no throughput to compare
      const nlohmann::json key = comparable_scenario(r.record.scenario);
      auto it = std::find_if(groups.begin(), groups.end(), [&key](const auto& g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {&r}});
      } else {
        it->second.push_back(&r);
      }
    }
    return groups;
  };
  const auto base_groups = group_by_scenario(baselines);
  const auto cand_groups = group_by_scenario(candidates);

  std::mt19937_64 rng(options.seed);
  for (const auto& group : cand_groups) {
    const nlohmann::json& key = group.first;  // not a structured binding: lambdas below capture it (C++17)
    const auto& cands = group.second;
    Comparison c;
    c.metric = options.metric;
    c.label = label_of(cands.front()->record.scenario);
    for (const auto* r : cands) c.new_paths.push_back(r->path);
    const auto match = std::find_if(base_groups.begin(), base_groups.end(), [&key](const auto& g) { return g.first == key; });
    if (match == base_groups.end()) {
      // Same model on the other side but another recipe: say which keys differ.
      const auto same_model = std::find_if(base_groups.begin(), base_groups.end(), [&key](const auto& g) {
        return g.first.value("model", "") == key.value("model", "");
      });
      if (same_model == base_groups.end()) {
        c.verdict = Verdict::kNoBaseline;
      } else {
        c.verdict = Verdict::kNotComparable;
        c.differing_keys = differing_keys(same_model->first, key);
        for (const auto* r : same_model->second) c.base_paths.push_back(r->path);
      }
      result.comparisons.push_back(c);
      continue;
    }
    for (const auto* r : match->second) c.base_paths.push_back(r->path);
    c.not_like_for_like = like_for_like_issues(match->second, cands);
    // Throughput resamples step times (each step trains the same samples on both sides, so throughput scales as
    // 1 / mean step time); any other metric resamples its own per-epoch (or per-run) values.
    const bool throughput = options.metric == kThroughputTag;
    std::optional<Metric> about;
    const Runs base = throughput ? step_times(match->second) : metric_values(match->second, options.metric, &about);
    const Runs cand = throughput ? step_times(cands) : metric_values(cands, options.metric, &about);
    const std::optional<int64_t> batch = cands.front()->record.scenario.batch_size;
    if (about) {
      c.metric_name = about->name;
      c.metric_unit = about->unit;
      c.better = about->better;
    }
    if (base.empty() || cand.empty() || (throughput && !batch)) {
      c.verdict = Verdict::kNotComparable;
      c.differing_keys = {!throughput      ? "(no " + options.metric + " on one side)"
                          : batch          ? "(no timed steps on one side)"
                                           : "(no batch size in the records)"};
      result.comparisons.push_back(c);
      continue;
    }
    const double base_mean = mean_of_runs(base), new_mean = mean_of_runs(cand);
    if (throughput) {
      const double samples_per_step =
          static_cast<double>(*batch) * static_cast<double>(cands.front()->record.scenario.grad_accumulation);
      c.base_samples_per_s = c.base_value = samples_per_step / base_mean * 1000.0;
      c.new_samples_per_s = c.new_value = samples_per_step / new_mean * 1000.0;
      c.metric_unit = throughput_unit(cands.front()->record);
      c.ratio = base_mean / new_mean;
    } else {
      c.base_value = base_mean;
      c.new_value = new_mean;
      c.ratio = base_mean != 0 ? new_mean / base_mean : (new_mean == 0 ? 1.0 : 0.0);
    }
    const bool spread = std::any_of(base.begin(), base.end(), [](const auto& r) { return r.size() > 1; }) ||
                        std::any_of(cand.begin(), cand.end(), [](const auto& r) { return r.size() > 1; }) ||
                        base.size() > 1 || cand.size() > 1;
    if (!spread || base_mean == 0) {
      c.ci_low = c.ci_high = c.ratio;
      c.interval_basis = "none";
    } else {
      std::vector<double> ratios(static_cast<size_t>(options.resamples));
      for (auto& r : ratios) {
        const double b = resample_mean(base, rng), n = resample_mean(cand, rng);
        r = throughput ? b / n : n / b;
      }
      std::sort(ratios.begin(), ratios.end());
      const double tail = (1.0 - options.confidence) / 2.0 * 100.0;
      c.ci_low = percentile_sorted(ratios, tail);
      c.ci_high = percentile_sorted(ratios, 100.0 - tail);
      const char* unit = throughput ? "steps" : "epochs";
      c.interval_basis = (base.size() > 1 || cand.size() > 1) ? std::string("runs and ") + unit : std::string(unit);
    }
    // Better and worse in the metric's direction; a regression is worse by more than the threshold.
    // With one value per side there is no interval: only a change beyond the threshold counts.
    const bool no_interval = c.interval_basis == "none";
    const bool up = no_interval ? c.ratio > 1.0 + options.threshold : c.ci_low > 1.0;
    const bool down = no_interval ? c.ratio < 1.0 - options.threshold : c.ci_high < 1.0;
    if (!up && !down) {
      c.verdict = Verdict::kNoChange;
    } else if (c.better == Better::kNeither) {
      c.verdict = Verdict::kChanged;
    } else if (up == (c.better == Better::kHigher)) {
      c.verdict = Verdict::kFaster;
    } else {
      const bool beyond = c.better == Better::kHigher ? c.ratio < 1.0 - options.threshold
                                                      : c.ratio > 1.0 + options.threshold;
      c.verdict = beyond ? Verdict::kRegression : Verdict::kSlower;
    }
    result.comparisons.push_back(c);
  }
  return result;
}


}  // namespace gpubench
