#include "gpubench/core/analysis/bottleneck.hpp"

#include "core/text.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

namespace {

// Thresholds (docs/performance.md, "The bottleneck verdict").
constexpr double kInputWait = 0.05;      // waiting for batches beyond 5 % of the timed epochs
constexpr double kThermal = 0.20;        // thermal slowdown in a fifth of the readings
constexpr double kPowerCap = 0.50;       // the power cap holding the clock in half of them...
constexpr double kClockDeficit = 0.03;   // ...and the clock at least 3 % below its maximum (else it barely costs)
constexpr double kCommunication = 0.10;  // exposed communication beyond 10 % of the epoch
constexpr double kLaunchBusy = 0.75;     // the device idle for more than a quarter of the step
constexpr double kUtilisation = 80.0;    // NVML: a kernel running less than 80 % of the time (no profile)
constexpr double kComputeMfu = 0.35;     // model FLOPs at 35 % of the dense peak or more (no profile)
constexpr double kRoofline = 0.50;       // generate: a decode step within 2x of its roofline bound

using text::num;
std::string pct(double fraction) { return num("%.0f %%", fraction * 100.0); }

/// The largest fraction of readings, over the complete epochs, in which any of `reasons` held the clock down.
double worst_reason(const RunRecord& r, std::initializer_list<const char*> reasons) {
  double worst = 0;
  for (const auto& e : r.epochs) {
    if (!e.telemetry) continue;
    for (const char* reason : reasons) {
      const auto it = e.telemetry->clock_event_fraction.find(reason);
      if (it != e.telemetry->clock_event_fraction.end()) worst = std::max(worst, it->second);
    }
  }
  return worst;
}

/// Mean over epochs of a telemetry value, if any epoch has it.
template <typename Get>
std::optional<double> telemetry_mean(const RunRecord& r, Get get) {
  double sum = 0;
  int n = 0;
  for (const auto& e : r.epochs) {
    if (!e.telemetry) continue;
    const std::optional<double> v = get(*e.telemetry);
    if (!v) continue;
    sum += *v;
    ++n;
  }
  return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

std::string clock_evidence(const RunRecord& r) {
  const auto clock = telemetry_mean(r, [](const EpochTelemetry& t) { return t.sm_clock_avg_mhz; });
  if (!clock) return {};
  std::string s = "; SM clock " + num("%.0f MHz", *clock);
  if (r.telemetry.max_sm_clock_mhz) s += " of " + std::to_string(*r.telemetry.max_sm_clock_mhz) + " MHz max";
  return s;
}

/// Exposed communication: the ranks' mean wait for all-reduces as a fraction of the epoch time.
std::optional<double> exposed_communication(const RunRecord& r) {
  if (!r.distributed || r.distributed->world_size < 2) return std::nullopt;
  double wait = 0, seconds = 0;
  const auto& d = *r.distributed;
  for (size_t e = 0; e < d.rank_comm_wait_seconds.size() && e < d.rank_epoch_seconds.size(); ++e) {
    for (size_t k = 0; k < d.rank_comm_wait_seconds[e].size() && k < d.rank_epoch_seconds[e].size(); ++k) {
      wait += d.rank_comm_wait_seconds[e][k];
      seconds += d.rank_epoch_seconds[e][k];
    }
  }
  return seconds > 0 ? std::optional<double>(wait / seconds) : std::nullopt;
}

BottleneckVerdict from_profile(const RunRecord& r, const ProfileRecord& p) {
  const bool cpu = r.environment.device_type == "cpu";
  const std::string device = cpu ? "the CPU" : "the GPU";
  // Against the unprofiled (timed) step where known: the profiler's own host overhead must not make a GPU-bound
  // step look launch-bound.
  const bool timed = p.busy_fraction_of_timed_step.has_value() && p.timed_step_ms.has_value();
  const double busy_fraction = timed ? *p.busy_fraction_of_timed_step : p.busy_fraction;
  const double step_ms = timed ? *p.timed_step_ms : p.wall_ms_per_step;
  const std::string of_step = timed ? "the timed median step" : "each profiled step";
  if (busy_fraction < kLaunchBusy) {
    std::string ev = device + " ran " + (cpu ? "operators" : "kernels") + " for only " + pct(busy_fraction) + " of " +
                     of_step + " (" + num("%.2f ms", p.busy_ms_per_step) + " of " + num("%.2f ms", step_ms) + "; " +
                     num("%.0f", p.kernels_per_step) + (cpu ? " operators" : " kernels") + " per step";
    if (p.launch_api_ms_per_step > 0) ev += ", " + num("%.2f ms", p.launch_api_ms_per_step) + " in launch calls";
    ev += cpu ? "): framework overhead between operators"
              : "): the host does not keep it fed; --cuda-graph removes launch gaps";
    if (!cpu && !p.idle_gaps.empty()) {
      const ProfileGap& g = p.idle_gaps.front();
      ev += "; the longest waits (" + num("%.2f ms", g.ms_per_step) + " per step) come after " + g.after +
            " and before " + g.before;
    }
    return {"launch", ev};
  }
  double matrix = 0, memory = 0;
  const ProfileCategory* largest_memory = nullptr;
  for (const auto& c : p.categories) {
    if (is_matrix_category(c.category)) matrix += c.fraction;
    if (is_memory_category(c.category)) {
      memory += c.fraction;
      if (largest_memory == nullptr || c.fraction > largest_memory->fraction) largest_memory = &c;
    }
  }
  const std::string busy = device + " busy " + pct(busy_fraction) + " of " + of_step;
  if (matrix >= memory && matrix > 0) {
    std::string ev = "GEMM/conv and attention kernels take " + pct(matrix) + " of kernel time";
    if (p.matrix_tflops) {
      ev += " at " + num("%.0f TFLOP/s", *p.matrix_tflops);
      if (p.matrix_peak_fraction) ev += " (" + pct(*p.matrix_peak_fraction) + " of the dense peak)";
    }
    return {"compute", ev + "; " + busy};
  }
  if (memory > 0) {
    std::string ev = "memory-bound kernels (elementwise, normalisation, reductions, optimizer, copies) take " +
                     pct(memory) + " of kernel time";
    if (largest_memory != nullptr) {
      ev += ", the largest " + category_display_name(largest_memory->category) + " " + pct(largest_memory->fraction);
    }
    return {"memory", ev + "; " + busy};
  }
  return {"", "the profile has no kernel of a known category"};
}

/// mode: generate: the decode step against its roofline. Within 2x of the bound, the bound's side (memory: the
/// bytes every step reads at the measured copy rate; compute: its FLOPs at the dense peak); further from it, the
/// fixed cost of the step's many small kernels (eager: their host launches) is what limits it.
BottleneckVerdict from_roofline(const RunRecord& r, double fraction) {
  const auto value = [&r](const char* tag) {
    const Metric* m = find_metric(r.summary.metrics, tag);
    return m != nullptr ? m->value : 0.0;
  };
  const double memory = value("decode_memory_bound_ms"), compute = value("decode_compute_bound_ms");
  const bool compute_side = compute > memory;
  std::string ev = num("decode step %.3f ms", value("decode_step_ms")) + " against a " +
                   (compute_side ? "compute" : "bandwidth") + num(" bound of %.3f ms", std::max(memory, compute)) +
                   " (" + pct(fraction) + num("): %.2f GB read per step", value("decode_step_bytes") / 1e9) +
                   num(" at a measured %.0f GB/s", value("copy_bandwidth_gb_per_s"));
  if (fraction >= kRoofline) return {compute_side ? "compute" : "memory", ev};
  ev += r.execution.mode == "cuda_graph" ? "; far from the bound with the step in a CUDA graph: its many small kernels"
                                         : "; far from the bound and eager: the host's kernel launches";
  return {"launch", ev};
}

}  // namespace

BottleneckVerdict diagnose_bottleneck(const RunRecord& r) {
  if (r.status == RunStatus::kOom) {
    return {"capacity", "out of device memory at batch " +
                            (r.scenario.batch_size ? std::to_string(*r.scenario.batch_size) : std::string("?")) +
                            (r.reason.empty() ? std::string() : ": " + r.reason)};
  }
  if (r.status != RunStatus::kOk && r.status != RunStatus::kInterrupted) {
    return {"", "no verdict: the run ended " + to_string(r.status)};
  }
  if (r.summary.steps <= 0) return {"", "no verdict: no timed steps"};

  if (const Metric* wait = find_metric(r.summary.metrics, kInputWaitTag); wait != nullptr && wait->value > kInputWait) {
    std::string ev = "the device waited for its batch " + pct(wait->value) + " of the timed epochs";
    const std::string unit = r.model.sample_unit.empty() ? "samples" : r.model.sample_unit;
    if (const Metric* cap = find_metric(r.summary.metrics, "loader_img_per_s"); cap != nullptr) {
      ev += "; the loader's workers can deliver " + num("%.0f ", cap->value) + unit + "/s, the run trained " +
            num("%.0f ", r.summary.samples_per_s) + unit + "/s";
    }
    if (r.data && r.data->data_only) ev += " (data_only: no model step, so the input is all there is)";
    return {"input", ev};
  }
  const double thermal = worst_reason(r, {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"});
  if (thermal >= kThermal) {
    std::string ev = "thermal slowdown held the clock down in " + pct(thermal) + " of the readings";
    if (const auto t = telemetry_mean(r, [](const EpochTelemetry& x) { return x.temperature_peak_c; })) {
      ev += "; peak temperature " + num("%.0f C", *t);
    }
    return {"thermal", ev + clock_evidence(r)};
  }
  const double power = worst_reason(r, {"sw_power_cap", "hw_power_brake"});
  const auto clock = telemetry_mean(r, [](const EpochTelemetry& t) { return t.sm_clock_avg_mhz; });
  const bool clock_held = !clock || !r.telemetry.max_sm_clock_mhz ||
                          *clock < (1.0 - kClockDeficit) * static_cast<double>(*r.telemetry.max_sm_clock_mhz);
  if (power >= kPowerCap && clock_held) {
    std::string ev = "the power cap held the clock down in " + pct(power) + " of the readings";
    const auto w = telemetry_mean(r, [](const EpochTelemetry& x) { return x.power_avg_w; });
    if (w) ev += "; " + num("%.0f W", *w / std::max<int64_t>(1, r.summary.power_devices));
    if (w && r.telemetry.power_limit_w) ev += " of a " + num("%.0f W", *r.telemetry.power_limit_w) + " limit";
    return {"power", ev + clock_evidence(r)};
  }
  if (const auto comm = exposed_communication(r); comm && *comm >= kCommunication) {
    return {"communication", "ranks waited for gradient all-reduces " + pct(*comm) + " of the epoch (" +
                                 std::to_string(r.distributed->world_size) + " ranks, " + r.distributed->backend + ")"};
  }
  if (const Metric* f = find_metric(r.summary.metrics, kDecodeBoundFractionTag); f != nullptr) return from_roofline(r, f->value);
  if (r.profile) return from_profile(r, *r.profile);

  const auto util = telemetry_mean(r, [](const EpochTelemetry& t) { return t.gpu_util_avg_pct; });
  if (util && *util < kUtilisation) {
    return {"launch", "NVML saw a kernel running " + num("%.0f %%", *util) +
                          " of the time (coarse; --profile measures the gaps between kernels)"};
  }
  if (r.summary.mfu && *r.summary.mfu >= kComputeMfu) {
    return {"compute", "model FLOPs at " + pct(*r.summary.mfu) + " of the dense peak (" + r.summary.peak_source + ")"};
  }
  return {"", "no verdict without a kernel profile: run with --profile"};
}

}  // namespace gpubench
