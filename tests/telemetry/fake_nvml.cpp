// A stand-in for libnvidia-ml.so.1 with NVML's real symbol names, replaying scripted readings, so the NVML reader is
// tested through the same dlopen path it uses on a GPU machine.
// FAKE_NVML_SCRIPT names a file with one reading per line:
//   power_mW energy_mJ sm_MHz mem_MHz temp_C util_gpu util_mem reasons
// or the word "fail" (every query fails for that reading). Each nvmlDeviceGetPowerUsage call moves to the next line
// (the reader asks for power first); after the last line the last one repeats.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Row {
  bool fail = false;
  unsigned power_mw = 0, sm = 0, mem = 0, temp = 0, util_gpu = 0, util_mem = 0;
  unsigned long long energy_mj = 0, reasons = 0;
};

std::vector<Row>& rows() {
  static std::vector<Row> r = [] {
    std::vector<Row> out;
    const char* path = std::getenv("FAKE_NVML_SCRIPT");
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
            std::hex >> row.reasons;
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

constexpr int kOk = 0, kUnknown = 999, kNotFound = 6;

}  // namespace

extern "C" {

struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

int nvmlInit_v2() { return kOk; }
int nvmlShutdown() { return kOk; }
const char* nvmlErrorString(int rc) { return rc == kNotFound ? "Not Found" : "Unknown Error"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** dev) {
  if (index != 0) return kNotFound;
  *dev = &g_device;
  return kOk;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** dev) {
  if (std::strcmp(bus, "00000000:19:00.0") != 0) return kNotFound;
  *dev = &g_device;
  return kOk;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  if (g_started) ++g_index;
  g_started = true;
  if (current().fail) return kUnknown;
  *mw = current().power_mw;
  return kOk;
}
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* mj) {
  if (current().fail) return kUnknown;
  *mj = current().energy_mj;
  return kOk;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) {
  if (current().fail) return kUnknown;
  *mhz = type == 1 ? current().sm : current().mem;
  return kOk;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  if (current().fail) return kUnknown;
  *c = current().temp;
  return kOk;
}
int nvmlDeviceGetUtilizationRates(void*, nvmlUtilization_t* u) {
  if (current().fail) return kUnknown;
  u->gpu = current().util_gpu;
  u->memory = current().util_mem;
  return kOk;
}
int nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* r) {
  if (current().fail) return kUnknown;
  *r = current().reasons;
  return kOk;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  *mw = 700000;
  return kOk;
}
int nvmlSystemGetDriverVersion(char* buf, unsigned n) {
  std::snprintf(buf, n, "%s", "999.99.1");
  return kOk;
}
int nvmlDeviceGetPersistenceMode(void*, int* m) {
  *m = 1;
  return kOk;
}
int nvmlDeviceGetEccMode(void*, int* current_mode, int* pending) {
  *current_mode = 1;
  *pending = 1;
  return kOk;
}
int nvmlDeviceGetMigMode(void*, unsigned* current_mode, unsigned* pending) {
  *current_mode = 0;
  *pending = 0;
  return kOk;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void*, unsigned* g) {
  *g = 5;
  return kOk;
}
int nvmlDeviceGetCurrPcieLinkWidth(void*, unsigned* w) {
  *w = 16;
  return kOk;
}

}  // extern "C"
