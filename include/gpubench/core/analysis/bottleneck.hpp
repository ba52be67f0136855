#pragma once
// Bottleneck attribution: what each factor gpubench can see costs the timed step, as a share of its wall time, and
// the verdict (the largest share). Everything comes from the record itself (status, telemetry, the input wait,
// exposed communication, the model FLOPs against the device's achievable peak, the decode roofline, and the kernel
// profile when `--profile` ran), so records written before this model get the same answer a new run would.
// docs/bottleneck.md explains the model, its estimates and its limits.

#include <string>
#include <vector>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

/// The factors, in the order that breaks a tie (two shares within the noise margin): measured waits first, then the
/// clock readings, then the bounds from FLOPs and bytes, then the remainder, then NVML's sampled idle time.
const std::vector<std::string>& bottleneck_factor_names();

struct BottleneckVerdict {
  /// The factor with the largest share (ties within the margin broken by bottleneck_factor_names()' order); empty
  /// when the record holds too little evidence (a failed run, no timed steps, no telemetry and no profile).
  std::string bounded_by;
  std::string evidence;                  ///< one line: the top factors with their shares and figures
  std::vector<BottleneckFactor> factors;  ///< every factor with a share above zero, largest first
  double margin = 0;                      ///< shares closer than this to the top one tie with it (a fraction)
  std::vector<std::string> tied;          ///< the other factors within the margin of the top one
  /// Where the profile and the telemetry disagree by more than docs/bottleneck.md allows (runs with --profile).
  std::vector<std::string> disagreements;

  /// The factor named by bounded_by (nullptr without a verdict).
  const BottleneckFactor* verdict_factor() const;
};

/// The tag an input pipeline sets (summary metric, a fraction of the timed epochs spent waiting for batches).
inline constexpr const char* kInputWaitTag = "input_wait_fraction";
/// mode: generate's roofline (summary metrics): the measured decode step against the larger of its bandwidth bound
/// (`decode_memory_bound_ms`) and compute bound (`decode_compute_bound_ms`), as a fraction.
inline constexpr const char* kDecodeBoundFractionTag = "decode_bound_fraction";

/// The margin between two factors' shares for one to win over the other: 5 points of the step, or the run's own
/// step-time coefficient of variation where that is larger, up to 15 points (a host-bound run's shares move with its
/// step time; a larger coefficient comes from a few outlier steps).
inline constexpr double kMinimumShareMargin = 0.05;
inline constexpr double kMaximumShareMargin = 0.15;

BottleneckVerdict diagnose_bottleneck(const RunRecord& r);

/// The verdict written into the record (summary.bounded_by, bottleneck_evidence, bottleneck_factors).
void set_bottleneck(RunRecord& r);

/// "kernels 78 %, compute 19 %, power 3 %": the first `n` factors with their shares.
std::string format_top_factors(const std::vector<BottleneckFactor>& factors, size_t n = 3);

/// A factor's share, 0 when absent.
double factor_share(const std::vector<BottleneckFactor>& factors, const std::string& name);

}  // namespace gpubench
