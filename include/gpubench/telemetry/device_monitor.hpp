#pragma once
// DeviceMonitor: one process's device telemetry over a run. It opens the reader for the run's device, samples while
// the timed epochs run, and turns each epoch's readings into an EpochTelemetry. Every rank of a data-parallel run has
// one for its own device; the engine combines their epochs.

#include <memory>
#include <optional>
#include <string>

#include "gpubench/core/record/telemetry.hpp"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench::telemetry {

class DeviceMonitor {
 public:
  /// Opens the reader for `device` ("cuda:1", "cpu", ...; `pci_bus_id` preferred for NVML). With `enabled` false,
  /// or no reader for the device, the monitor records nothing and info().reason says why.
  DeviceMonitor(const std::string& device, const std::string& pci_bus_id, bool enabled, double interval_s);
  ~DeviceMonitor();
  DeviceMonitor(const DeviceMonitor&) = delete;
  DeviceMonitor& operator=(const DeviceMonitor&) = delete;

  bool active() const { return sampler_ != nullptr; }
  /// The reader and the device's static facts (or why there is no reader).
  const TelemetryInfo& info() const { return info_; }

  /// A timed epoch begins: sampling starts with the first epoch (not during warm-up).
  void begin_epoch();
  /// The epoch that began last has ended, having trained `samples` samples here; empty when inactive.
  std::optional<EpochTelemetry> end_epoch(int64_t samples);
  /// Stops sampling; with `trace_path` set, writes the raw samples there as CSV (returns false with `error`).
  bool finish(const std::string& trace_path, std::string* error);

 private:
  TelemetryInfo info_;
  std::unique_ptr<Sampler> sampler_;
  double epoch_begin_s_ = 0;
};

/// The reader for a device type, honouring $GPUBENCH_TELEMETRY_READER (nvml | rocm-smi | rapl | none), which forces
/// one whatever the device: for machines whose device and reader do not pair up as usual, and for tests.
std::unique_ptr<Reader> open_reader_for(const DeviceSelector& d, std::string* why_not);

}  // namespace gpubench::telemetry
