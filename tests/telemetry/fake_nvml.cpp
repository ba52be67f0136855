// A stand-in for libnvidia-ml.so.1 with NVML's real symbol names, replaying scripted readings, so the NVML reader is
// tested through the same dlopen path it uses on a GPU machine.
// FAKE_NVML_SCRIPT names a file with one reading per line:
//   power_mW energy_mJ sm_MHz mem_MHz temp_C util_gpu util_mem reasons_hex [instant_power_mW]
// or the word "fail" (every query fails for that reading); energy 0 means the counter is not supported. Each nvmlDeviceGetPowerUsage call moves to the next line
// (the reader asks for power first); after the last line the last one repeats. Without the instant column the
// instantaneous power field is "not supported", as on older drivers.
// FAKE_NVML_SCRIPT_RANK<r> takes precedence in a process whose RANK is r (a different script per rank).
// FAKE_NVML_PROCESSES="pid:name:bytes,..." lists other processes on the device; FAKE_NVML_APP_SM_CLOCK sets the
// application SM clock target (the default is 1980 MHz); FAKE_NVML_POWER_LIMIT_MW the enforced limit.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nvml_abi.h"

namespace {

struct Row {
  bool fail = false;
  unsigned power_mw = 0, sm = 0, mem = 0, temp = 0, util_gpu = 0, util_mem = 0;
  unsigned long long energy_mj = 0, reasons = 0;
  long long instant_mw = -1;  // -1: the field is not supported
};

std::vector<Row>& rows() {
  static std::vector<Row> r = [] {
    std::vector<Row> out;
    const char* path = std::getenv("FAKE_NVML_SCRIPT");
    if (const char* rank = std::getenv("RANK")) {
      if (const char* per_rank = std::getenv(("FAKE_NVML_SCRIPT_RANK" + std::string(rank)).c_str())) path = per_rank;
    }
    std::ifstream in(path != nullptr ? path : "");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      Row row;
      if (line == "fail") {
        row.fail = true;
      } else {
        std::istringstream is(line);
        is >> row.power_mw >> row.energy_mj >> row.sm >> row.mem >> row.temp >> row.util_gpu >> row.util_mem >>
            std::hex >> row.reasons >> std::dec;
        unsigned instant = 0;
        if (is >> instant) row.instant_mw = instant;
      }
      out.push_back(row);
    }
    if (out.empty()) out.push_back(Row{});
    return out;
  }();
  return r;
}

size_t g_index = 0;
bool g_started = false;
int g_device = 42;  // the handle's target

const Row& current() { return rows()[std::min(g_index, rows().size() - 1)]; }

constexpr int kOk = 0, kUnknown = 999, kNotFound = 6, kNotSupported = 3, kInsufficientSize = 7;

unsigned env_uint(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : fallback;
}

}  // namespace

