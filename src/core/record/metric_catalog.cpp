#include "gpubench/core/record/metric_catalog.hpp"

#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>


namespace gpubench {

namespace {

/// Training epochs with steps have a loss; inference has none (its loss fields stay 0 in the record).
bool has_loss(const RunRecord& r, const EpochRecord& e) {
  return e.steps > 0 && parse_run_mode(r.scenario.mode) == RunMode::kTrain;
}

using Value = std::optional<double>;
using EpochGet = Value (*)(const RunRecord&, const EpochRecord&);
using RunGet = Value (*)(const RunRecord&);

/// "images/s" for a model that trains images.
constexpr const char* kSampleRate = "<samples>/s";

Value positive(double v) { return v > 0 ? Value(v) : std::nullopt; }
Value bytes(const std::optional<int64_t>& v) { return v ? Value(static_cast<double>(*v)) : std::nullopt; }
Value steps_known(const StepTimeStats& s, double v) { return s.count > 0 ? Value(v) : std::nullopt; }

/// A telemetry figure of one epoch (the job's totals in a multi-GPU run).
template <typename F>
Value telemetry(const EpochRecord& e, F f) {
  return e.telemetry ? f(*e.telemetry) : std::nullopt;
}

/// Highest per-epoch value over the run.
Value epoch_other_cores(const RunRecord&, const EpochRecord& e) {
  return e.host && e.host->seconds > 0 ? Value(other_cores(*e.host)) : std::nullopt;
}

Value run_max(const RunRecord& r, EpochGet get) {
  Value out;
  for (const auto& e : r.epochs) {
    if (const Value v = get(r, e)) out = out ? std::max(*out, *v) : *v;
  }
  return out;
}

/// Mean of per-epoch values weighted by epoch time; unset when any epoch lacks the figure.
Value run_time_weighted(const RunRecord& r, EpochGet get) {
  double sum = 0, seconds = 0;
  for (const auto& e : r.epochs) {
    const Value v = get(r, e);
    if (!v) return std::nullopt;
    sum += *v * e.seconds;
    seconds += e.seconds;
  }
  return seconds > 0 ? Value(sum / seconds) : std::nullopt;
}

/// Throttling reasons: the clock held down by power or heat (not idle, not application clocks).
constexpr const char* kThrottleReasons[] = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                                            "hw_thermal_slowdown", "hw_power_brake"};

struct Entry {
  MetricInfo info;
  EpochGet epoch = nullptr;  ///< null: not a per-epoch metric
  RunGet run = nullptr;      ///< null: not a per-run metric
};

Value epoch_sm_clock(const RunRecord&, const EpochRecord& e) {
  return telemetry(e, [](const EpochTelemetry& t) { return t.sm_clock_avg_mhz; });
}
Value epoch_temperature_peak(const RunRecord&, const EpochRecord& e) {
  return telemetry(e, [](const EpochTelemetry& t) { return t.temperature_peak_c; });
}
Value epoch_power_peak(const RunRecord&, const EpochRecord& e) {
  return telemetry(e, [](const EpochTelemetry& t) { return t.power_peak_w; });
}
Value epoch_gpu_util(const RunRecord&, const EpochRecord& e) {
  return telemetry(e, [](const EpochTelemetry& t) { return t.gpu_util_avg_pct; });
}
Value epoch_throttle(const RunRecord&, const EpochRecord& e) {
  return telemetry(e, [](const EpochTelemetry& t) -> Value {
    if (t.clock_event_fraction.empty()) return std::nullopt;
    double worst = 0;
    for (const char* reason : kThrottleReasons) {
      const auto it = t.clock_event_fraction.find(reason);
      if (it != t.clock_event_fraction.end()) worst = std::max(worst, it->second);
    }
    return worst;
  });
}

// The standard catalog: every metric derived from record fields, in display order. A new measured figure does not
// belong here: add it where it is measured with set_metric (metrics.hpp).
const std::vector<Entry>& catalog() {
  static const std::vector<Entry> entries{
      {{kThroughputTag, "throughput", kSampleRate, Better::kHigher, true, true, "samples trained per second"},
       [](const RunRecord&, const EpochRecord& e) { return e.steps > 0 ? positive(e.samples_per_s) : std::nullopt; },
       [](const RunRecord& r) { return r.summary.steps > 0 ? positive(r.summary.samples_per_s) : std::nullopt; }},
      {{"tokens_per_s", "token throughput", "tokens/s", Better::kHigher, true, true, "sequence models: tokens per second"},
       [](const RunRecord& r, const EpochRecord& e) {
         return r.model.tokens_per_sample > 0 && e.steps > 0
                    ? positive(e.samples_per_s * static_cast<double>(r.model.tokens_per_sample))
                    : std::nullopt;
       },
       [](const RunRecord& r) { return positive(r.summary.tokens_per_s); }},
      {{"steps_per_s", "optimizer steps per second", "it/s", Better::kHigher, true, true, "\"it/s\""},
       [](const RunRecord&, const EpochRecord& e) {
         return e.seconds > 0 && e.steps > 0 ? Value(static_cast<double>(e.steps) / e.seconds) : std::nullopt;
       },
       [](const RunRecord& r) { return positive(r.summary.steps_per_s); }},
      {{"epoch_seconds", "epoch time", "s", Better::kLower, true, true,
        "wall time of an epoch (the run: mean of its complete epochs)"},
       [](const RunRecord&, const EpochRecord& e) { return e.steps > 0 ? positive(e.seconds) : std::nullopt; },
       [](const RunRecord& r) { return positive(r.summary.epoch_seconds_mean); }},
      {{"step_time_median_ms", "step time median", "ms", Better::kLower, true, true, "median step time"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.median_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.median_ms); }},
      {{"step_time_mean_ms", "step time mean", "ms", Better::kLower, true, true, "mean step time"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.mean_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.mean_ms); }},
      {{"step_time_p5_ms", "step time p5", "ms", Better::kLower, true, true, "5th percentile step time"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.p5_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.p5_ms); }},
      {{"step_time_p95_ms", "step time p95", "ms", Better::kLower, true, true, "95th percentile step time"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.p95_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.p95_ms); }},
      {{"step_time_max_ms", "step time max", "ms", Better::kLower, true, true, "slowest step"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.max_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.max_ms); }},
      {{"step_time_stdev_ms", "step time stdev", "ms", Better::kLower, true, true, "sample standard deviation"},
       [](const RunRecord&, const EpochRecord& e) { return steps_known(e.step_time, e.step_time.stdev_ms); },
       [](const RunRecord& r) { return steps_known(r.summary.step_time, r.summary.step_time.stdev_ms); }},
      {{"achieved_tflops", "model TFLOP/s", "TFLOP/s", Better::kHigher, true, true,
        "throughput x analytic training FLOPs per sample"},
       [](const RunRecord& r, const EpochRecord& e) {
         return e.steps > 0 ? positive(e.samples_per_s * r.model.train_flops_per_sample / 1e12) : std::nullopt;
       },
       [](const RunRecord& r) { return positive(r.summary.achieved_tflops); }},
      {{"mfu", "MFU", "fraction", Better::kHigher, false, true, "model FLOP utilisation: achieved / dense peak"},
       nullptr, [](const RunRecord& r) { return r.summary.mfu; }},
      // An FP8 run's `mfu` is against the FP8 peak (twice bf16's on Hopper); this one puts FP8 and 16-bit runs of a
      // model on one footing.
      {{"mfu_bf16_peak", "MFU (bf16 peak)", "fraction", Better::kHigher, false, true,
        "achieved / the dense bf16 peak: comparable between fp8, bf16 and fp16 runs"},
       nullptr, [](const RunRecord& r) -> Value {
         if (r.precision.fp8) return positive(r.precision.fp8->mfu_bf16_peak);
         const std::string& p = r.precision.resolved;
         return p == "bf16" || p == "fp16" ? r.summary.mfu : std::nullopt;
       }},
      {{"peak_allocated_bytes", "peak allocated", "bytes", Better::kLower, true, true, "device memory held by tensors"},
       [](const RunRecord&, const EpochRecord& e) { return bytes(e.peak_allocated_bytes); },
       [](const RunRecord& r) { return bytes(r.summary.peak_allocated_bytes); }},
      {{"peak_reserved_bytes", "peak reserved", "bytes", Better::kLower, true, true,
        "device memory held by the caching allocator"},
       [](const RunRecord&, const EpochRecord& e) { return bytes(e.peak_reserved_bytes); },
       [](const RunRecord& r) { return bytes(r.summary.peak_reserved_bytes); }},
      {{"peak_host_rss_bytes", "peak RSS", "bytes", Better::kLower, true, true, "process resident set (CPU runs)"},
       [](const RunRecord&, const EpochRecord& e) { return bytes(e.peak_host_rss_bytes); },
       [](const RunRecord& r) { return bytes(r.summary.peak_host_rss_bytes); }},
      // What else the host did (record/host_activity.hpp): the run's figure is its busiest epoch's.
      {{"host_other_cpu_cores", "other processes' CPU", "cores", Better::kNeither, true, true,
        "CPU the host's other processes used while the epoch was timed (busy host: compare calls changes "
        "inconclusive)"},
       epoch_other_cores, [](const RunRecord& r) { return run_max(r, epoch_other_cores); }},
      {{"energy_j", "energy", "J", Better::kLower, true, true, "energy of the timed epochs, every GPU of the job"},
       [](const RunRecord&, const EpochRecord& e) {
         return telemetry(e, [](const EpochTelemetry& t) { return t.energy_j; });
       },
       [](const RunRecord& r) { return job_energy(r).energy_j; }},
      {{"joules_per_sample", "energy per sample", "J/sample", Better::kLower, true, true, "energy / samples trained"},
       [](const RunRecord&, const EpochRecord& e) {
         return telemetry(e, [](const EpochTelemetry& t) { return t.joules_per_sample; });
       },
       [](const RunRecord& r) { return job_energy(r).joules_per_sample; }},
      {{"power_avg_w", "power", "W", Better::kNeither, true, true, "mean board power, summed over the job's GPUs"},
       [](const RunRecord&, const EpochRecord& e) {
         return telemetry(e, [](const EpochTelemetry& t) { return t.power_avg_w; });
       },
       [](const RunRecord& r) { return job_energy(r).power_avg_w; }},
      {{"power_peak_w", "power peak", "W", Better::kNeither, true, true, "highest power reading"},
       epoch_power_peak, [](const RunRecord& r) { return run_max(r, epoch_power_peak); }},
      {{"sm_clock_avg_mhz", "SM clock", "MHz", Better::kNeither, true, true, "mean SM clock"},
       epoch_sm_clock, [](const RunRecord& r) { return run_time_weighted(r, epoch_sm_clock); }},
      {{"temperature_peak_c", "temperature peak", "C", Better::kNeither, true, true, "hottest reading"},
       epoch_temperature_peak, [](const RunRecord& r) { return run_max(r, epoch_temperature_peak); }},
      {{"gpu_util_avg_pct", "GPU utilisation", "%", Better::kNeither, true, true,
        "driver's utilisation: time a kernel ran"},
       epoch_gpu_util, [](const RunRecord& r) { return run_time_weighted(r, epoch_gpu_util); }},
      {{"throttle_fraction", "throttled", "fraction", Better::kLower, true, true,
        "readings with a power or thermal clock-event reason set (the worst reason)"},
       epoch_throttle, [](const RunRecord& r) { return run_max(r, epoch_throttle); }},
      {{"loss_first", "loss first", "", Better::kNeither, true, false, "loss of the epoch's first step"},
       [](const RunRecord& r, const EpochRecord& e) { return has_loss(r, e) ? Value(e.loss_first) : std::nullopt; },
       nullptr},
      {{"loss_last", "loss last", "", Better::kNeither, true, false, "loss of the epoch's last step"},
       [](const RunRecord& r, const EpochRecord& e) { return has_loss(r, e) ? Value(e.loss_last) : std::nullopt; },
       nullptr},
      {{"skipped_steps", "skipped steps", "count", Better::kLower, true, false,
        "fp16 steps the loss scaler skipped"},
       [](const RunRecord& r, const EpochRecord& e) {
         return r.precision.loss_scaling ? Value(static_cast<double>(e.skipped_steps)) : std::nullopt;
       },
       nullptr},
      {{"warmup_seconds", "warm-up time", "s", Better::kLower, false, true, "untimed warm-up, autotuning included"},
       nullptr, [](const RunRecord& r) { return r.summary.warmup_steps > 0 ? Value(r.summary.warmup_seconds) : std::nullopt; }},
      {{"throughput_drift_pct", "throughput drift", "%", Better::kNeither, false, true,
        "last complete epoch against the first"},
       nullptr, [](const RunRecord& r) { return r.summary.throughput_drift_pct; }},
      {{"sm_clock_drift_pct", "SM clock drift", "%", Better::kNeither, false, true,
        "last complete epoch against the first"},
       nullptr, [](const RunRecord& r) { return r.summary.sm_clock_drift_pct; }},
      {{"temperature_drift_c", "temperature drift", "C", Better::kNeither, false, true,
        "last complete epoch against the first"},
       nullptr, [](const RunRecord& r) { return r.summary.temperature_drift_c; }},
  };
  return entries;
}

