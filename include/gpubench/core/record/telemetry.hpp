#pragma once
// Telemetry data: raw samples from a power/clock reader, and their per-epoch aggregates for the record.
// Pure data and arithmetic; the readers and the sampling thread live in src/telemetry.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/json_optional.hpp"

namespace gpubench {

/// One reading of every metric a reader offers; a metric it could not read this time stays empty.
struct TelemetrySample {
  double t_s = 0;                              ///< seconds on the sampler's steady clock
  std::optional<double> power_w;               ///< board power (W); NVML reports an averaged value on A100+
  std::optional<double> power_instant_w;       ///< instantaneous board power (W) where the driver offers it
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
  /// Number of devices these figures cover: 1 for one GPU; N for a data-parallel job's totals (combine_devices).
  int64_t devices = 1;
  std::optional<double> power_avg_w;               ///< time-weighted mean (W); a job total: the sum over devices
  /// Highest reading (W): of the instantaneous field where the reader has it, else of the averaged power. A job
  /// total is the sum of each device's peak (an upper bound: the peaks need not coincide).
  std::optional<double> power_peak_w;
  std::string power_peak_source;                   ///< "instantaneous" | "averaged" | "" (no power readings)
  std::optional<double> energy_counter_j;          ///< from the hardware energy counter (J)
  std::optional<double> energy_integrated_j;       ///< from integrating power over the epoch (J)
  std::optional<double> energy_disagreement_pct;   ///< (integrated - counter) / counter x 100, when both exist
  std::optional<double> energy_j;                  ///< the counter's figure when present, else the integrated one
  std::string energy_source;                       ///< "counter", "integrated power" or ""
  std::optional<double> joules_per_sample;         ///< energy_j / samples trained in the epoch (J); a job: all GPUs' J
                                                   ///< over all ranks' samples
  std::optional<double> sm_clock_avg_mhz, sm_clock_min_mhz, mem_clock_avg_mhz;
  std::optional<double> temperature_avg_c, temperature_peak_c;
  std::optional<double> gpu_util_avg_pct, mem_util_avg_pct;
  std::map<std::string, double> clock_event_fraction;  ///< reason -> fraction of readings with it set (0..1)
  std::map<std::string, int64_t> missing_readings;     ///< metric -> readings where it could not be read
  bool operator==(const EpochTelemetry& o) const = default;
};

/// A process other than this run that holds the GPU (it competes for the device: the run is not like-for-like).
struct GpuProcess {
  int64_t pid = 0;
  std::string name;                    ///< executable path as the driver reports it
  std::optional<int64_t> used_memory_bytes;
  bool operator==(const GpuProcess& o) const = default;
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
  std::string gpu_uuid, gpu_serial, vbios_version;  ///< identity of the board (NVML); empty where not offered
  std::string compute_mode;            ///< "default", "exclusive_process", "prohibited" (NVML)
  /// Application clock targets now and by default, and the boost maxima (MHz). Targets that differ from the
  /// defaults mean someone set application clocks.
  std::optional<int64_t> app_sm_clock_mhz, app_mem_clock_mhz, default_app_sm_clock_mhz, default_app_mem_clock_mhz;
  std::optional<int64_t> max_sm_clock_mhz, max_mem_clock_mhz;
  /// Whether clocks were pinned (application clocks changed, or `nvidia-smi -lgc` locked clocks limiting the run),
  /// and the evidence; unset where the reader cannot tell.
  std::optional<bool> clocks_locked;
  std::string clocks_locked_evidence;
  /// Other processes on the device when the run started; unset where the driver does not say.
  std::optional<std::vector<GpuProcess>> other_processes;
  std::string power_average_source;    ///< what `power_avg_w` comes from, e.g. NVML's ~1 s averaged power usage
  std::string power_instant_source;    ///< what peaks come from when instantaneous; empty where unavailable
  std::string energy_counter_source;   ///< the energy counter read; empty where none
  std::string trace_path;              ///< the CSV of raw samples, when one was written
  bool operator==(const TelemetryInfo& o) const = default;
};

/// Aggregates the readings in [t_begin, t_end] (sampler clock, s) of an epoch that trained `epoch_samples`.
/// Energy figures cover the whole epoch: measured spans shorter than the epoch are scaled up to it.
EpochTelemetry aggregate_epoch(const std::vector<TelemetrySample>& samples, double t_begin, double t_end,
                               int64_t epoch_samples);

/// One job's figures from each device's (index = rank): energies, powers and samples add up; clocks, utilisation and
/// clock-event fractions are means over devices, temperature the hottest device. `job_samples` = all ranks' samples.
EpochTelemetry combine_devices(const std::vector<EpochTelemetry>& per_device, int64_t job_samples);

/// Sets `clocks_locked` from the run's readings where the static facts left it open or false: the
/// applications-clocks (locked clocks) reason active in most readings of an epoch means the clocks were pinned.
void infer_clocks_locked(TelemetryInfo& info, const std::vector<EpochTelemetry>& epochs);

/// Raw samples as CSV (one header line, empty cells for missing readings), for plotting.
std::string samples_to_csv(const std::vector<TelemetrySample>& samples);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EpochTelemetry, samples, devices, power_avg_w, power_peak_w,
                                                power_peak_source,
                                                energy_counter_j, energy_integrated_j, energy_disagreement_pct,
                                                energy_j, energy_source, joules_per_sample, sm_clock_avg_mhz,
                                                sm_clock_min_mhz, mem_clock_avg_mhz, temperature_avg_c,
                                                temperature_peak_c, gpu_util_avg_pct, mem_util_avg_pct,
                                                clock_event_fraction, missing_readings)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuProcess, pid, name, used_memory_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TelemetryInfo, reader, available, reason, interval_s,
                                                driver_version, power_limit_w, persistence_mode, ecc_enabled,
                                                mig_enabled, pcie_link_gen, pcie_link_width,
                                                nvlink_active_links, gpu_uuid, gpu_serial, vbios_version,
                                                compute_mode, app_sm_clock_mhz, app_mem_clock_mhz,
                                                default_app_sm_clock_mhz, default_app_mem_clock_mhz,
                                                max_sm_clock_mhz, max_mem_clock_mhz, clocks_locked,
                                                clocks_locked_evidence, other_processes, power_average_source,
                                                power_instant_source, energy_counter_source, trace_path)

}  // namespace gpubench
