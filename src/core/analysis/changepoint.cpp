#include "gpubench/core/analysis/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gpubench/core/analysis/compare.hpp"

namespace gpubench {

namespace {

struct Split {
  size_t k = 0;  ///< points before the split
  double stat = 0;
};

/// The largest Welch statistic over the splits of x with at least `min_segment` points on each side, from prefix
/// sums (O(n)).
Split best_split(const std::vector<double>& x, size_t min_segment) {
  const size_t n = x.size();
  Split best;
  if (n < 2 * min_segment) return best;
  std::vector<double> s(n + 1, 0.0), q(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    s[i + 1] = s[i] + x[i];
    q[i + 1] = q[i] + x[i] * x[i];
  }
  for (size_t k = min_segment; k + min_segment <= n; ++k) {
    const double n1 = static_cast<double>(k), n2 = static_cast<double>(n - k);
    const double m1 = s[k] / n1, m2 = (s[n] - s[k]) / n2;
    const double v1 = std::max(0.0, (q[k] - n1 * m1 * m1) / (n1 - 1));
    const double v2 = std::max(0.0, (q[n] - q[k] - n2 * m2 * m2) / (n2 - 1));
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
  const Split observed = best_split(series, o.min_segment);
  if (observed.k == 0 || observed.stat == 0) return;
  std::vector<double> shuffled = series;
  int as_large = 0;
  for (int p = 0; p < o.permutations; ++p) {
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    if (best_split(shuffled, o.min_segment).stat >= observed.stat) ++as_large;
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

/// The tail test: whether the newest min_after points differ from every point since the last change found before
/// them (at least min_segment): a Student t test on the means with the before points' variance (one test, so its
/// false-alarm rate is alpha under normal noise). Where it passes, the change is placed at the newest m points
/// (min_after <= m < min_segment) that differ most significantly.
std::optional<ChangePoint> recent_change(const std::vector<double>& x, size_t from, const DetectOptions& o) {
  const size_t first = std::clamp<size_t>(o.min_after, 1, o.min_segment);
  std::optional<ChangePoint> best;
  for (size_t m = first; m < o.min_segment && x.size() >= from + o.min_segment + m; ++m) {
    const auto b = x.begin() + static_cast<std::ptrdiff_t>(from), split = x.end() - static_cast<std::ptrdiff_t>(m);
    const double n1 = static_cast<double>(split - b), n2 = static_cast<double>(m);
    const double m1 = std::accumulate(b, split, 0.0) / n1, m2 = std::accumulate(split, x.end(), 0.0) / n2;
    double ss = 0;
    for (auto it = b; it != split; ++it) ss += (*it - m1) * (*it - m1);
    const double se = std::sqrt(ss / (n1 - 1)) * std::sqrt(1 / n1 + 1 / n2);
    const double scale = std::max(std::fabs(m1), std::fabs(m2));
    double p = 1;
    if (se > 1e-12 * std::max(scale, 1e-300)) {
      p = student_t_two_sided_p((m2 - m1) / se, n1 - 1);
    } else if (m1 != m2) {
      p = 0;  // no spread at all before: any difference is a change
    }
    if (m == first && p > o.alpha) return std::nullopt;  // the decision: the newest min_after points
    if (p <= o.alpha && (!best || p < best->p_value)) best = ChangePoint{x.size() - m, m1, m2, p, true};
  }
  return best;
}

}  // namespace

std::vector<ChangePoint> detect_changes(const std::vector<double>& series, const DetectOptions& options) {
  std::vector<ChangePoint> out;
  std::mt19937_64 rng(options.seed);
  search(series, 0, options, rng, out);
  std::sort(out.begin(), out.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // A change too recent for the permutation search: the newest points against everything since the last change
  // (which has min_segment points after it, so the newest fewer than min_segment are not yet searched).
  const size_t since = out.empty() ? 0 : out.back().index;
  if (auto recent = recent_change(series, since, options)) out.push_back(*recent);
  return out;
}

}  // namespace gpubench
