#pragma once
// Step changes in a metric's history (a driver that made training 5 % slower, a LibTorch that sped it up).
//
// Method: binary segmentation with a permutation test. For a series x_1..x_n, the statistic at split k is Welch's
// |mean(x_1..k) - mean(x_k+1..n)| / sqrt(var_before/k + var_after/(n-k)) (segments of at least `min_segment`
// points), maximised over k. Its p-value is the share of `permutations` random shuffles of the same series (seeded)
// whose maximum is at least as large: under pure noise (exchangeable values) the order carries no information, so a
// series without a change is flagged with probability at most `alpha` (the documented false-alarm rate, 1 % by
// default). After a change is found, each side is searched again the same way. The false-alarm rate measured on the
// committed H200 A/A series for each min_after is in docs/nightly.md (tests/core/analysis/changepoint_test.cpp).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpubench {

struct DetectOptions {
  double alpha = 0.01;        ///< false-alarm rate per series without a change
  int permutations = 999;     ///< shuffles for the p-value (its resolution is 1 / (permutations + 1))
  size_t min_segment = 5;     ///< points before a change (and after it, unless min_after says fewer)
  /// Points after a change, at least (1 to min_segment): fewer finds a change sooner (a nightly learns of it after
  /// min_after nights), at the same false-alarm rate (the permutation test holds it whatever the split sizes) but
  /// with less power for small changes. A side of one point borrows the other side's variance.
  size_t min_after = 5;
  uint64_t seed = 1;          ///< the same series always gives the same answer
};

struct ChangePoint {
  size_t index = 0;           ///< first point after the change (0-based)
  double before_mean = 0, after_mean = 0;
  double p_value = 1;
};

/// Changes found, ordered by index.
std::vector<ChangePoint> detect_changes(const std::vector<double>& series, const DetectOptions& options = {});

}  // namespace gpubench
