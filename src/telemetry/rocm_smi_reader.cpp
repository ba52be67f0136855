// AMD power, energy, clocks, temperature and utilisation through ROCm SMI, loaded with dlopen. Function types come
// from rocm_smi.h (Debian: librocm-smi-dev) so they cannot drift from the library's; without the header the reader
// is not built and says so.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "dynamic_library.h"
#include "gpubench/telemetry/readers.hpp"

#if __has_include(<rocm_smi/rocm_smi.h>)
#include <rocm_smi/rocm_smi.h>
#define GPUBENCH_HAVE_ROCM_SMI_HEADER 1
#endif

namespace gpubench::telemetry {

std::string rocm_smi_library_path() {
  const char* env = std::getenv("GPUBENCH_ROCM_SMI_LIBRARY");
  return env != nullptr && *env != '\0' ? env : "librocm_smi64.so";
}

#ifdef GPUBENCH_HAVE_ROCM_SMI_HEADER
namespace {

/// PCI "domain:bus:device.function" (hex) -> ROCm SMI's BDFID (domain << 32 | bus << 8 | device << 3 | function).
uint64_t bdfid_of(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return UINT64_MAX;
  return (static_cast<uint64_t>(domain) << 32) | (bus << 8) | (device << 3) | function;
}

class RocmSmiReader final : public Reader {
 public:
  static std::unique_ptr<RocmSmiReader> open(const DeviceSelector& d, std::string* why_not) {
    // Without the amdgpu kernel driver ROCm SMI only prints errors; do not load it at all then.
    if (std::getenv("GPUBENCH_ROCM_SMI_LIBRARY") == nullptr && !std::filesystem::exists("/dev/kfd")) {
      *why_not = "no AMD GPU driver here (/dev/kfd is missing)";
      return nullptr;
    }
    auto lib = std::make_unique<DynamicLibrary>(rocm_smi_library_path());
    if (!lib->loaded()) {
      *why_not = "ROCm SMI (" + rocm_smi_library_path() + ") not loadable: " + lib->error();
      return nullptr;
    }
    std::unique_ptr<RocmSmiReader> r(new RocmSmiReader(std::move(lib)));
    if (r->init_ == nullptr || r->count_ == nullptr) {
      *why_not = "ROCm SMI library lacks rsmi_init/rsmi_num_monitor_devices";
      return nullptr;
    }
    if (r->init_(0) != RSMI_STATUS_SUCCESS) {
      *why_not = "rsmi_init failed";
      return nullptr;
    }
    r->initialised_ = true;
    uint32_t n = 0;
    r->count_(&n);
    const uint64_t want = bdfid_of(d.pci_bus_id);
    r->dev_ = static_cast<uint32_t>(d.index);
    for (uint32_t i = 0; i < n && r->pci_ != nullptr && want != UINT64_MAX; ++i) {
      uint64_t id = 0;
      if (r->pci_(i, &id) == RSMI_STATUS_SUCCESS && id == want) r->dev_ = i;
    }
    if (r->dev_ >= n) {
      *why_not = "ROCm SMI sees " + std::to_string(n) + " device(s), none is " + std::to_string(d.index);
      return nullptr;
    }
    return r;
  }

  ~RocmSmiReader() override {
    if (initialised_ && shutdown_ != nullptr) shutdown_();
  }

  std::string name() const override { return "rocm-smi"; }

