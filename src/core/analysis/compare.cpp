#include "gpubench/core/analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {

namespace fs = std::filesystem;

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kNoChange: return "no significant change";
    case Verdict::kSlower: return "slower";
    case Verdict::kRegression: return "regression";
    case Verdict::kNotComparable: return "not the same scenario";
    case Verdict::kNoBaseline: return "no baseline";
    case Verdict::kChanged: return "changed";
    case Verdict::kInconclusive: return "inconclusive";
    case Verdict::kRunFailed: return "run failed";
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

bool CompareResult::any(Verdict v) const {
  return std::any_of(comparisons.begin(), comparisons.end(), [v](const Comparison& c) { return c.verdict == v; });
}

namespace {

}  // namespace

namespace {

/// The continued fraction of the regularized incomplete beta function (Lentz's method).
double beta_fraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = std::abs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = std::abs(c) < tiny ? tiny : c;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-14) break;
  }
  return h;
}

/// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log(1 - x));
  return x < (a + 1) / (a + b + 2) ? front * beta_fraction(a, b, x) / a
                                   : 1 - front * beta_fraction(b, a, 1 - x) / b;
}

/// P(|T| <= t) for Student's t with `df` degrees of freedom.
double t_two_sided_coverage(double t, double df) { return 1 - incomplete_beta(df / 2, 0.5, df / (df + t * t)); }

}  // namespace

