#include "gpubench/telemetry/device_monitor.hpp"

#include <cstdlib>

#include "gpubench/core/record/record_io.hpp"

namespace gpubench::telemetry {

std::unique_ptr<Reader> open_reader_for(const DeviceSelector& d, std::string* why_not) {
  const char* forced = std::getenv("GPUBENCH_TELEMETRY_READER");
  if (forced == nullptr || *forced == '\0') return open_reader(d, why_not);
  const std::string name = forced;
  if (name == "nvml") return open_nvml(d, why_not);
  if (name == "rocm-smi") return open_rocm_smi(d, why_not);
  if (name == "rapl") return open_rapl(why_not);
  *why_not = name == "none" ? "telemetry switched off by GPUBENCH_TELEMETRY_READER=none"
                            : "GPUBENCH_TELEMETRY_READER='" + name + "' is not one of nvml, rocm-smi, rapl, none";
  return nullptr;
}

DeviceMonitor::DeviceMonitor(const std::string& device, const std::string& pci_bus_id, bool enabled,
                             double interval_s) {
  info_.reader = "none";
  if (!enabled) {
    info_.reason = "telemetry switched off (telemetry: false)";
    return;
  }
  const auto colon = device.find(':');
  int index = 0;
  if (colon != std::string::npos) index = std::atoi(device.c_str() + colon + 1);
  const DeviceSelector sel{device.substr(0, colon), index, pci_bus_id};
  std::string why_not;
  auto reader = open_reader_for(sel, &why_not);
  if (!reader) {
    info_.reason = why_not;
    return;
  }
  info_ = reader->info();
  info_.interval_s = interval_s;
  sampler_ = std::make_unique<Sampler>(std::move(reader), interval_s);
}

DeviceMonitor::~DeviceMonitor() = default;

void DeviceMonitor::begin_epoch() {
  if (!sampler_) return;
  sampler_->start();  // idempotent: the first epoch's start is the first reading
  epoch_begin_s_ = sampler_->now_s();
}

std::optional<EpochTelemetry> DeviceMonitor::end_epoch(int64_t samples) {
  if (!sampler_) return std::nullopt;
  return aggregate_epoch(sampler_->samples(), epoch_begin_s_, sampler_->now_s(), samples);
}

bool DeviceMonitor::finish(const std::string& trace_path, std::string* error) {
  if (!sampler_) return true;
  sampler_->stop();
  if (trace_path.empty()) return true;
  try {
    write_file_atomic(trace_path, samples_to_csv(sampler_->samples()));
    info_.trace_path = trace_path;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
  return true;
}

}  // namespace gpubench::telemetry
