#pragma once
// Summary statistics of step times.

#include <nlohmann/json.hpp>
#include <vector>

namespace gpubench {

/// Distribution of per-step times, in milliseconds.
struct StepTimeStats {
  int64_t count = 0;
  double mean_ms = 0, stdev_ms = 0, median_ms = 0, p5_ms = 0, p95_ms = 0, min_ms = 0, max_ms = 0;
  bool operator==(const StepTimeStats& o) const = default;
};

/// Summarises `samples_ms` (step durations in ms). Percentiles interpolate linearly (numpy's default);
/// stdev is the sample standard deviation (n-1). An empty input gives count 0 and zeros.
StepTimeStats summarize_step_times(std::vector<double> samples_ms);

/// Linear-interpolated percentile q in [0, 100] of an ascending-sorted, non-empty vector.
double percentile_sorted(const std::vector<double>& sorted, double q);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StepTimeStats, count, mean_ms, stdev_ms, median_ms, p5_ms,
                                                p95_ms, min_ms, max_ms)

}  // namespace gpubench
