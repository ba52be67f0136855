#include "gpubench/core/record/stats.hpp"

#include <algorithm>
#include <tuple>
#include <cmath>
#include <numeric>

namespace gpubench {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted.front();
  const double pos = (q / 100.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

StepTimeStats summarize_step_times(std::vector<double> samples_ms) {
  StepTimeStats s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  const auto n = static_cast<double>(samples_ms.size());
  s.count = static_cast<int64_t>(samples_ms.size());
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / n;
  double ss = 0;
  for (double v : samples_ms) ss += (v - s.mean_ms) * (v - s.mean_ms);
  s.stdev_ms = samples_ms.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  s.median_ms = percentile_sorted(samples_ms, 50);
  s.p5_ms = percentile_sorted(samples_ms, 5);
  s.p95_ms = percentile_sorted(samples_ms, 95);
  s.min_ms = samples_ms.front();
  s.max_ms = samples_ms.back();
  return s;
}


}  // namespace gpubench
