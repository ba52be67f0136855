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

#include "gpubench/core/record/profile_record.hpp"

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

}  // namespace gpubench
