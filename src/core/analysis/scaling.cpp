#include "gpubench/core/analysis/scaling.hpp"

#include <algorithm>

namespace gpubench {

bool ScalingResult::all_ok() const {
  return std::all_of(points.begin(), points.end(), [](const ScalingPoint& p) { return p.ok(); });
}

void compute_scaling(ScalingResult& result) {
  double base_per_rank = 0;
  result.base_ranks = 0;
  for (auto& p : result.points) {
    if (!p.ok()) continue;
    const RunRecord& r = *p.record;
    const double rate = r.summary.samples_per_s;
    p.samples_per_s = rate;
    p.per_rank_samples_per_s = rate / static_cast<double>(p.ranks);
    if (result.base_ranks == 0) {
      base_per_rank = *p.per_rank_samples_per_s;
      result.base_ranks = p.ranks;
    }
    if (base_per_rank > 0) p.efficiency = rate / (static_cast<double>(p.ranks) * base_per_rank);
    double wait = 0, seconds = 0;
    if (r.distributed) {
      for (const auto& e : r.distributed->rank_comm_wait_seconds) wait += e.empty() ? 0 : e[0];
    }
    for (const auto& e : r.epochs) seconds += e.seconds;
    if (seconds > 0) p.comm_wait_fraction = wait / seconds;
  }
}

}  // namespace gpubench
