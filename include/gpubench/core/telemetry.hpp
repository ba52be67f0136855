#pragma once
// Telemetry data: raw samples from a power/clock reader, and their per-epoch aggregates for the record.
// Pure data and arithmetic; the readers and the sampling thread live in src/telemetry.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/json_optional.hpp"

namespace gpubench {

/// One reading of every metric a reader offers; a metric it could not read this time stays empty.
struct TelemetrySample {
  double t_s = 0;                              ///< seconds on the sampler's steady clock
  std::optional<double> power_w;               ///< board power (W); NVML reports an averaged value on A100+
  std::optional<double> energy_j;              ///< monotonic energy counter (J) since some origin
  std::optional<double> sm_clock_mhz, mem_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> gpu_util_pct, mem_util_pct;
  std::optional<uint64_t> clock_event_reasons; ///< NVML clocks-event (throttle) reason bits
};

/// Names of NVML's clocks-event reason bits, in bit order (bit 0 = gpu_idle).
const std::vector<std::pair<uint64_t, std::string>>& clock_event_reason_names();

/// Telemetry over one epoch.
struct EpochTelemetry {
  int64_t samples = 0;                             ///< readings that fell inside the epoch
  std::optional<double> power_avg_w, power_peak_w; ///< time-weighted mean and maximum (W)
  std::optional<double> energy_counter_j;          ///< from the hardware energy counter (J)
  std::optional<double> energy_integrated_j;       ///< from integrating power over the epoch (J)
  std::optional<double> energy_disagreement_pct;   ///< (integrated - counter) / counter x 100, when both exist
  std::optional<double> energy_j;                  ///< the counter's figure when present, else the integrated one
  std::string energy_source;                       ///< "counter", "integrated power" or ""
  std::optional<double> joules_per_sample;         ///< energy_j / samples trained in the epoch (J)
  std::optional<double> sm_clock_avg_mhz, sm_clock_min_mhz, mem_clock_avg_mhz;
  std::optional<double> temperature_avg_c, temperature_peak_c;
  std::optional<double> gpu_util_avg_pct, mem_util_avg_pct;
  std::map<std::string, double> clock_event_fraction;  ///< reason -> fraction of readings with it set (0..1)
  std::map<std::string, int64_t> missing_readings;     ///< metric -> readings where it could not be read
  bool operator==(const EpochTelemetry& o) const;
};

/// Static facts about the device and how it was sampled (the record's `telemetry` block).
struct TelemetryInfo {
  std::string reader;                  ///< "nvml", "rocm-smi", "rapl" or "none"
  bool available = false;
  std::string reason;                  ///< why no reader, or what a reader lacks
  double interval_s = 0;               ///< sampling period (s)
  std::string driver_version;          ///< e.g. NVIDIA "580.159.04"
  std::optional<double> power_limit_w; ///< enforced power limit (W)
  std::optional<bool> persistence_mode, ecc_enabled, mig_enabled;
  std::optional<int64_t> pcie_link_gen, pcie_link_width;
  std::optional<int64_t> nvlink_active_links;  ///< NVLinks up on this GPU (NVML); 0 = none, PCIe only
  std::string trace_path;              ///< the CSV of raw samples, when one was written
  bool operator==(const TelemetryInfo& o) const;
};

/// Aggregates the readings in [t_begin, t_end] (sampler clock, s) of an epoch that trained `epoch_samples`.
/// Energy figures cover the whole epoch: measured spans shorter than the epoch are scaled up to it.
EpochTelemetry aggregate_epoch(const std::vector<TelemetrySample>& samples, double t_begin, double t_end,
                               int64_t epoch_samples);

/// Raw samples as CSV (one header line, empty cells for missing readings), for plotting.
std::string samples_to_csv(const std::vector<TelemetrySample>& samples);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EpochTelemetry, samples, power_avg_w, power_peak_w,
                                                energy_counter_j, energy_integrated_j, energy_disagreement_pct,
                                                energy_j, energy_source, joules_per_sample, sm_clock_avg_mhz,
                                                sm_clock_min_mhz, mem_clock_avg_mhz, temperature_avg_c,
                                                temperature_peak_c, gpu_util_avg_pct, mem_util_avg_pct,
                                                clock_event_fraction, missing_readings)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TelemetryInfo, reader, available, reason, interval_s,
                                                driver_version, power_limit_w, persistence_mode, ecc_enabled,
                                                mig_enabled, pcie_link_gen, pcie_link_width,
                                                nvlink_active_links, trace_path)

}  // namespace gpubench
