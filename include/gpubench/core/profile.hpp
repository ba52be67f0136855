#pragma once
// A kernel-level profile of a few training steps (`--profile`) and its summary in the record: device busy and idle
// time per step, time by kernel category, the top kernels, the achieved TFLOP/s of the matrix kernels and the launch
// gaps. The engine collects the events (Kineto: CUPTI on CUDA, the operator profiler on the CPU); everything from
// the events on is here, torch-free, so it is tested on events built by hand.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/json_optional.hpp"

namespace gpubench {

/// One profiled event, as the engine hands it over (times on one clock, in ns).
struct ProfileEvent {
  enum class Kind {
    kKernel,     ///< a device kernel (CUDA: CUPTI's concurrent-kernel records)
    kMemcpy,     ///< a device copy (host<->device, device<->device)
    kMemset,     ///< a device memset
    kCpuOp,      ///< a CPU operator (aten::...); on a CPU run the leaf operators are the "kernels"
    kLaunchApi,  ///< a host-side kernel launch call (cudaLaunchKernel, cuLaunchKernel, ...)
    kStep,       ///< the marker around one profiled step
  };
  Kind kind = Kind::kKernel;
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  int64_t lane = 0;  ///< stream (device events) or thread (CPU operators)
};

/// The marker around each profiled step (gpubench's own; traces may also mark steps "ProfilerStep#N").
inline constexpr const char* kProfileStepMarker = "gpubench::profiled_step";
/// Whether a step marker's name is one: gpubench's, or torch.profiler's "ProfilerStep#N".
bool is_step_marker(const std::string& name);
/// Whether a CUDA runtime or driver call launches work (cudaLaunchKernel, cuLaunchKernel*, cudaGraphLaunch, ...).
bool is_launch_call(const std::string& name);

/// Kernel categories, in display order. Identifiers are stable (they are record keys).
const std::vector<std::pair<std::string, std::string>>& kernel_categories();  ///< {id, display name}
/// The category of a kernel or operator name: gemm_conv, attention, normalization, elementwise, reduction, optimizer,
/// memcpy, communication or other. Matching is by name, case-insensitive (docs/performance.md lists the patterns).
std::string kernel_category(const std::string& name);
/// Matrix-engine categories: GEMM/convolution and attention (their FLOPs are the model's FLOPs).
bool is_matrix_category(const std::string& category);
/// Memory-bound categories: elementwise, normalisation, reduction, optimizer and copies.
bool is_memory_category(const std::string& category);

struct ProfileCategory {
  std::string category;        ///< an id from kernel_categories()
  double ms_per_step = 0;      ///< summed kernel time per step (ms)
  double fraction = 0;         ///< of all kernel time (0..1)
  double kernels_per_step = 0;
  bool operator==(const ProfileCategory& o) const;
};

struct ProfileKernel {
  std::string name;            ///< as the profiler names it (CUDA: the demangled kernel name, shortened)
  std::string category;
  double calls_per_step = 0;
  double ms_per_step = 0;
  double mean_us = 0;          ///< per call
  double fraction = 0;         ///< of all kernel time (0..1)
  bool operator==(const ProfileKernel& o) const;
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
  bool operator==(const ProfileRecord& o) const;
};

struct ProfileInputs {
  int64_t steps = 0;
  double model_flops_per_step = 0;    ///< the MFU count (model.train_flops_per_sample x samples per step); 0 = unknown
  double attention_flops_per_step = 0;  ///< the part of it in attention's matmuls; 0 = unknown or none
  std::optional<double> peak_tflops;  ///< dense peak for the run's precision
  std::optional<double> timed_step_ms;  ///< the timed epochs' median step (ms), when known
  std::string peak_source;
  size_t top_kernels = 15;
};

/// Summarises the events of `in.steps` profiled steps. The window is from the first step marker's start to the end
/// of the last step marker or of the last device event, whichever is later (without markers: the events' extent).
/// Device events (kernels, copies, memsets) are the "kernels", and busy time is the union of their intervals. Without
/// any (a CPU run) every CPU operator is one, with its self time (its duration less its children's, as PyTorch's
/// self_cpu_time), and busy time is the union of the top-level operators: the rest is framework overhead.
ProfileRecord summarize_profile(const std::vector<ProfileEvent>& events, const ProfileInputs& in);

/// The events of a Chrome trace as Kineto writes it (gpubench's `<record>.trace.json`, PyTorch's
/// `torch.profiler` export_chrome_trace): kernels, copies, memsets, CPU operators, launch calls and step markers
/// ("gpubench::profiled_step" or torch.profiler's "ProfilerStep#N"). Throws std::runtime_error on a document that is
/// not a trace (no "traceEvents" array).
std::vector<ProfileEvent> events_from_chrome_trace(const nlohmann::json& trace);
/// How many step markers `events` holds.
int64_t count_steps(const std::vector<ProfileEvent>& events);

/// The category name for display ("GEMM/conv", "attention", ...); the id itself when unknown.
std::string category_display_name(const std::string& id);

/// A kernel name made readable: "void ", common namespaces and the parameter list dropped, at most 120 characters.
std::string short_kernel_name(const std::string& name);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileCategory, category, ms_per_step, fraction, kernels_per_step)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileKernel, name, category, calls_per_step, ms_per_step, mean_us,
                                                fraction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileRecord, steps, when, source, trace_path, wall_ms_per_step,
                                                busy_ms_per_step, idle_ms_per_step, busy_fraction, timed_step_ms,
                                                busy_fraction_of_timed_step, kernels_per_step,
                                                gaps_per_step, launch_api_ms_per_step, categories, top_kernels,
                                                matrix_tflops, gemm_tflops, attention_tflops, matrix_peak_fraction,
                                                peak_source)

}  // namespace gpubench
