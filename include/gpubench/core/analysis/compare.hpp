#pragma once
// Comparing two sets of run records (a baseline and a candidate) with a verdict that is not fooled by noise.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {

struct CompareOptions {
  double threshold = 0.02;   ///< a significant slowdown larger than this fraction is a regression
  double confidence = 0.95;  ///< two-sided confidence level of the interval
  int resamples = 2000;      ///< bootstrap resamples
  uint64_t seed = 1;         ///< bootstrap seed: the same inputs give the same interval
  /// The metric compared (a tag of metrics.hpp); its direction says which way is better. Throughput resamples
  /// step times; any other metric resamples its per-epoch values (or one value per run for run-only metrics).
  std::string metric = kThroughputTag;
  /// One run per side: no verdict for a change smaller than this fraction (the interval then covers the steps of one
  /// run, not the variation between runs). A/A repeats on the H200 (results/2026-12-01-h200-aa-noise) differed by at
  /// most 1.5 % between single GPU-bound runs.
  double noise_floor = 0.02;
  /// NVML's GPU utilisation (%, mean over the timed epochs) below which a run's speed depends on its host (launch-
  /// bound): a difference that repeats on both sides do not separate is then inconclusive.
  double host_bound_utilisation = 95.0;
  /// Identity keys left out of the pairing, e.g. device_model to compare two chips on purpose (still marked NOT
  /// like-for-like).
  std::vector<std::string> ignore;
};

/// kFaster / kSlower: better / worse in the metric's direction (faster / slower for throughput); kChanged: a
/// significant change of a metric with no better direction (power, clocks).
/// kNotComparable: not the same scenario (the identities differ; the keys are listed); kInconclusive: a difference
/// that cannot be told from the host's noise (host- or launch-bound runs, not separated by repeats on both sides).
/// kRunFailed: a candidate run that did not finish ok (crashed, OOM, non-finite loss, interrupted): a failure in its
/// own right, whatever the baseline (a nightly whose training run died must not pass).
enum class Verdict {
  kFaster, kNoChange, kSlower, kRegression, kNotComparable, kNoBaseline, kChanged, kInconclusive, kRunFailed
};
std::string to_string(Verdict v);


/// One scenario's baseline against its candidate.
struct Comparison {
  /// The candidate's scenario: scenario_labels of the compared identities ("resnet50 bs256 fp16 (amp) train eager,
  /// NVIDIA H200"), with the keys that tell it from another shown scenario when two would read the same.
  std::string label;
  nlohmann::json identity;             ///< the candidate side's scenario identity (analysis/identity.hpp)
  std::vector<std::string> base_paths, new_paths;
  double base_samples_per_s = 0, new_samples_per_s = 0;  ///< pooled throughput means (throughput comparisons)
  std::string metric = kThroughputTag;  ///< the metric's tag, name, unit hint and direction
  std::string metric_name = "throughput", metric_unit;
  Better better = Better::kHigher;
  double base_value = 0, new_value = 0;  ///< pooled means of the metric over the runs
  double ratio = 0;                    ///< new / base value of the metric (throughput: > 1 is faster)
  double ci_low = 0, ci_high = 0;      ///< confidence interval of `ratio`
  /// How the interval was made: "runs" (two or more runs on a side: a Welch t interval on the runs' log values, so it
  /// includes the variation between runs), "steps" or "epochs" (one run per side: a bootstrap within the run, which
  /// does not see run-to-run variation, so the noise floor applies), or "none" (one value per side).
  std::string interval_basis;
  int64_t base_runs = 0, new_runs = 0;
  /// Why the verdict is what it is when the numbers alone do not say: within the noise floor, host-bound, ...
  std::string note;
  Verdict verdict = Verdict::kNoChange;
  std::vector<std::string> differing_keys;  ///< identity keys that differ (not the same scenario)
  std::vector<std::string> differences;     ///< the same with both values: "world_size: 1 -> 2"
  /// Why the two sides' conditions differ in a way that moves throughput (GPU model, power limit, clocks locked or
  /// not, other processes on the GPU), e.g. "power_limit_w: 700 -> 500"; empty = like-for-like.
  std::vector<std::string> not_like_for_like;
  bool like_for_like() const { return not_like_for_like.empty(); }
  /// Each side's bottleneck attribution (analysis/bottleneck.hpp), decided from its records as read: the verdict
  /// most of its runs give, and each factor's mean share over its runs, largest first. Empty without a verdict.
  std::string base_bounded_by, new_bounded_by;
  std::vector<BottleneckFactor> base_factors, new_factors;
  /// When the two sides' verdicts differ: "kernels -> power (power 3 % -> 20 %)"; empty otherwise.
  std::string bottleneck_change;
};

/// The environment differences between the two sides ("driver_version: 580.1 -> 590.2") and whether the
/// comparison is still like-for-like (same device, build type and power limit).
struct EnvironmentDiff {
  std::vector<std::string> differences;
  bool like_for_like = true;
};

/// The verdict in the metric's words: "faster"/"slower" for rates, "better"/"worse" for other directed metrics,
/// "higher"/"lower" for a significant change of an undirected one.
std::string verdict_text(const Comparison& c);

struct CompareResult {
  std::string metric = kThroughputTag;
  std::vector<Comparison> comparisons;
  EnvironmentDiff environment;
  bool any_regression() const;
  bool any(Verdict v) const;
};

/// Pairs `candidates` with `baselines` by scenario identity (analysis/identity.hpp; repeats of one scenario are
/// pooled), computes the metric's ratio with a confidence interval, and gives each pair a verdict: faster / slower
/// when the interval excludes 1 (and, with one run per side, the change exceeds the noise floor), regression when
/// worse by more than the threshold, inconclusive when host-bound runs differ without repeats on both sides to
/// separate it, not the same scenario when the identities differ (the keys are listed), no baseline when the other
/// side has no run of the model. Each candidate run that did not finish ok is its own kRunFailed comparison, with
/// the record's status and reason as its note.
CompareResult compare_runs(const std::vector<LoadedRecord>& baselines, const std::vector<LoadedRecord>& candidates,
                           const CompareOptions& options);

/// The scenario keys that make two runs different experiments (everything but output paths and labels). Kept for
/// records' scenario alone; pairing uses scenario_identity, which adds what the run resolved to and where it ran.
nlohmann::json comparable_scenario(const Scenario& s);

/// The two-sided Student t quantile for `confidence` with `df` degrees of freedom (e.g. 0.95, 4 -> 2.776).
double student_t_quantile(double confidence, double df);
/// The two-sided p-value of a Student t statistic `t` with `df` degrees of freedom (P(|T| >= |t|)).
double student_t_two_sided_p(double t, double df);

/// Tags of every metric the records hold (run or epoch level), in first-seen order.
std::vector<std::string> metric_tags(const std::vector<LoadedRecord>& records);


}  // namespace gpubench
