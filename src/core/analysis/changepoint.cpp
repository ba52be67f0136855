#include "gpubench/core/analysis/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace gpubench {

namespace {

struct Split {
  size_t k = 0;  ///< points before the split
  double stat = 0;
};

/// The largest Welch statistic over the allowed splits of x (at least `min_before` points before, `min_after` after),
/// from prefix sums (O(n)).
Split best_split(const std::vector<double>& x, size_t min_before, size_t min_after) {
  const size_t n = x.size();
  Split best;
  if (n < min_before + min_after) return best;
  std::vector<double> s(n + 1, 0.0), q(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    s[i + 1] = s[i] + x[i];
    q[i + 1] = q[i] + x[i] * x[i];
  }
  for (size_t k = min_before; k + min_after <= n; ++k) {
    const double n1 = static_cast<double>(k), n2 = static_cast<double>(n - k);
    const double m1 = s[k] / n1, m2 = (s[n] - s[k]) / n2;
    double v1 = k > 1 ? std::max(0.0, (q[k] - n1 * m1 * m1) / (n1 - 1)) : 0.0;
    double v2 = n - k > 1 ? std::max(0.0, (q[n] - q[k] - n2 * m2 * m2) / (n2 - 1)) : 0.0;
    if (k == 1) v1 = v2;  // one point has no spread of its own: the other side's stands in
    if (n - k == 1) v2 = v1;
    const double se = std::sqrt(v1 / n1 + v2 / n2);
    const double scale = std::max(std::fabs(m1), std::fabs(m2));
    // A series with no spread at all: any difference is a change; none is none.
    const double stat = se > 1e-12 * std::max(scale, 1e-300) ? std::fabs(m1 - m2) / se
                                                              : (std::fabs(m1 - m2) > 0 ? INFINITY : 0.0);
    if (stat > best.stat) best = Split{k, stat};
  }
  return best;
}

void search(const std::vector<double>& series, size_t offset, const DetectOptions& o, std::mt19937_64& rng,
            std::vector<ChangePoint>& out) {
  const size_t after = std::clamp<size_t>(o.min_after, 1, std::max<size_t>(o.min_segment, 1));
  const Split observed = best_split(series, o.min_segment, after);
  if (observed.k == 0 || observed.stat == 0) return;
  std::vector<double> shuffled = series;
  int as_large = 0;
  for (int p = 0; p < o.permutations; ++p) {
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    if (best_split(shuffled, o.min_segment, after).stat >= observed.stat) ++as_large;
  }
  const double p_value = (as_large + 1.0) / (o.permutations + 1.0);
  if (p_value > o.alpha) return;
  const size_t k = observed.k;
  const auto mean = [](auto b, auto e) { return std::accumulate(b, e, 0.0) / static_cast<double>(e - b); };
  out.push_back(ChangePoint{offset + k, mean(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(k)),
                            mean(series.begin() + static_cast<std::ptrdiff_t>(k), series.end()), p_value});
  search(std::vector<double>(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(k)), offset, o, rng, out);
  search(std::vector<double>(series.begin() + static_cast<std::ptrdiff_t>(k), series.end()), offset + k, o, rng, out);
}

}  // namespace

std::vector<ChangePoint> detect_changes(const std::vector<double>& series, const DetectOptions& options) {
  std::vector<ChangePoint> out;
  std::mt19937_64 rng(options.seed);
  search(series, 0, options, rng, out);
  std::sort(out.begin(), out.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

}  // namespace gpubench
