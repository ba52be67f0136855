#pragma once
// Sweeps: list-valued scenario flags (`--batch-size 32,64,128 --precision fp32,bf16`) expand into one run per
// combination, all checked before anything runs; `--batch-size max` searches for the largest batch that fits.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpubench {

struct SweepPoint {
  std::map<std::string, std::string> values;  ///< scenario key -> flag text, every override of this point
  std::map<std::string, std::string> swept;   ///< only the keys that vary across the sweep
  std::string label() const;                  ///< "batch_size=64,precision=bf16" (or "single" when none vary)
};

/// Cartesian product of comma-separated values, keys in `key_order` order (later keys vary fastest). Keys whose
/// values may contain commas (name, output, telemetry_trace) are never split. Throws std::invalid_argument for an
/// empty list item ("--batch-size 32,,64").
std::vector<SweepPoint> expand_sweep(const std::map<std::string, std::string>& overrides,
                                     const std::vector<std::string>& key_order);

/// Which batch sizes a search may answer: every integer, or the ladder 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (the powers
/// of two and the sizes halfway between them, in ratio steps of 1.33-1.5): fewer probes, and the grid `fit` and
/// `sweep` are compared on (docs/fit.md).
enum class BatchGrid { kExact, kLadder };

/// The ladder's sizes up to `limit` (ascending; 1 first).
std::vector<int64_t> batch_ladder(int64_t limit);

/// The largest ladder size at or below `batch` (0 for batch < 1).
int64_t ladder_at_or_below(int64_t batch);

/// The largest batch size in [1, limit] on `grid` for which `fits` is true, assuming fits is monotone (true up to
/// some size, false beyond): doubles from `start` (rounded down to the grid) until it fails, then bisects. Returns 0
/// if even 1 does not fit. `probes` (optional) receives every size tried, in order.
int64_t largest_fitting_batch(const std::function<bool(int64_t)>& fits, int64_t start, int64_t limit,
                              std::vector<int64_t>* probes = nullptr, BatchGrid grid = BatchGrid::kExact);

}  // namespace gpubench
