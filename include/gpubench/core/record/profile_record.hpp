#pragma once
// The profile's summary as the record keeps it (`--profile`): device busy and idle time per step, time by kernel
// category, the top kernels and the matrix kernels' TFLOP/s. How it is computed from events is analysis/profile.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/json_optional.hpp"

namespace gpubench {

struct ProfileCategory {
  std::string category;        ///< an id from kernel_categories()
  double ms_per_step = 0;      ///< summed kernel time per step (ms)
  double fraction = 0;         ///< of all kernel time (0..1)
  double kernels_per_step = 0;
  bool operator==(const ProfileCategory& o) const = default;
};

struct ProfileKernel {
  std::string name;            ///< as the profiler names it (CUDA: the demangled kernel name, shortened)
  std::string category;
  double calls_per_step = 0;
  double ms_per_step = 0;
  double mean_us = 0;          ///< per call
  double fraction = 0;         ///< of all kernel time (0..1)
  bool operator==(const ProfileKernel& o) const = default;
};

/// Where the device waited: the idle gaps (over 1 us) between consecutive device work, summed by the kernel that ran
/// last before the gap and the one that started it (short names). A host that cannot keep the device fed shows here
/// (e.g. many short kernels whose launches take longer than they run).
struct ProfileGap {
  std::string after, before;   ///< the kernels on either side
  double ms_per_step = 0;      ///< idle time in these gaps per step (ms)
  double gaps_per_step = 0;    ///< how many such gaps per step
  bool operator==(const ProfileGap& o) const = default;
};

struct ProfileRecord {
  int64_t steps = 0;                  ///< steps profiled
  std::string when;                   ///< when they ran, e.g. after the timed epochs, and that they were not timed
  std::string source;                 ///< what was measured: "CUDA kernels (Kineto/CUPTI)" or "CPU operators (self time)"
  std::string trace_path;             ///< the Chrome trace (Perfetto, chrome://tracing); empty when not written
  double wall_ms_per_step = 0;        ///< host wall time of a profiled step (ms), profiler overhead included
  double busy_ms_per_step = 0;        ///< time the device ran at least one kernel or copy, per step (ms)
  double idle_ms_per_step = 0;        ///< the rest of the step: gaps between kernels (ms)
  double busy_fraction = 0;           ///< busy / (busy + idle), within the profiled steps
  /// busy / the median *timed* step: the profiler slows the host (CUPTI callbacks on every launch), so a GPU-bound
  /// step can look idle in the profile's own window; against the unprofiled step time it does not. The verdict uses
  /// this where present.
  std::optional<double> timed_step_ms;
  std::optional<double> busy_fraction_of_timed_step;
  double kernels_per_step = 0;        ///< kernels, copies and memsets per step
  double gaps_per_step = 0;           ///< idle gaps longer than 1 us between consecutive device work, per step
  double launch_api_ms_per_step = 0;  ///< host time in kernel-launch calls per step (CUDA; 0 on the CPU)
  std::vector<ProfileCategory> categories;  ///< every category with time, in kernel_categories() order
  std::vector<ProfileKernel> top_kernels;   ///< the kernels with most time, most first
  std::optional<double> matrix_tflops;      ///< model FLOPs per step / time in GEMM, convolution and attention kernels
  /// The same split: attention's matmul FLOPs / attention kernel time, and the rest / GEMM and convolution kernel time
  /// (where the model says how many of its FLOPs are attention's and both kinds of kernel ran).
  std::optional<double> gemm_tflops, attention_tflops;
  std::optional<double> matrix_peak_fraction;  ///< matrix_tflops / the precision's dense peak
  std::string peak_source;            ///< where that peak comes from (the run's peak_source)
  /// The largest of the device's idle gaps by the kernels around them, most first (device runs; last here so that
  /// positional initialisers of the fields above stay valid).
  std::vector<ProfileGap> idle_gaps;
  bool operator==(const ProfileRecord& o) const = default;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileCategory, category, ms_per_step, fraction, kernels_per_step)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileKernel, name, category, calls_per_step, ms_per_step, mean_us,
                                                fraction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileGap, after, before, ms_per_step, gaps_per_step)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileRecord, steps, when, source, trace_path, wall_ms_per_step,
                                                busy_ms_per_step, idle_ms_per_step, busy_fraction, timed_step_ms,
                                                busy_fraction_of_timed_step, kernels_per_step,
                                                gaps_per_step, launch_api_ms_per_step, idle_gaps, categories, top_kernels,
                                                matrix_tflops, gemm_tflops, attention_tflops, matrix_peak_fraction,
                                                peak_source)

}  // namespace gpubench