Metric make(const RunRecord& r, const MetricInfo& info, double value) {
  return Metric{info.tag, info.name, info.unit == kSampleRate ? throughput_unit(r) : info.unit, info.better, value};
}

void append_extras(Metrics& out, const Metrics& extras) {
  for (const auto& m : extras) {
    if (!is_standard_metric(m.tag) && std::isfinite(m.value)) set_metric(out, m);
  }
}

}  // namespace

bool is_rate_unit(const std::string& unit) {
  return unit != "TFLOP/s" && unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0;
}

std::string throughput_unit(const RunRecord& r) {
  return (r.model.sample_unit.empty() ? std::string("samples") : r.model.sample_unit) + "/s";
}

const std::vector<MetricInfo>& standard_metrics() {
  static const std::vector<MetricInfo> infos = [] {
    std::vector<MetricInfo> out;
    for (const auto& e : catalog()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

bool is_standard_metric(const std::string& tag) {
  const auto& c = catalog();
  return std::any_of(c.begin(), c.end(), [&tag](const Entry& e) { return e.info.tag == tag; });
}

Metrics epoch_metrics(const RunRecord& r, const EpochRecord& e) {
  Metrics out;
  for (const auto& entry : catalog()) {
    if (entry.epoch == nullptr) continue;
    const Value v = entry.epoch(r, e);
    if (v && std::isfinite(*v)) out.push_back(make(r, entry.info, *v));
  }
  append_extras(out, e.metrics);
  return out;
}

Metrics run_metrics(const RunRecord& r) {
  Metrics out;
  for (const auto& entry : catalog()) {
    if (entry.run == nullptr) continue;
    const Value v = entry.run(r);
    if (v && std::isfinite(*v)) out.push_back(make(r, entry.info, *v));
  }
  append_extras(out, r.summary.metrics);
  return out;
}

Metrics extra_metrics_only(Metrics metrics) {
  Metrics out;  // one entry per tag, as set_metric keeps them (a list read from a file may repeat a tag)
  for (auto& m : metrics) {
    if (!is_standard_metric(m.tag)) set_metric(out, std::move(m));
  }
  return out;
}

}  // namespace gpubench