double student_t_quantile(double confidence, double df) {
  df = std::max(df, 1e-3);
  double lo = 0, hi = 1;
  while (t_two_sided_coverage(hi, df) < confidence && hi < 1e12) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {  // bisection: the coverage grows with t
    const double mid = (lo + hi) / 2;
    (t_two_sided_coverage(mid, df) < confidence ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double student_t_two_sided_p(double t, double df) {
  return std::clamp(1.0 - t_two_sided_coverage(std::fabs(t), std::max(df, 1e-3)), 0.0, 1.0);
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

void compare_environments(const std::vector<LoadedRecord>& base, const std::vector<LoadedRecord>& cand,
                          EnvironmentDiff& out) {
  if (base.empty() || cand.empty()) return;
  // A side's first finished run speaks for it (a crashed run's record may lack what it never measured).
  const auto first_ok = [](const std::vector<LoadedRecord>& side) -> const RunRecord& {
    for (const auto& r : side) {
      if (r.record.status == RunStatus::kOk) return r.record;
    }
    return side.front().record;
  };
  const RunRecord& ra = first_ok(base);
  const RunRecord& rb = first_ok(cand);
  const EnvironmentRecord& a = ra.environment;
  const EnvironmentRecord& b = rb.environment;
  const TelemetryInfo& ta = ra.telemetry;
  const TelemetryInfo& tb = rb.telemetry;
  auto diff = [&out](const std::string& name, const std::string& x, const std::string& y, bool breaks_like_for_like) {
    if (x == y) return;
    out.differences.push_back(name + ": " + (x.empty() ? "?" : x) + " -> " + (y.empty() ? "?" : y));
    if (breaks_like_for_like) out.like_for_like = false;
  };
  auto num = [](const std::optional<double>& v) { return v ? std::to_string(static_cast<int64_t>(*v)) : ""; };
  auto flag = [](const std::optional<bool>& v) { return v ? (*v ? "on" : "off") : ""; };
  diff("device_name", a.device_name, b.device_name, true);
  diff("nvidia_driver", nvidia_driver_of(ra), nvidia_driver_of(rb), false);
  diff("cuda_driver_api", a.cuda_driver_api_version.empty() ? a.driver_version : a.cuda_driver_api_version,
       b.cuda_driver_api_version.empty() ? b.driver_version : b.cuda_driver_api_version, false);
  diff("cuda_runtime", a.cuda_runtime_version, b.cuda_runtime_version, false);
  diff("cudnn", a.cudnn_version, b.cudnn_version, false);
  diff("libtorch", a.libtorch_version, b.libtorch_version, false);
  // The same release built for another backend (CUDA 13.0 / 13.2, ROCm, CPU only); a version change already says it.
  if (a.libtorch_version == b.libtorch_version && !a.libtorch_build.empty() && !b.libtorch_build.empty()) {
    diff("libtorch_build", a.libtorch_build, b.libtorch_build, false);
  }
  diff("backend_library", a.backend_library_version, b.backend_library_version, false);
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
  // Where the data lies is not what it is (identity: its files); how it was fed is a condition of the run.
  check("decoder", [](const RunRecord& r) { return r.data ? r.data->decode : std::string(); });
  check("data_workers", [](const RunRecord& r) { return r.data ? std::to_string(r.data->workers) : std::string(); });
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

namespace {

/// The first run of a side that ran on a busy host, and why ("runs/b.json, epoch 1: other processes used 1.9 of 2
/// cores (load 3.1)"); "" when none did.
std::string busy_side_evidence(const std::vector<const LoadedRecord*>& side) {
  for (const auto* r : side) {
    const std::string why = busy_host_evidence(r->record);
    if (!why.empty()) return r->path + ", " + why;
  }
  return "";
}

/// What on one side says its speed depends on the host: NVML's utilisation below the threshold, or a launch- or
/// input-bound verdict. Empty when nothing does.
std::string host_bound_evidence(const std::vector<const LoadedRecord*>& side, double threshold) {
  std::optional<double> lo, hi;
  std::string verdict;
  for (const auto* r : side) {
    double sum = 0;
    int n = 0;
    for (const auto& e : r->record.epochs) {
      if (e.telemetry && e.telemetry->gpu_util_avg_pct) {
        sum += *e.telemetry->gpu_util_avg_pct;
        ++n;
      }
    }
    if (n > 0) {
      const double u = sum / n;
      lo = lo ? std::min(*lo, u) : u;
      hi = hi ? std::max(*hi, u) : u;
    }
    const std::string b = diagnose_bottleneck(r->record).bounded_by;
    if ((b == "launch" || b == "input") && verdict.empty()) verdict = b + "-bound";
  }
  std::string out;
  if (lo && *lo < threshold) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "GPU busy %.0f%s%% (NVML)", *lo, *hi - *lo >= 1 ? ("-" + std::to_string(std::lround(*hi))).c_str() : "");
    out = buf;
  }
  if (!verdict.empty()) out += (out.empty() ? "" : ", ") + verdict;
  return out;
}

/// One side's attribution: the verdict most of its runs give (ties: the earlier in the factor order) and each factor's
/// mean share over the runs that have a verdict.
std::pair<std::string, std::vector<BottleneckFactor>> side_bottleneck(const std::vector<const LoadedRecord*>& side) {
  std::map<std::string, int> votes;
  std::map<std::string, double> sums;
  int runs = 0;
  for (const auto* r : side) {
    const BottleneckVerdict v = diagnose_bottleneck(r->record);
    if (v.bounded_by.empty()) continue;
    ++runs;
    ++votes[v.bounded_by];
    for (const auto& f : v.factors) sums[f.factor] += f.share;
  }
  std::string verdict;
  for (const auto& name : bottleneck_factor_names()) {
    const auto it = votes.find(name);
    if (it != votes.end() && (verdict.empty() || it->second > votes[verdict])) verdict = name;
  }
  std::vector<BottleneckFactor> factors;
  for (const auto& [name, sum] : sums) factors.push_back(BottleneckFactor{name, sum / runs, "", "mean over runs"});
  std::stable_sort(factors.begin(), factors.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  return {verdict, factors};
}

/// "kernels -> power (power 3 % -> 20 %, kernels 78 % -> 61 %)" when the two sides' verdicts differ.
std::string bottleneck_change(const Comparison& c) {
  if (c.base_bounded_by.empty() || c.new_bounded_by.empty() || c.base_bounded_by == c.new_bounded_by) return {};
  const auto pct = [](double v) { return std::to_string(std::lround(v * 100)) + " %"; };
  std::string out = "bounded by " + c.base_bounded_by + " -> " + c.new_bounded_by + " (";
  for (const auto& name : {c.new_bounded_by, c.base_bounded_by}) {
    out += (name == c.new_bounded_by ? "" : ", ") + name + " " + pct(factor_share(c.base_factors, name)) + " -> " +
           pct(factor_share(c.new_factors, name));
  }
  return out + " of the step)";
}

/// Mean of each run's values (one number per run).
std::vector<double> run_means(const Runs& runs) {
  std::vector<double> out;
  for (const auto& r : runs) out.push_back(mean(r));
  return out;
}

double variance(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

/// A run-level interval of new / base (ratio of means) when a side has two or more runs: Welch's t on the runs'
/// log values; a side with one run borrows the other side's variance. Returns {low, high}.
std::pair<double, double> run_level_interval(const std::vector<double>& base, const std::vector<double>& cand,
                                             double confidence) {
  std::vector<double> lb, lc;
  for (double x : base) lb.push_back(std::log(x));
  for (double x : cand) lc.push_back(std::log(x));
  const double nb = static_cast<double>(lb.size()), nc = static_cast<double>(lc.size());
  double vb = variance(lb), vc = variance(lc), df = 0;
  if (lb.size() >= 2 && lc.size() >= 2) {
    const double sb = vb / nb, sc = vc / nc;
    df = (sb + sc) * (sb + sc) / ((sb * sb) / (nb - 1) + (sc * sc) / (nc - 1) + 1e-300);
  } else if (lb.size() >= 2) {
    vc = vb;
    df = nb - 1;
  } else {
    vb = vc;
    df = nc - 1;
  }
  const double se = std::sqrt(vb / nb + vc / nc);
  const double diff = mean(lc) - mean(lb);
  const double h = student_t_quantile(confidence, std::max(1.0, df)) * se;
  return {std::exp(diff - h), std::exp(diff + h)};
}

}  // namespace

CompareResult compare_runs(const std::vector<LoadedRecord>& baselines, const std::vector<LoadedRecord>& candidates,
                           const CompareOptions& options) {
  CompareResult result;
  result.metric = options.metric;
  compare_environments(baselines, candidates, result.environment);

  // Group both sides by scenario identity, in first-seen order.
  auto group_by_identity = [&options](const std::vector<LoadedRecord>& side) {
    std::vector<std::pair<nlohmann::json, std::vector<const LoadedRecord*>>> groups;
    for (const auto& r : side) {
      if (r.record.status != RunStatus::kOk) continue;  // failed runs have no throughput to compare
      const nlohmann::json key = without_keys(scenario_identity(r.record), options.ignore);
      auto it = std::find_if(groups.begin(), groups.end(), [&key](const auto& g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {&r}});
      } else {
        it->second.push_back(&r);
      }
    }
    return groups;
  };
  const auto base_groups = group_by_identity(baselines);
  const auto cand_groups = group_by_identity(candidates);
  // A candidate that did not finish is a failure of its own, never "nothing to compare".
  for (const auto& r : candidates) {
    if (r.record.status == RunStatus::kOk) continue;
    Comparison c;
    c.metric = options.metric;
    c.identity = scenario_identity(r.record);
    c.new_paths = {r.path};
    c.new_runs = 1;
    c.verdict = Verdict::kRunFailed;
    c.note = "status " + to_string(r.record.status) + (r.record.reason.empty() ? "" : ": " + r.record.reason);
    result.comparisons.push_back(std::move(c));
  }

  std::mt19937_64 rng(options.seed);
  for (const auto& group : cand_groups) {
    const nlohmann::json& key = group.first;  // not a structured binding: lambdas below capture it (C++17)
    const auto& cands = group.second;
    Comparison c;
    c.metric = options.metric;
    c.identity = scenario_identity(cands.front()->record);
    for (const auto* r : cands) c.new_paths.push_back(r->path);
    c.new_runs = static_cast<int64_t>(cands.size());
    const auto match = std::find_if(base_groups.begin(), base_groups.end(), [&key](const auto& g) { return g.first == key; });
    if (match == base_groups.end()) {
      // Same model on the other side but not the same scenario: say which keys differ, with both values, against the
      // baseline scenario nearest to it (the fewest differing keys; the first of those), whatever else was given.
      auto same_model = base_groups.end();
      for (auto g = base_groups.begin(); g != base_groups.end(); ++g) {
        if (g->first.value("model", "") != key.value("model", "")) continue;
        if (same_model == base_groups.end() ||
            identity_differences(g->first, key).size() < identity_differences(same_model->first, key).size()) {
          same_model = g;
        }
      }
      if (same_model == base_groups.end()) {
        c.verdict = Verdict::kNoBaseline;
      } else {
        c.verdict = Verdict::kNotComparable;
        c.differing_keys = identity_differences(same_model->first, key);
        c.differences = describe_differences(same_model->first, key);
        for (const auto* r : same_model->second) c.base_paths.push_back(r->path);
      }
      result.comparisons.push_back(c);
      continue;
    }
    for (const auto* r : match->second) c.base_paths.push_back(r->path);
    c.base_runs = static_cast<int64_t>(match->second.size());
    c.not_like_for_like = like_for_like_issues(match->second, cands);
    std::tie(c.base_bounded_by, c.base_factors) = side_bottleneck(match->second);
    std::tie(c.new_bounded_by, c.new_factors) = side_bottleneck(cands);
    c.bottleneck_change = bottleneck_change(c);
    // Throughput uses step times (each step trains the same samples on both sides, so throughput scales as 1 / mean
    // step time); any other metric its own per-epoch (or per-run) values.
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
    const double samples_per_step =
        throughput ? static_cast<double>(*batch) * static_cast<double>(cands.front()->record.scenario.grad_accumulation)
                   : 1.0;
    if (throughput) {
      c.base_samples_per_s = c.base_value = samples_per_step / base_mean * 1000.0;
      c.new_samples_per_s = c.new_value = samples_per_step / new_mean * 1000.0;
      c.metric_unit = throughput_unit(cands.front()->record);
      c.ratio = base_mean / new_mean;
    } else {
      c.base_value = base_mean;
      c.new_value = new_mean;
      c.ratio = base_mean != 0 ? new_mean / base_mean : (new_mean == 0 ? 1.0 : 0.0);
    }
    // The metric per run (throughput: samples/s from each run's mean step), for the run-level interval.
    std::vector<double> base_runs = run_means(base), cand_runs = run_means(cand);
    if (throughput) {
      for (double& v : base_runs) v = samples_per_step / v * 1000.0;
      for (double& v : cand_runs) v = samples_per_step / v * 1000.0;
    }
    const bool positive = std::all_of(base_runs.begin(), base_runs.end(), [](double v) { return v > 0; }) &&
                          std::all_of(cand_runs.begin(), cand_runs.end(), [](double v) { return v > 0; });
    const bool repeats = (base.size() > 1 || cand.size() > 1) && positive;
    const bool spread = std::any_of(base.begin(), base.end(), [](const auto& r) { return r.size() > 1; }) ||
                        std::any_of(cand.begin(), cand.end(), [](const auto& r) { return r.size() > 1; });
    if (repeats) {
      // Two or more runs on a side: the run is the unit, so the interval includes the variation between runs.
      std::tie(c.ci_low, c.ci_high) = run_level_interval(base_runs, cand_runs, options.confidence);
      c.interval_basis = "runs";
    } else if (!spread || base_mean == 0) {
      c.ci_low = c.ci_high = c.ratio;
      c.interval_basis = "none";
    } else {
      // One run per side: the steps (or epochs) of each run, resampled. This sees the jitter within a run, not the
      // difference between two runs of the same scenario, so the noise floor below applies.
      std::vector<double> ratios(static_cast<size_t>(options.resamples));
      for (auto& r : ratios) {
        const double b = resample_mean(base, rng), n = resample_mean(cand, rng);
        r = throughput ? b / n : n / b;
      }
      std::sort(ratios.begin(), ratios.end());
      const double tail = (1.0 - options.confidence) / 2.0 * 100.0;
      c.ci_low = percentile_sorted(ratios, tail);
      c.ci_high = percentile_sorted(ratios, 100.0 - tail);
      c.interval_basis = throughput ? "steps" : "epochs";
    }
    // Better and worse in the metric's direction; a regression is worse by more than the threshold.
    // With one value per side there is no interval: only a change beyond the threshold counts. With one run per
    // side, only a change beyond the noise floor does.
    const bool no_interval = c.interval_basis == "none";
    const bool single_runs = !repeats;
    bool up = no_interval ? c.ratio > 1.0 + options.threshold : c.ci_low > 1.0;
    bool down = no_interval ? c.ratio < 1.0 - options.threshold : c.ci_high < 1.0;
    if (single_runs && !no_interval && (up || down) && std::abs(c.ratio - 1.0) < options.noise_floor) {
      up = down = false;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%+.2f%% is within the %.1f%% noise floor of one run per side (the interval covers steps within "
                    "each run, not run-to-run variation)",
                    (c.ratio - 1) * 100, options.noise_floor * 100);
      c.note = buf;
    }
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
    // A host- or launch-bound run's speed is the host's as much as the GPU's: without repeats on both sides, a
    // change is not evidence about the GPU, driver or library.
    if (c.verdict != Verdict::kNoChange && (base.size() < 2 || cand.size() < 2)) {
      const std::string eb = host_bound_evidence(match->second, options.host_bound_utilisation);
      const std::string ec = host_bound_evidence(cands, options.host_bound_utilisation);
      if (!eb.empty() || !ec.empty()) {
        c.note = std::string("host-bound (") + (eb.empty() ? "" : "baseline: " + eb) +
                 (!eb.empty() && !ec.empty() ? "; " : "") + (ec.empty() ? "" : "candidate: " + ec) + "): a " +
                 (c.ratio > 1 ? "rise" : "fall") + " the GPU may not have caused; repeat both sides (--repeats 3)";
        c.verdict = Verdict::kInconclusive;
      }
    }
    // A run timed while other processes took the host's CPU (or its GPU) measured them too, repeats or not: its
    // difference says nothing about the device, driver or library until both sides ran on a quiet host.
    if (c.verdict != Verdict::kNoChange && c.verdict != Verdict::kInconclusive) {
      const std::string eb = busy_side_evidence(match->second), ec = busy_side_evidence(cands);
      if (!eb.empty() || !ec.empty()) {
        c.note = "busy host (" + (eb.empty() ? "" : "baseline " + eb) + (!eb.empty() && !ec.empty() ? "; " : "") +
                 (ec.empty() ? "" : "candidate " + ec) + "): a " + (c.ratio > 1 ? "rise" : "fall") +
                 " the host's other work may have caused; run both sides on a quiet host";
        c.verdict = Verdict::kInconclusive;
      }
    }
    result.comparisons.push_back(c);
  }
  std::vector<nlohmann::json> identities;
  for (const auto& c : result.comparisons) identities.push_back(c.identity);
  const std::vector<std::string> labels = scenario_labels(identities);
  for (size_t i = 0; i < labels.size(); ++i) result.comparisons[i].label = labels[i];
  return result;
}

}  // namespace gpubench
