#include "gpubench/core/record/telemetry.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <tuple>

namespace gpubench {

const std::vector<std::pair<uint64_t, std::string>>& clock_event_reason_names() {
  static const std::vector<std::pair<uint64_t, std::string>> names{
      {0x1, "gpu_idle"},          {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},       {0x10, "sync_boost"},         {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake"},  {0x100, "display_clocks"}};
  return names;
}

namespace {

using Getter = std::function<std::optional<double>(const TelemetrySample&)>;

struct Series {
  std::vector<std::pair<double, double>> points;  // (t, value)
  int64_t missing = 0;
};

Series collect(const std::vector<const TelemetrySample*>& window, const Getter& get) {
  Series s;
  for (const auto* x : window) {
    if (auto v = get(*x)) {
      s.points.emplace_back(x->t_s, *v);
    } else {
      ++s.missing;
    }
  }
  return s;
}

/// Time-weighted (trapezoidal) mean; the plain value for a single point.
std::optional<double> time_mean(const Series& s) {
  if (s.points.empty()) return std::nullopt;
  if (s.points.size() == 1) return s.points.front().second;
  double area = 0;
  for (size_t i = 1; i < s.points.size(); ++i) {
    area += 0.5 * (s.points[i].second + s.points[i - 1].second) * (s.points[i].first - s.points[i - 1].first);
  }
  const double span = s.points.back().first - s.points.front().first;
  if (span <= 0) {
    double sum = 0;
    for (const auto& p : s.points) sum += p.second;
    return sum / static_cast<double>(s.points.size());
  }
  return area / span;
}

std::optional<double> max_of(const Series& s) {
  if (s.points.empty()) return std::nullopt;
  double m = s.points.front().second;
  for (const auto& p : s.points) m = std::max(m, p.second);
  return m;
}

std::optional<double> min_of(const Series& s) {
  if (s.points.empty()) return std::nullopt;
  double m = s.points.front().second;
  for (const auto& p : s.points) m = std::min(m, p.second);
  return m;
}

}  // namespace

EpochTelemetry aggregate_epoch(const std::vector<TelemetrySample>& samples, double t_begin, double t_end,
                               int64_t epoch_samples) {
  EpochTelemetry out;
  std::vector<const TelemetrySample*> window;
  for (const auto& s : samples) {
    if (s.t_s >= t_begin && s.t_s <= t_end) window.push_back(&s);
  }
  out.samples = static_cast<int64_t>(window.size());
  if (window.empty()) return out;
  const double duration = t_end - t_begin;

  // One metric's readings in the window; readings that failed are counted as missing under `name`.
  auto series = [&](const char* name, const Getter& get) {
    Series s = collect(window, get);
    if (s.missing > 0) out.missing_readings[name] = s.missing;
    return s;
  };

  const Series power = series("power_w", [](const TelemetrySample& s) { return s.power_w; });
  out.power_avg_w = time_mean(power);
  // Peaks: an averaged reading (NVML's power usage is a ~1 s mean on A100/H100-class boards) hides them.
  const Series instant = collect(window, [](const TelemetrySample& s) { return s.power_instant_w; });
  if (!instant.points.empty()) {
    out.power_peak_w = max_of(instant);
    out.power_peak_source = "instantaneous";
  } else if (!power.points.empty()) {
    out.power_peak_w = max_of(power);
    out.power_peak_source = "averaged";
  }
  if (out.power_avg_w && duration > 0) out.energy_integrated_j = *out.power_avg_w * duration;

  const Series energy = series("energy_j", [](const TelemetrySample& s) { return s.energy_j; });
  if (energy.points.size() >= 2) {
    // Sum the increments; a decrease means the counter was reset, and that interval is left out.
    double used = 0, covered = 0;
    for (size_t i = 1; i < energy.points.size(); ++i) {
      const double de = energy.points[i].second - energy.points[i - 1].second;
      if (de >= 0) {
        used += de;
        covered += energy.points[i].first - energy.points[i - 1].first;
      }
    }
    if (covered > 0 && duration > 0) out.energy_counter_j = used * duration / covered;
  }
  if (out.energy_counter_j) {
    out.energy_j = out.energy_counter_j;
    out.energy_source = "counter";
    if (out.energy_integrated_j && *out.energy_counter_j > 0) {
      out.energy_disagreement_pct = (*out.energy_integrated_j - *out.energy_counter_j) / *out.energy_counter_j * 100;
    }
  } else if (out.energy_integrated_j) {
    out.energy_j = out.energy_integrated_j;
    out.energy_source = "integrated power";
  }
  if (out.energy_j && epoch_samples > 0) out.joules_per_sample = *out.energy_j / static_cast<double>(epoch_samples);

  const Series sm = series("sm_clock_mhz", [](const TelemetrySample& s) { return s.sm_clock_mhz; });
  out.sm_clock_avg_mhz = time_mean(sm);
  out.sm_clock_min_mhz = min_of(sm);
  out.mem_clock_avg_mhz = time_mean(series("mem_clock_mhz", [](const TelemetrySample& s) { return s.mem_clock_mhz; }));
  const Series temp = series("temperature_c", [](const TelemetrySample& s) { return s.temperature_c; });
  out.temperature_avg_c = time_mean(temp);
  out.temperature_peak_c = max_of(temp);
  out.gpu_util_avg_pct = time_mean(series("gpu_util_pct", [](const TelemetrySample& s) { return s.gpu_util_pct; }));
  out.mem_util_avg_pct = time_mean(series("mem_util_pct", [](const TelemetrySample& s) { return s.mem_util_pct; }));

  int64_t with_reasons = 0;
  std::map<std::string, int64_t> counts;
  for (const auto* s : window) {
    if (!s->clock_event_reasons) continue;
    ++with_reasons;
    for (const auto& [bit, name] : clock_event_reason_names()) {
      if (*s->clock_event_reasons & bit) ++counts[name];
    }
  }
  if (with_reasons < out.samples) out.missing_readings["clock_event_reasons"] = out.samples - with_reasons;
  if (with_reasons > 0) {
    for (const auto& [bit, name] : clock_event_reason_names()) {
      out.clock_event_fraction[name] = static_cast<double>(counts[name]) / static_cast<double>(with_reasons);
    }
  }
  return out;
}

EpochTelemetry combine_devices(const std::vector<EpochTelemetry>& per_device, int64_t job_samples) {
  EpochTelemetry out;
  out.devices = 0;
  // Adds `v` into `acc` (a sum over devices); a device without the figure leaves the total unknown.
  auto add = [](std::optional<double>& acc, const std::optional<double>& v, bool first) {
    if (first) acc = v;
    else if (acc && v) *acc += *v;
    else acc.reset();
  };
  auto mean_of = [&per_device](std::optional<double> EpochTelemetry::*field) -> std::optional<double> {
    double sum = 0;
    int n = 0;
    for (const auto& d : per_device) {
      if (d.*field) sum += *(d.*field), ++n;
    }
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
  };
  auto extreme_of = [&per_device](std::optional<double> EpochTelemetry::*field, bool max) -> std::optional<double> {
    std::optional<double> m;
    for (const auto& d : per_device) {
      if (d.*field && (!m || (max ? *(d.*field) > *m : *(d.*field) < *m))) m = d.*field;
    }
    return m;
  };
  std::map<std::string, double> fraction_sum;
  for (size_t i = 0; i < per_device.size(); ++i) {
    const EpochTelemetry& d = per_device[i];
    const bool first = i == 0;
    out.devices += d.devices;
    out.samples += d.samples;
    add(out.power_avg_w, d.power_avg_w, first);
    add(out.power_peak_w, d.power_peak_w, first);
    add(out.energy_counter_j, d.energy_counter_j, first);
    add(out.energy_integrated_j, d.energy_integrated_j, first);
    add(out.energy_j, d.energy_j, first);
    out.power_peak_source = first || d.power_peak_source == out.power_peak_source ? d.power_peak_source : "mixed";
    out.energy_source = first || d.energy_source == out.energy_source ? d.energy_source : "mixed";
    for (const auto& [name, f] : d.clock_event_fraction) fraction_sum[name] += f;
    for (const auto& [name, n] : d.missing_readings) out.missing_readings[name] += n;
  }
  if (out.energy_counter_j && out.energy_integrated_j && *out.energy_counter_j > 0) {
    out.energy_disagreement_pct = (*out.energy_integrated_j - *out.energy_counter_j) / *out.energy_counter_j * 100;
  }
  if (out.energy_j && job_samples > 0) out.joules_per_sample = *out.energy_j / static_cast<double>(job_samples);
  out.sm_clock_avg_mhz = mean_of(&EpochTelemetry::sm_clock_avg_mhz);
  out.sm_clock_min_mhz = extreme_of(&EpochTelemetry::sm_clock_min_mhz, false);
  out.mem_clock_avg_mhz = mean_of(&EpochTelemetry::mem_clock_avg_mhz);
  out.temperature_avg_c = mean_of(&EpochTelemetry::temperature_avg_c);
  out.temperature_peak_c = extreme_of(&EpochTelemetry::temperature_peak_c, true);
  out.gpu_util_avg_pct = mean_of(&EpochTelemetry::gpu_util_avg_pct);
  out.mem_util_avg_pct = mean_of(&EpochTelemetry::mem_util_avg_pct);
  for (const auto& [name, sum] : fraction_sum) {
    out.clock_event_fraction[name] = sum / static_cast<double>(per_device.size());
  }
  return out;
}

void infer_clocks_locked(TelemetryInfo& info, const std::vector<EpochTelemetry>& epochs) {
  if (info.clocks_locked.value_or(false)) return;
  for (const auto& e : epochs) {
    const auto it = e.clock_event_fraction.find("applications_clocks");
    if (it != e.clock_event_fraction.end() && it->second > 0.5) {
      info.clocks_locked = true;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "the applications-clocks/locked-clocks limit was active in %.0f%% of an epoch's readings",
                    it->second * 100);
      info.clocks_locked_evidence = buf;
      return;
    }
  }
}

std::string samples_to_csv(const std::vector<TelemetrySample>& samples) {
  std::string out = "t_s,power_w,power_instant_w,energy_j,sm_clock_mhz,mem_clock_mhz,temperature_c,gpu_util_pct,mem_util_pct,"
                    "clock_event_reasons\n";
  char buf[64];
  auto cell = [&](const std::optional<double>& v) {
    out += ',';
    if (v) {
      std::snprintf(buf, sizeof buf, "%.6g", *v);
      out += buf;
    }
  };
  for (const auto& s : samples) {
    std::snprintf(buf, sizeof buf, "%.4f", s.t_s);
    out += buf;
    cell(s.power_w);
    cell(s.power_instant_w);
    cell(s.energy_j);
    cell(s.sm_clock_mhz);
    cell(s.mem_clock_mhz);
    cell(s.temperature_c);
    cell(s.gpu_util_pct);
    cell(s.mem_util_pct);
    out += ',';
    if (s.clock_event_reasons) {
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(*s.clock_event_reasons));
      out += buf;
    }
    out += '\n';
  }
  return out;
}

// Member by member (not through JSON), so a field the serialiser forgets makes a round trip compare unequal.

}  // namespace gpubench
