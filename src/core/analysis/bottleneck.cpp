#include "gpubench/core/analysis/bottleneck.hpp"

#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>

#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/reference/device_table.hpp"

namespace gpubench {

namespace {

// Where the profile and the telemetry may differ before the record says they disagree (docs/bottleneck.md).
constexpr double kIdleAgreement = 0.10;     // NVML's idle share against the profile's, in points of the step
constexpr double kComputeAgreement = 0.05;  // matrix-kernel time below the FLOPs' time at the achievable peak
constexpr double kSmallestShare = 0.005;    // a factor below half a point of the step is not listed

using text::num;
std::string pct(double fraction) { return num("%.0f %%", fraction * 100.0); }

/// The largest fraction of readings, over the epochs, in which any of `reasons` held the clock down.
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

double metric_value(const RunRecord& r, const char* tag) {
  const Metric* m = find_metric(r.summary.metrics, tag);
  return m != nullptr ? m->value : 0.0;
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

/// The attribution being built: factors by name, each added at most once.
class Attribution {
 public:
  void add(const std::string& factor, double share, std::string evidence, std::string method) {
    share = std::clamp(share, 0.0, 1.0);
    if (!(share >= kSmallestShare)) return;  // below half a point: noise in the readings, not a cost
    factors_.push_back(BottleneckFactor{factor, share, std::move(evidence), std::move(method)});
  }
  std::vector<BottleneckFactor> ranked() const {
    std::vector<BottleneckFactor> out = factors_;
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
    return out;
  }

 private:
  std::vector<BottleneckFactor> factors_;
};

/// The time-based part every run with telemetry or a profile has: waits, device idle and the clock deficit. Returns
/// the share left to the device's kernels at their maximum clock.
struct StepSplit {
  double input = 0, communication = 0, idle = 0, busy = 1, clock_loss = 0;
  std::optional<double> nvml_idle, profile_idle;
  bool any_evidence = false;
};

StepSplit split_step(const RunRecord& r, bool generate) {
  StepSplit s;
  s.input = std::clamp(metric_value(r, kInputWaitTag), 0.0, 1.0);
  s.communication = std::clamp(exposed_communication(r).value_or(0.0), 0.0, 1.0 - s.input);
  const auto util = telemetry_mean(r, [](const EpochTelemetry& t) { return t.gpu_util_avg_pct; });
  if (util) s.nvml_idle = std::clamp(1.0 - *util / 100.0 - s.input - s.communication, 0.0, 1.0);
  if (r.profile) {
    const ProfileRecord& p = *r.profile;
    const double busy = p.busy_fraction_of_timed_step.value_or(p.busy_fraction);
    s.profile_idle = std::clamp(1.0 - busy, 0.0, 1.0);
  }
  // The profile times the gaps between kernels; NVML samples whether a kernel ran. A decode step's idle time is part
  // of its distance to the roofline (below), not a factor of its own.
  if (!generate) s.idle = s.profile_idle ? *s.profile_idle : s.nvml_idle.value_or(0.0);
  s.idle = std::min(s.idle, 1.0 - s.input - s.communication);
  s.busy = 1.0 - s.input - s.communication - s.idle;
  if (generate && util) s.busy = std::min(s.busy, *util / 100.0);
  const auto clock = telemetry_mean(r, [](const EpochTelemetry& t) { return t.sm_clock_avg_mhz; });
  if (clock && r.telemetry.max_sm_clock_mhz && *r.telemetry.max_sm_clock_mhz > 0) {
    const double deficit = std::max(0.0, 1.0 - *clock / static_cast<double>(*r.telemetry.max_sm_clock_mhz));
    s.clock_loss = s.busy * deficit;
  }
  // A decode step's roofline is evidence of its own: the measured step against its bound, with or without telemetry.
  s.any_evidence = generate || util.has_value() || clock.has_value() || r.profile.has_value() || s.input > 0 ||
                   s.communication > 0;
  return s;
}

/// The clock deficit, split between the reasons NVML gave for it in proportion to how often each held.
void add_clock_factors(Attribution& a, const RunRecord& r, double loss) {
  if (!(loss > 0)) return;
  const auto clock = telemetry_mean(r, [](const EpochTelemetry& t) { return t.sm_clock_avg_mhz; });
  const std::string clock_text = num("SM clock %.0f MHz", clock.value_or(0)) + " of " +
                                 std::to_string(r.telemetry.max_sm_clock_mhz.value_or(0)) + " MHz max";
  const double power = worst_reason(r, {"sw_power_cap", "hw_power_brake"});
  const double thermal = worst_reason(r, {"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown"});
  const double setting = worst_reason(r, {"applications_clocks_setting"});
  const double all = power + thermal + setting;
  const std::string method = "busy share x the clock deficit (an upper bound: memory-bound kernels lose less)";
  if (power > 0) {
    std::string ev = clock_text + "; the power cap held the clock in " + pct(power) + " of the readings";
    if (const auto w = telemetry_mean(r, [](const EpochTelemetry& x) { return x.power_avg_w; })) {
      ev += "; " + num("%.0f W", *w / static_cast<double>(std::max<int64_t>(1, r.summary.power_devices)));
      if (r.telemetry.power_limit_w) ev += " of a " + num("%.0f W", *r.telemetry.power_limit_w) + " limit";
    }
    a.add("power", loss * power / all, ev, method);
  }
  if (thermal > 0) {
    std::string ev = clock_text + "; thermal slowdown held the clock in " + pct(thermal) + " of the readings";
    if (const auto t = telemetry_mean(r, [](const EpochTelemetry& x) { return x.temperature_peak_c; })) {
      ev += "; peak temperature " + num("%.0f C", *t);
    }
    a.add("thermal", loss * thermal / all, ev, method);
  }
  if (setting > 0) {
    a.add("clock", loss * setting / all,
          clock_text + "; application clocks (a locked or set clock) held it in " + pct(setting) + " of the readings",
          method);
  }
  if (!(all > 0)) a.add("clock", loss, clock_text + "; NVML named no reason (boost headroom, idle gaps)", method);
}

/// The achievable peak for the run's precision on one device: the device table's measured ceiling where it has one,
/// else its datasheet dense peak (what the run's MFU is against). Returns {TFLOP/s, where from}.
std::optional<std::pair<double, std::string>> achievable_peak(const RunRecord& r) {
  const std::string& precision = r.precision.resolved;
  const DeviceSpec* spec = find_device_spec(r.environment.device_name);
  if (spec != nullptr) {
    if (const auto measured = spec->measured_peak_tflops(precision); measured && *measured > 0) {
      return std::make_pair(*measured, "the measured " + precision + " GEMM ceiling (" + spec->measured_source + ")");
    }
  }
  std::optional<double> datasheet = spec != nullptr ? spec->peak_tflops(precision) : std::nullopt;
  if (!datasheet && r.summary.peak_tflops) datasheet = *r.summary.peak_tflops;  // a table this build does not have
  if (!datasheet || *datasheet <= 0) return std::nullopt;
  return std::make_pair(*datasheet, "the datasheet's dense " + precision +
                                        " peak (no measured ceiling for this device and precision: the share is a "
                                        "lower bound)");
}

/// Training and inference steps: the model's FLOPs at the achievable peak (compute), and with a profile the
/// memory-bound kernels' time (memory); the rest of the kernel time is `kernels`. Returns the compute share the
/// FLOPs need (for the profile's cross-check).
void add_kernel_factors(Attribution& a, BottleneckVerdict& v, const RunRecord& r, const StepSplit& s) {
  const double kernels = std::max(0.0, s.busy - s.clock_loss);
  double compute = 0;
  const double devices = r.distributed ? static_cast<double>(std::max<int64_t>(1, r.distributed->world_size)) : 1.0;
  const double achieved = r.summary.achieved_tflops / devices;  // the model's FLOPs per device (TFLOP/s)
  if (achieved > 0) {
    if (const auto peak = achievable_peak(r)) {
      const double fraction = achieved / peak->first;
      compute = std::min(kernels, fraction);
      std::string ev = num("model FLOPs at %.0f TFLOP/s", achieved) + (devices > 1 ? " per device" : "") + ", " +
                       pct(fraction) + " of an achievable " + num("%.0f TFLOP/s", peak->first);
      if (fraction > kernels + 1e-9) ev += " (above what the busy time allows: the ceiling is low for this step)";
      a.add("compute", compute, ev, "model FLOPs / " + peak->second);
    }
  }
  double memory = 0, matrix = 0;
  const ProfileCategory* largest_memory = nullptr;
  if (r.profile) {
    for (const auto& c : r.profile->categories) {
      if (is_matrix_category(c.category)) matrix += c.fraction;
      if (is_memory_category(c.category)) {
        memory += c.fraction;
        if (largest_memory == nullptr || c.fraction > largest_memory->fraction) largest_memory = &c;
      }
    }
    std::string ev = "memory-bound kernels (elementwise, normalisation, reductions, optimizer, copies) take " +
                     pct(memory) + " of kernel time";
    if (largest_memory != nullptr) {
      ev += ", the largest " + category_display_name(largest_memory->category) + " " + pct(largest_memory->fraction);
    }
    a.add("memory", kernels * memory, ev, "kernel profile: memory-bound categories' share of the busy time");
    const double matrix_share = kernels * matrix;
    if (compute > 0 && matrix_share + kComputeAgreement < compute) {
      v.disagreements.push_back("GEMM/conv and attention kernels take " + pct(matrix_share) +
                                " of the step, less than the model's FLOPs need at the achievable peak (" +
                                pct(compute) + "): the FLOP count or the ceiling is off");
    }
  }
  const double rest = kernels - compute - kernels * memory;
  std::string ev = "kernels fill " + pct(kernels) + " of the step at the maximum clock";
  if (compute > 0) ev += "; the model's FLOPs need " + pct(compute) + " at the achievable peak";
  if (r.profile) {
    ev += "; the rest: GEMM/conv and attention kernels below that peak (" + pct(matrix) + " of kernel time";
    if (r.profile->matrix_tflops) ev += num(" at %.0f TFLOP/s", *r.profile->matrix_tflops);
    ev += ") and kernels of no known category";
  } else {
    ev += "; the rest are memory-bound kernels or matrix kernels below that peak (--profile splits them)";
  }
  a.add("kernels", rest, ev,
        r.profile ? "busy time less compute and memory (kernel profile)"
                  : "busy time less the FLOPs' time at the achievable peak (NVML utilisation)");
}

/// Whether --cuda-graph could run where `r` ran: gpubench's CUDA backend (records before the backend was recorded ran
/// on CUDA or the CPU).
bool can_capture_graphs(const RunRecord& r) {
  const std::string& b = r.environment.backend;
  return b.empty() ? r.environment.device_type == "cuda" : b == "cuda";
}

/// mode: generate: the decode step against its roofline. The bound's side gets the bound's share; the distance to
/// it is the fixed cost of the step's many small kernels (eager: the host's launches), which is `launch`.
void add_roofline_factors(Attribution& a, const RunRecord& r, const StepSplit& s, double fraction) {
  const double memory_ms = metric_value(r, "decode_memory_bound_ms"), compute_ms = metric_value(r, "decode_compute_bound_ms");
  const bool compute_side = compute_ms > memory_ms;
  const double kernels = std::max(0.0, s.busy - s.clock_loss);
  const double bound = std::min(std::max(0.0, fraction), kernels);
  const std::string ev = num("decode step %.3f ms", metric_value(r, "decode_step_ms")) + " against a " +
                         (compute_side ? "compute" : "bandwidth") +
                         num(" bound of %.3f ms", std::max(memory_ms, compute_ms)) + " (" + pct(fraction) +
                         num("): %.2f GB read per step", metric_value(r, "decode_step_bytes") / 1e9) +
                         num(" at a measured %.0f GB/s", metric_value(r, "copy_bandwidth_gb_per_s"));
  a.add(compute_side ? "compute" : "memory", bound, ev, "decode roofline (mode: generate)");
  std::string far = "the decode step's distance to its roofline, " + pct(1.0 - bound - s.clock_loss) + " of it";
  far += r.execution.mode == "cuda_graph" ? ": the fixed cost of its many small kernels (CUDA graph)"
         : can_capture_graphs(r)          ? ": the host's kernel launches (eager; --cuda-graph removes them)"
                                          : ": the host's operator launches (eager)";
  if (s.nvml_idle) far += "; NVML saw the device idle " + pct(1.0 - s.busy) + " of the time";
  a.add("launch", 1.0 - bound - s.clock_loss, far, "decode roofline: 1 - bound share - clock loss");
}

void add_idle_factor(Attribution& a, BottleneckVerdict& v, const RunRecord& r, const StepSplit& s) {
  const bool cpu = r.environment.device_type == "cpu";
  if (s.profile_idle) {
    const ProfileRecord& p = *r.profile;
    std::string ev = (cpu ? "the CPU ran no operator " : "the device ran no kernel ") + pct(s.idle) + " of the " +
                     (p.busy_fraction_of_timed_step ? "timed median step" : "profiled step") + " (" +
                     num("%.0f", p.kernels_per_step) + (cpu ? " operators" : " kernels") + " per step";
    if (p.launch_api_ms_per_step > 0) ev += ", " + num("%.2f ms", p.launch_api_ms_per_step) + " in launch calls";
    ev += cpu                      ? "): framework overhead between operators"
          : can_capture_graphs(r) ? "): the host does not keep it fed; --cuda-graph removes launch gaps"
                                  : "): the host does not keep it fed";
    if (!cpu && !p.idle_gaps.empty()) {
      const ProfileGap& g = p.idle_gaps.front();
      ev += "; the longest waits (" + num("%.2f ms", g.ms_per_step) + " per step) come after " + g.after +
            " and before " + g.before;
    }
    a.add("launch", s.idle, ev, "kernel profile: idle time between kernels / the timed step");
    if (s.nvml_idle && std::abs(*s.nvml_idle - *s.profile_idle) > kIdleAgreement) {
      v.disagreements.push_back("device idle " + pct(*s.profile_idle) + " in the profile, " + pct(*s.nvml_idle) +
                                " by NVML's utilisation (more than " + pct(kIdleAgreement) + " apart)");
    }
  } else if (s.nvml_idle) {
    a.add("launch", s.idle,
          "NVML saw no kernel running " + pct(s.idle) +
              " of the time: host launches or synchronisation (coarse; --profile times the gaps)",
          "NVML utilisation");
  }
}

/// The run's own step-time noise: the coefficient of variation of its timed steps, at most kMaximumShareMargin (a
/// larger one comes from a few outlier steps, not from shares that moved).
double step_noise(const RunRecord& r) {
  const StepTimeStats& st = r.summary.step_time;
  const double cv = st.mean_ms > 0 && st.count > 1 ? st.stdev_ms / st.mean_ms : 0.0;
  return std::min(cv, kMaximumShareMargin);
}

size_t priority(const std::string& factor) {
  const auto& names = bottleneck_factor_names();
  return static_cast<size_t>(std::find(names.begin(), names.end(), factor) - names.begin());
}

}  // namespace

const std::vector<std::string>& bottleneck_factor_names() {
  static const std::vector<std::string> names = {"capacity", "input",   "communication", "thermal", "power",
                                                 "clock",    "memory",  "compute",       "kernels", "launch"};
  return names;
}

const BottleneckFactor* BottleneckVerdict::verdict_factor() const {
  for (const auto& f : factors) {
    if (f.factor == bounded_by) return &f;
  }
  return nullptr;
}

double factor_share(const std::vector<BottleneckFactor>& factors, const std::string& name) {
  for (const auto& f : factors) {
    if (f.factor == name) return f.share;
  }
  return 0.0;
}

std::string format_top_factors(const std::vector<BottleneckFactor>& factors, size_t n) {
  std::string out;
  for (size_t i = 0; i < factors.size() && i < n; ++i) {
    out += (out.empty() ? "" : ", ") + factors[i].factor + " " + pct(factors[i].share);
  }
  return out;
}

BottleneckVerdict diagnose_bottleneck(const RunRecord& r) {
  BottleneckVerdict v;
  if (r.status == RunStatus::kOom) {
    v.bounded_by = "capacity";
    v.evidence = "out of device memory at batch " +
                 (r.scenario.batch_size ? std::to_string(*r.scenario.batch_size) : std::string("?")) +
                 (r.reason.empty() ? std::string() : ": " + r.reason);
    v.factors = {BottleneckFactor{"capacity", 1.0, v.evidence, "run status"}};
    return v;
  }
  if (r.status != RunStatus::kOk && r.status != RunStatus::kInterrupted) {
    v.evidence = "no verdict: the run ended " + to_string(r.status);
    return v;
  }
  if (r.summary.steps <= 0) {
    v.evidence = "no verdict: no timed steps";
    return v;
  }
  const Metric* roofline = find_metric(r.summary.metrics, kDecodeBoundFractionTag);
  const StepSplit s = split_step(r, roofline != nullptr);
  if (!s.any_evidence) {
    v.evidence = "no verdict: no telemetry and no kernel profile (a telemetry reader or --profile gives one)";
    return v;
  }
  Attribution a;
  if (s.input > 0) {
    std::string ev = "the device waited for its batch " + pct(s.input) + " of the timed epochs";
    const std::string unit = r.model.sample_unit.empty() ? "samples" : r.model.sample_unit;
    if (const Metric* cap = find_metric(r.summary.metrics, "loader_img_per_s"); cap != nullptr) {
      ev += "; the loader's workers can deliver " + num("%.0f ", cap->value) + unit + "/s, the run trained " +
            num("%.0f ", r.summary.samples_per_s) + unit + "/s";
    }
    if (r.data && r.data->data_only) ev += " (data_only: no model step, so the input is all there is)";
    a.add("input", s.input, ev, "input pipeline's measured wait");
  }
  if (s.communication > 0) {
    a.add("communication", s.communication,
          "ranks waited for gradient all-reduces " + pct(s.communication) + " of the epoch (" +
              std::to_string(r.distributed->world_size) + " ranks, " + r.distributed->backend + ")",
          "measured all-reduce wait / epoch time, over ranks");
  }
  add_clock_factors(a, r, s.clock_loss);
  if (roofline != nullptr) {
    add_roofline_factors(a, r, s, roofline->value);
  } else {
    add_idle_factor(a, v, r, s);
    add_kernel_factors(a, v, r, s);
  }
  v.factors = a.ranked();
  if (v.factors.empty()) {
    v.evidence = "no verdict: no factor has a share";
    return v;
  }
  v.margin = std::max(kMinimumShareMargin, step_noise(r));
  // The top factor, and every factor within the margin of it: the tie goes to the first in the fixed order, so
  // identical runs whose shares swap within their noise keep one verdict.
  const double top = v.factors.front().share;
  std::string winner = v.factors.front().factor;
  for (const auto& f : v.factors) {
    if (top - f.share < v.margin && priority(f.factor) < priority(winner)) winner = f.factor;
  }
  for (const auto& f : v.factors) {
    if (f.factor != winner && top - f.share < v.margin) v.tied.push_back(f.factor);
  }
  v.bounded_by = winner;
  v.evidence = format_top_factors(v.factors) + " of the step. " + winner + ": " + v.verdict_factor()->evidence;
  if (!v.tied.empty()) {
    std::string others;
    for (const auto& t : v.tied) others += (others.empty() ? "" : ", ") + t;
    v.evidence += ". Within " + pct(v.margin) + " of it (the run's noise): " + others;
  }
  for (const auto& d : v.disagreements) v.evidence += ". Profile and telemetry disagree: " + d;
  return v;
}

void set_bottleneck(RunRecord& r) {
  BottleneckVerdict v = diagnose_bottleneck(r);
  r.summary.bounded_by = std::move(v.bounded_by);
  r.summary.bottleneck_evidence = std::move(v.evidence);
  r.summary.bottleneck_factors = std::move(v.factors);
}

}  // namespace gpubench
