#pragma once
// Step changes in a metric's history (a driver that made training 5 % slower, a LibTorch that sped it up).
//
// Method: binary segmentation with a permutation test. For a series x_1..x_n, the statistic at split k is Welch's
// |mean(x_1..k) - mean(x_k+1..n)| / sqrt(var_before/k + var_after/(n-k)) (segments of at least `min_segment`
// points), maximised over k. Its p-value is the share of `permutations` random shuffles of the same series (seeded)
// whose maximum is at least as large: under pure noise (exchangeable values) the order carries no information, so a
// series without a change is flagged with probability at most `alpha` (the documented false-alarm rate, 1 % by
// default). After a change is found, each side is searched again the same way.
//
// The newest runs (fewer than min_segment after a change: `min_after`). A permutation test cannot call a change on
// m points after it before the series has C(n, m) >= 1 / alpha orderings (one point: 100 runs), so the newest
// min_after points are tested against all runs before them (at least min_segment) with a Student t test on their
// means (the before runs' spread, n_before - 1 degrees of freedom); where it passes, the change is placed at the
// newest m < min_segment points that differ most. That test assumes roughly normal night-to-night noise; its false-alarm rate on the committed H200 A/A series
// is measured for each min_after in docs/guide.md ("A nightly CI history"; tests/core/analysis/changepoint_test.cpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpubench {

struct DetectOptions {
  double alpha = 0.01;        ///< false-alarm rate per series without a change
  int permutations = 999;     ///< shuffles for the p-value (its resolution is 1 / (permutations + 1))
  size_t min_segment = 5;     ///< points on each side of a change found by the permutation search
  /// The fewest newest points a change may have after it (1 to min_segment): below min_segment the tail test above
  /// looks at them, so a nightly learns of a change min_after nights after it instead of min_segment.
  size_t min_after = 5;
  uint64_t seed = 1;          ///< the same series always gives the same answer
};

struct ChangePoint {
  size_t index = 0;           ///< first point after the change (0-based)
  double before_mean = 0, after_mean = 0;
  double p_value = 1;
  bool recent = false;        ///< found by the tail test (fewer than min_segment points after it)
};

/// Changes found, ordered by index.
std::vector<ChangePoint> detect_changes(const std::vector<double>& series, const DetectOptions& options = {});

}  // namespace gpubench
