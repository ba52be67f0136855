#pragma once
// The bottleneck verdict: what limits a run, decided from evidence already in its record (status, telemetry,
// communication wait, the input wait, and the kernel profile when `--profile` ran). docs/performance.md explains the
// rules and their thresholds; each verdict is tested on a record built to show it.

#include <string>

namespace gpubench {

struct RunRecord;

struct BottleneckVerdict {
  /// capacity | input | thermal | power | communication | launch | compute | memory; empty when the record holds
  /// too little evidence (a run without a profile whose telemetry shows nothing).
  std::string bounded_by;
  std::string evidence;  ///< one line: the figures behind the verdict, or what would give one
};

/// The tag an input pipeline sets (summary metric, a fraction of the timed epochs spent waiting for batches).
inline constexpr const char* kInputWaitTag = "input_wait_fraction";
/// mode: generate's roofline (summary metrics): the measured decode step against the larger of its bandwidth bound
/// (`decode_memory_bound_ms`) and compute bound (`decode_compute_bound_ms`), as a fraction.
inline constexpr const char* kDecodeBoundFractionTag = "decode_bound_fraction";

BottleneckVerdict diagnose_bottleneck(const RunRecord& r);

}  // namespace gpubench