extern "C" {

int nvmlDeviceGetFieldValues(nvmlDevice_t, int count, nvmlFieldValue_t* values) {
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& f = values[i];
    if (f.fieldId != 186 || current().fail || current().instant_mw < 0) {
      f.nvmlReturn = current().fail ? kUnknown : kNotSupported;
      continue;
    }
    f.nvmlReturn = kOk;
    f.valueType = 1;  // unsigned int, as the real driver reports power
    f.value.uiVal = static_cast<unsigned>(current().instant_mw);
  }
  return kOk;
}
int nvmlDeviceGetUUID(nvmlDevice_t, char* buf, unsigned n) {
  std::snprintf(buf, n, "%s", "GPU-fake-0000-1111");
  return kOk;
}
int nvmlDeviceGetSerial(nvmlDevice_t, char* buf, unsigned n) {
  std::snprintf(buf, n, "%s", "1650000000001");
  return kOk;
}
int nvmlDeviceGetVbiosVersion(nvmlDevice_t, char* buf, unsigned n) {
  std::snprintf(buf, n, "%s", "96.00.AB.00.01");
  return kOk;
}
int nvmlDeviceGetComputeMode(nvmlDevice_t, int* mode) {
  *mode = 0;
  return kOk;
}
int nvmlDeviceGetApplicationsClock(nvmlDevice_t, int type, unsigned* mhz) {
  *mhz = type == 1 ? env_uint("FAKE_NVML_APP_SM_CLOCK", 1980) : 3201;
  return kOk;
}
int nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t, int type, unsigned* mhz) {
  *mhz = type == 1 ? 1980 : 3201;
  return kOk;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t, int type, unsigned* mhz) {
  *mhz = type == 1 ? 1980 : 3201;
  return kOk;
}
// FAKE_NVML_PROCESSES="pid:name:bytes,...", in the real call's two-step protocol (too small a buffer says so).
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned* count, nvmlProcessInfo_t* infos) {
  std::vector<nvmlProcessInfo_t> procs;
  std::istringstream all(std::getenv("FAKE_NVML_PROCESSES") != nullptr ? std::getenv("FAKE_NVML_PROCESSES") : "");
  std::string item;
  while (std::getline(all, item, ',')) {
    const auto a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b) continue;
    procs.push_back({static_cast<unsigned>(std::stoul(item.substr(0, a))), std::stoull(item.substr(b + 1)), 0, 0});
  }
  if (*count < procs.size()) {
    *count = static_cast<unsigned>(procs.size());
    return kInsufficientSize;
  }
  for (size_t i = 0; i < procs.size(); ++i) infos[i] = procs[i];
  *count = static_cast<unsigned>(procs.size());
  return kOk;
}
int nvmlSystemGetProcessName(unsigned pid, char* buf, unsigned n) {
  std::istringstream all(std::getenv("FAKE_NVML_PROCESSES") != nullptr ? std::getenv("FAKE_NVML_PROCESSES") : "");
  std::string item;
  while (std::getline(all, item, ',')) {
    const auto a = item.find(':'), b = item.rfind(':');
    if (a != std::string::npos && a != b && std::stoul(item.substr(0, a)) == pid) {
      std::snprintf(buf, n, "%s", item.substr(a + 1, b - a - 1).c_str());
      return kOk;
    }
  }
  return kNotFound;
}

int nvmlInit_v2() { return kOk; }
int nvmlShutdown() { return kOk; }
const char* nvmlErrorString(int rc) { return rc == kNotFound ? "Not Found" : "Unknown Error"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* dev) {
  if (index != 0) return kNotFound;
  *dev = reinterpret_cast<nvmlDevice_t>(&g_device);
  return kOk;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, nvmlDevice_t* dev) {
  if (std::strcmp(bus, "00000000:19:00.0") != 0) return kNotFound;
  *dev = reinterpret_cast<nvmlDevice_t>(&g_device);
  return kOk;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned* mw) {
  if (g_started) ++g_index;
  g_started = true;
  if (current().fail) return kUnknown;
  *mw = current().power_mw;
  return kOk;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, unsigned long long* mj) {
  if (current().fail) return kUnknown;
  if (current().energy_mj == 0) return kNotSupported;  // energy then comes from integrating power
  *mj = current().energy_mj;
  return kOk;
}
int nvmlDeviceGetClockInfo(nvmlDevice_t, int type, unsigned* mhz) {
  if (current().fail) return kUnknown;
  *mhz = type == 1 ? current().sm : current().mem;
  return kOk;
}
int nvmlDeviceGetTemperature(nvmlDevice_t, int, unsigned* c) {
  if (current().fail) return kUnknown;
  *c = current().temp;
  return kOk;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t* u) {
  if (current().fail) return kUnknown;
  u->gpu = current().util_gpu;
  u->memory = current().util_mem;
  return kOk;
}
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, unsigned long long* r) {
  if (current().fail) return kUnknown;
  *r = current().reasons;
  return kOk;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t, unsigned* mw) {
  *mw = env_uint("FAKE_NVML_POWER_LIMIT_MW", 700000);
  return kOk;
}
int nvmlSystemGetDriverVersion(char* buf, unsigned n) {
  std::snprintf(buf, n, "%s", "999.99.1");
  return kOk;
}
int nvmlDeviceGetPersistenceMode(nvmlDevice_t, int* m) {
  *m = 1;
  return kOk;
}
int nvmlDeviceGetEccMode(nvmlDevice_t, int* current_mode, int* pending) {
  *current_mode = 1;
  *pending = 1;
  return kOk;
}
int nvmlDeviceGetMigMode(nvmlDevice_t, unsigned* current_mode, unsigned* pending) {
  *current_mode = 0;
  *pending = 0;
  return kOk;
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned* g) {
  *g = 5;
  return kOk;
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t, unsigned* w) {
  *w = 16;
  return kOk;
}

}  // extern "C"
