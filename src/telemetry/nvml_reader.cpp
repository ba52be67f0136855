// NVIDIA power, energy, clocks, temperature, utilisation and clock-event reasons through NVML, loaded with dlopen.
// The few NVML types used are declared in nvml_abi.h (nvml.h is not on every build machine); the functions are
// NVML's stable, versioned C ABI.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dynamic_library.h"
#include "nvml_abi.h"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench::telemetry {

namespace {

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr uint32_t NVML_FI_DEV_POWER_INSTANT = 186;
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

/// A field value as a double, whatever type NVML chose for it; empty when the query failed.
std::optional<double> field_as_double(const nvmlFieldValue_t& f) {
  if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
  switch (f.valueType) {
    case 0: return f.value.dVal;
    case 1: return static_cast<double>(f.value.uiVal);
    case 2: return static_cast<double>(f.value.ulVal);
    case 3: return static_cast<double>(f.value.ullVal);
    case 4: return static_cast<double>(f.value.sllVal);
    case 5: return static_cast<double>(f.value.siVal);
    case 6: return static_cast<double>(f.value.usVal);
    default: return std::nullopt;
  }
}

std::string compute_mode_name(int mode) {
  switch (mode) {
    case 0: return "default";
    case 1: return "exclusive_thread";
    case 2: return "prohibited";
    case 3: return "exclusive_process";
    default: return "unknown (" + std::to_string(mode) + ")";
  }
}
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_CLOCK_MEM = 2;
constexpr int NVML_TEMPERATURE_GPU = 0;

class NvmlReader final : public Reader {
 public:
  static std::unique_ptr<NvmlReader> open(const DeviceSelector& d, std::string* why_not) {
    auto lib = std::make_unique<DynamicLibrary>(nvml_library_path());
    if (!lib->loaded()) {
      *why_not = "NVML (" + nvml_library_path() + ") not loadable: " + lib->error();
      return nullptr;
    }
    std::unique_ptr<NvmlReader> r(new NvmlReader(std::move(lib)));
    if (r->init_ == nullptr || r->by_index_ == nullptr) {
      *why_not = "NVML library lacks nvmlInit_v2/nvmlDeviceGetHandleByIndex_v2";
      return nullptr;
    }
    if (const nvmlReturn_t rc = r->init_(); rc != NVML_SUCCESS) {
      *why_not = "nvmlInit_v2 failed: " + r->error_string(rc);
      return nullptr;
    }
    r->initialised_ = true;
    nvmlReturn_t rc = -1;
    if (!d.pci_bus_id.empty() && r->by_bus_ != nullptr) rc = r->by_bus_(d.pci_bus_id.c_str(), &r->dev_);
    if (rc != NVML_SUCCESS) rc = r->by_index_(static_cast<unsigned>(d.index), &r->dev_);
    if (rc != NVML_SUCCESS) {
      *why_not = "NVML has no device " + (d.pci_bus_id.empty() ? std::to_string(d.index) : d.pci_bus_id) + ": " +
                 r->error_string(rc);
      return nullptr;
    }
    r->probe_instant_power();
    return r;
  }

  ~NvmlReader() override {
    if (initialised_ && shutdown_ != nullptr) shutdown_();
  }

  std::string name() const override { return "nvml"; }

