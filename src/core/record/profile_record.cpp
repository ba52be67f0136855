#include "gpubench/core/record/profile_record.hpp"

#include <tuple>

namespace gpubench {

bool ProfileCategory::operator==(const ProfileCategory& o) const {
  return std::tie(category, ms_per_step, fraction, kernels_per_step) ==
         std::tie(o.category, o.ms_per_step, o.fraction, o.kernels_per_step);
}
bool ProfileKernel::operator==(const ProfileKernel& o) const {
  return std::tie(name, category, calls_per_step, ms_per_step, mean_us, fraction) ==
         std::tie(o.name, o.category, o.calls_per_step, o.ms_per_step, o.mean_us, o.fraction);
}
bool ProfileGap::operator==(const ProfileGap& o) const {
  return std::tie(after, before, ms_per_step, gaps_per_step) ==
         std::tie(o.after, o.before, o.ms_per_step, o.gaps_per_step);
}
bool ProfileRecord::operator==(const ProfileRecord& o) const {
  return std::tie(steps, when, source, trace_path, wall_ms_per_step, busy_ms_per_step, idle_ms_per_step, busy_fraction,
                  timed_step_ms, busy_fraction_of_timed_step, kernels_per_step, gaps_per_step, launch_api_ms_per_step,
                  idle_gaps, categories, top_kernels, matrix_tflops, gemm_tflops, attention_tflops,
                  matrix_peak_fraction, peak_source) ==
         std::tie(o.steps, o.when, o.source, o.trace_path, o.wall_ms_per_step, o.busy_ms_per_step, o.idle_ms_per_step,
                  o.busy_fraction, o.timed_step_ms, o.busy_fraction_of_timed_step, o.kernels_per_step, o.gaps_per_step,
                  o.launch_api_ms_per_step, o.idle_gaps, o.categories, o.top_kernels, o.matrix_tflops, o.gemm_tflops,
                  o.attention_tflops, o.matrix_peak_fraction, o.peak_source);
}

}  // namespace gpubench
