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
};

/// kFaster / kSlower: better / worse in the metric's direction (faster / slower for throughput); kChanged: a
/// significant change of a metric with no better direction (power, clocks).
enum class Verdict { kFaster, kNoChange, kSlower, kRegression, kNotComparable, kNoBaseline, kChanged };
std::string to_string(Verdict v);


/// One scenario's baseline against its candidate.
struct Comparison {
  std::string label;                   ///< "resnet50 bs256 bf16 cuda:0"
  std::vector<std::string> base_paths, new_paths;
  double base_samples_per_s = 0, new_samples_per_s = 0;  ///< pooled throughput means (throughput comparisons)
  std::string metric = kThroughputTag;  ///< the metric's tag, name, unit hint and direction
  std::string metric_name = "throughput", metric_unit;
  Better better = Better::kHigher;
  double base_value = 0, new_value = 0;  ///< pooled means of the metric over the runs
  double ratio = 0;                    ///< new / base value of the metric (throughput: > 1 is faster)
  double ci_low = 0, ci_high = 0;      ///< confidence interval of `ratio`
  /// What was resampled: "runs and steps", "steps", "runs and epochs", "epochs", or "none" (one value per side: no
  /// interval, and only a change beyond the threshold is a verdict)
  std::string interval_basis;
  Verdict verdict = Verdict::kNoChange;
  std::vector<std::string> differing_keys;  ///< scenario keys that differ (not comparable)
  /// Why the two sides' conditions differ in a way that moves throughput (GPU model, power limit, clocks locked or
  /// not, other processes on the GPU), e.g. "power_limit_w: 700 -> 500"; empty = like-for-like.
  std::vector<std::string> not_like_for_like;
  bool like_for_like() const { return not_like_for_like.empty(); }
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
};

/// Pairs `candidates` with `baselines` by resolved scenario (repeats of one scenario are pooled), computes the
/// throughput ratio with a bootstrap confidence interval over runs and their steps, and gives each pair a verdict:
/// faster / slower when the interval excludes 1, regression when slower by more than the threshold,
/// not comparable when only the scenario differs (the keys are listed).
CompareResult compare_runs(const std::vector<LoadedRecord>& baselines, const std::vector<LoadedRecord>& candidates,
                           const CompareOptions& options);

/// The scenario keys that make two runs different experiments (everything but output paths and labels).
nlohmann::json comparable_scenario(const Scenario& s);

/// Tags of every metric the records hold (run or epoch level), in first-seen order.
std::vector<std::string> metric_tags(const std::vector<LoadedRecord>& records);


}  // namespace gpubench