  TelemetrySample read() override {
    TelemetrySample s;
    unsigned int u = 0;
    unsigned long long ull = 0;
    if (power_ && power_(dev_, &u) == NVML_SUCCESS) s.power_w = u / 1000.0;
    if (fields_ && instant_ok_) {
      nvmlFieldValue_t f{};
      f.fieldId = NVML_FI_DEV_POWER_INSTANT;
      if (fields_(dev_, 1, &f) == NVML_SUCCESS) {
        if (auto mw = field_as_double(f)) s.power_instant_w = *mw / 1000.0;
      }
    }
    if (energy_ && energy_(dev_, &ull) == NVML_SUCCESS) s.energy_j = static_cast<double>(ull) / 1000.0;
    if (clock_ && clock_(dev_, NVML_CLOCK_SM, &u) == NVML_SUCCESS) s.sm_clock_mhz = u;
    if (clock_ && clock_(dev_, NVML_CLOCK_MEM, &u) == NVML_SUCCESS) s.mem_clock_mhz = u;
    if (temp_ && temp_(dev_, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS) s.temperature_c = u;
    nvmlUtilization_t util{};
    if (util_ && util_(dev_, &util) == NVML_SUCCESS) {
      s.gpu_util_pct = util.gpu;
      s.mem_util_pct = util.memory;
    }
    if (reasons_ && reasons_(dev_, &ull) == NVML_SUCCESS) s.clock_event_reasons = ull;
    return s;
  }

  TelemetryInfo info() override {
    TelemetryInfo t;
    t.reader = name();
    t.available = true;
    char buf[96] = {};
    if (driver_ && driver_(buf, sizeof buf) == NVML_SUCCESS) t.driver_version = buf;
    unsigned int u = 0, pending = 0;
    if (limit_ && limit_(dev_, &u) == NVML_SUCCESS) t.power_limit_w = u / 1000.0;
    int mode = 0, pending_mode = 0;
    if (persistence_ && persistence_(dev_, &mode) == NVML_SUCCESS) t.persistence_mode = mode != 0;
    if (ecc_ && ecc_(dev_, &mode, &pending_mode) == NVML_SUCCESS) t.ecc_enabled = mode != 0;
    if (mig_ && mig_(dev_, &u, &pending) == NVML_SUCCESS) t.mig_enabled = u != 0;
    if (pcie_gen_ && pcie_gen_(dev_, &u) == NVML_SUCCESS) t.pcie_link_gen = u;
    if (pcie_width_ && pcie_width_(dev_, &u) == NVML_SUCCESS) t.pcie_link_width = u;
    if (nvlink_state_ != nullptr) {
      int64_t active = 0;
      for (unsigned link = 0; link < 18; ++link) {  // NVML_NVLINK_MAX_LINKS
        int state = 0;
        if (nvlink_state_(dev_, link, &state) == NVML_SUCCESS && state != 0) ++active;
      }
      t.nvlink_active_links = active;
    }
    if (uuid_ && uuid_(dev_, buf, sizeof buf) == NVML_SUCCESS) t.gpu_uuid = buf;
    if (serial_ && serial_(dev_, buf, sizeof buf) == NVML_SUCCESS) t.gpu_serial = buf;
    if (vbios_ && vbios_(dev_, buf, sizeof buf) == NVML_SUCCESS) t.vbios_version = buf;
    if (compute_mode_ && compute_mode_(dev_, &mode) == NVML_SUCCESS) t.compute_mode = compute_mode_name(mode);
    auto clock = [this](nvmlReturn_t (*fn)(nvmlDevice_t, int, unsigned*), int type) -> std::optional<int64_t> {
      unsigned mhz = 0;
      if (fn != nullptr && fn(dev_, type, &mhz) == NVML_SUCCESS) return static_cast<int64_t>(mhz);
      return std::nullopt;
    };
    t.app_sm_clock_mhz = clock(app_clock_, NVML_CLOCK_SM);
    t.app_mem_clock_mhz = clock(app_clock_, NVML_CLOCK_MEM);
    t.default_app_sm_clock_mhz = clock(default_app_clock_, NVML_CLOCK_SM);
    t.default_app_mem_clock_mhz = clock(default_app_clock_, NVML_CLOCK_MEM);
    t.max_sm_clock_mhz = clock(max_clock_, NVML_CLOCK_SM);
    t.max_mem_clock_mhz = clock(max_clock_, NVML_CLOCK_MEM);
    if (t.app_sm_clock_mhz && t.default_app_sm_clock_mhz && t.app_mem_clock_mhz && t.default_app_mem_clock_mhz) {
      const bool changed = *t.app_sm_clock_mhz != *t.default_app_sm_clock_mhz ||
                           *t.app_mem_clock_mhz != *t.default_app_mem_clock_mhz;
      t.clocks_locked = changed;
      t.clocks_locked_evidence = changed ? "application clocks differ from their defaults"
                                         : "application clocks at their defaults (locked clocks show in the run's "
                                           "clock-event reasons)";
    }
    t.other_processes = other_processes();
    t.power_average_source = "nvmlDeviceGetPowerUsage (a ~1 s moving average on A100/H100-class boards)";
    if (instant_ok_) t.power_instant_source = "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)";
    if (energy_ != nullptr) t.energy_counter_source = "nvmlDeviceGetTotalEnergyConsumption";
    std::string lacking;
    if (energy_ == nullptr) lacking += " energy counter";
    if (!instant_ok_) lacking += " instantaneous power (peaks come from averaged readings)";
    if (reasons_ == nullptr) lacking += " clock-event reasons";
    if (!lacking.empty()) t.reason = "this NVML lacks:" + lacking;
    return t;
  }

 private:
  explicit NvmlReader(std::unique_ptr<DynamicLibrary> lib) : lib_(std::move(lib)) {
    init_ = lib_->symbol<nvmlReturn_t (*)()>("nvmlInit_v2");
    shutdown_ = lib_->symbol<nvmlReturn_t (*)()>("nvmlShutdown");
    error_string_ = lib_->symbol<const char* (*)(nvmlReturn_t)>("nvmlErrorString");
    by_index_ = lib_->symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
    by_bus_ = lib_->symbol<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>("nvmlDeviceGetHandleByPciBusId_v2");
    power_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetPowerUsage");
    energy_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetTotalEnergyConsumption");
    clock_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
    temp_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature");
    util_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>("nvmlDeviceGetUtilizationRates");
    reasons_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksEventReasons");
    if (reasons_ == nullptr) {  // drivers before R535
      reasons_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    limit_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetEnforcedPowerLimit");
    driver_ = lib_->symbol<nvmlReturn_t (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
    persistence_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int*)>("nvmlDeviceGetPersistenceMode");
    ecc_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetEccMode");
    mig_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*)>("nvmlDeviceGetMigMode");
    pcie_gen_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkGeneration");
    pcie_width_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkWidth");
    nvlink_state_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkState");
    fields_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t*)>("nvmlDeviceGetFieldValues");
    uuid_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID");
    serial_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetSerial");
    vbios_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetVbiosVersion");
    compute_mode_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int*)>("nvmlDeviceGetComputeMode");
    app_clock_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetApplicationsClock");
    default_app_clock_ =
        lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetDefaultApplicationsClock");
    max_clock_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
    processes_ = lib_->symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*)>(
        "nvmlDeviceGetComputeRunningProcesses_v3");
    process_name_ = lib_->symbol<nvmlReturn_t (*)(unsigned, char*, unsigned)>("nvmlSystemGetProcessName");
  }

  /// Whether the instantaneous power field answers on this device (asked once).
  void probe_instant_power() {
    if (fields_ == nullptr) return;
    nvmlFieldValue_t f{};
    f.fieldId = NVML_FI_DEV_POWER_INSTANT;
    instant_ok_ = fields_(dev_, 1, &f) == NVML_SUCCESS && field_as_double(f).has_value();
  }

  /// Compute processes on the device other than this one; empty optional where NVML cannot list them.
  std::optional<std::vector<GpuProcess>> other_processes() const {
    if (processes_ == nullptr) return std::nullopt;
    std::vector<nvmlProcessInfo_t> procs(16);
    for (int attempt = 0; attempt < 3; ++attempt) {
      unsigned count = static_cast<unsigned>(procs.size());
      const nvmlReturn_t rc = processes_(dev_, &count, procs.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        procs.resize(static_cast<size_t>(count) * 2 + 8);
        continue;
      }
      if (rc != NVML_SUCCESS) return std::nullopt;
      std::vector<GpuProcess> out;
      const auto self = static_cast<unsigned>(::getpid());
      for (unsigned i = 0; i < count && i < procs.size(); ++i) {
        if (procs[i].pid == self) continue;
        GpuProcess p;
        p.pid = procs[i].pid;
        char name[256] = {};
        if (process_name_ && process_name_(procs[i].pid, name, sizeof name) == NVML_SUCCESS) p.name = name;
        if (procs[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
          p.used_memory_bytes = static_cast<int64_t>(procs[i].usedGpuMemory);
        }
        out.push_back(std::move(p));
      }
      return out;
    }
    return std::nullopt;
  }

  std::string error_string(nvmlReturn_t rc) const {
    const char* s = error_string_ != nullptr ? error_string_(rc) : nullptr;
    return s != nullptr ? s : "NVML error " + std::to_string(rc);
  }

  std::unique_ptr<DynamicLibrary> lib_;
  bool initialised_ = false;
  nvmlDevice_t dev_ = nullptr;
  nvmlReturn_t (*init_)() = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  const char* (*error_string_)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_index_)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_bus_)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*power_)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*energy_)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temp_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*util_)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*reasons_)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*limit_)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver_)(char*, unsigned) = nullptr;
  nvmlReturn_t (*persistence_)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*ecc_)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*mig_)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state_)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*fields_)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*uuid_)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*serial_)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*vbios_)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*compute_mode_)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*app_clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*default_app_clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*processes_)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*process_name_)(unsigned, char*, unsigned) = nullptr;
  bool instant_ok_ = false;
};

}  // namespace

std::string nvml_library_path() {
  const char* env = std::getenv("GPUBENCH_NVML_LIBRARY");
  return env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
}

std::unique_ptr<Reader> open_nvml(const DeviceSelector& d, std::string* why_not) { return NvmlReader::open(d, why_not); }

}  // namespace gpubench::telemetry