  TelemetrySample read() override {
    TelemetrySample s;
    uint64_t u64 = 0, stamp = 0;
    float resolution = 0;
    if (power_ && power_(dev_, 0, &u64) == RSMI_STATUS_SUCCESS) s.power_w = static_cast<double>(u64) / 1e6;
    if (energy_ && energy_(dev_, &u64, &resolution, &stamp) == RSMI_STATUS_SUCCESS) {
      s.energy_j = static_cast<double>(u64) * resolution / 1e6;
    }
    int64_t milli_c = 0;
    if (temp_ && temp_(dev_, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &milli_c) == RSMI_STATUS_SUCCESS) {
      s.temperature_c = static_cast<double>(milli_c) / 1000.0;
    }
    rsmi_frequencies_t f{};
    if (clock_ && clock_(dev_, RSMI_CLK_TYPE_SYS, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported) {
      s.sm_clock_mhz = static_cast<double>(f.frequency[f.current]) / 1e6;
    }
    if (clock_ && clock_(dev_, RSMI_CLK_TYPE_MEM, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported) {
      s.mem_clock_mhz = static_cast<double>(f.frequency[f.current]) / 1e6;
    }
    uint32_t busy = 0;
    if (busy_ && busy_(dev_, &busy) == RSMI_STATUS_SUCCESS) s.gpu_util_pct = busy;
    return s;
  }

  TelemetryInfo info() override {
    TelemetryInfo t;
    t.reader = name();
    t.available = true;
    uint64_t cap = 0;
    if (cap_ && cap_(dev_, 0, &cap) == RSMI_STATUS_SUCCESS) t.power_limit_w = static_cast<double>(cap) / 1e6;
    t.reason = "ROCm SMI reports no clock-event (throttle) reasons";
    return t;
  }

 private:
  explicit RocmSmiReader(std::unique_ptr<DynamicLibrary> lib) : lib_(std::move(lib)) {
    init_ = lib_->symbol<decltype(&rsmi_init)>("rsmi_init");
    shutdown_ = lib_->symbol<decltype(&rsmi_shut_down)>("rsmi_shut_down");
    count_ = lib_->symbol<decltype(&rsmi_num_monitor_devices)>("rsmi_num_monitor_devices");
    pci_ = lib_->symbol<decltype(&rsmi_dev_pci_id_get)>("rsmi_dev_pci_id_get");
    power_ = lib_->symbol<decltype(&rsmi_dev_power_ave_get)>("rsmi_dev_power_ave_get");
    energy_ = lib_->symbol<decltype(&rsmi_dev_energy_count_get)>("rsmi_dev_energy_count_get");
    temp_ = lib_->symbol<decltype(&rsmi_dev_temp_metric_get)>("rsmi_dev_temp_metric_get");
    clock_ = lib_->symbol<decltype(&rsmi_dev_gpu_clk_freq_get)>("rsmi_dev_gpu_clk_freq_get");
    busy_ = lib_->symbol<decltype(&rsmi_dev_busy_percent_get)>("rsmi_dev_busy_percent_get");
    cap_ = lib_->symbol<decltype(&rsmi_dev_power_cap_get)>("rsmi_dev_power_cap_get");
  }

  std::unique_ptr<DynamicLibrary> lib_;
  bool initialised_ = false;
  uint32_t dev_ = 0;
  decltype(&rsmi_init) init_ = nullptr;
  decltype(&rsmi_shut_down) shutdown_ = nullptr;
  decltype(&rsmi_num_monitor_devices) count_ = nullptr;
  decltype(&rsmi_dev_pci_id_get) pci_ = nullptr;
  decltype(&rsmi_dev_power_ave_get) power_ = nullptr;
  decltype(&rsmi_dev_energy_count_get) energy_ = nullptr;
  decltype(&rsmi_dev_temp_metric_get) temp_ = nullptr;
  decltype(&rsmi_dev_gpu_clk_freq_get) clock_ = nullptr;
  decltype(&rsmi_dev_busy_percent_get) busy_ = nullptr;
  decltype(&rsmi_dev_power_cap_get) cap_ = nullptr;
};

}  // namespace

std::unique_ptr<Reader> open_rocm_smi(const DeviceSelector& d, std::string* why_not) {
  return RocmSmiReader::open(d, why_not);
}
#else
std::unique_ptr<Reader> open_rocm_smi(const DeviceSelector&, std::string* why_not) {
  *why_not = "ROCm SMI support was not built (rocm_smi.h was missing at build time; Debian: librocm-smi-dev)";
  return nullptr;
}
#endif

}  // namespace gpubench::telemetry
