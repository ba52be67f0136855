// The CPU backend: the host clock, the host's available memory; LibTorch keeps no allocator statistics for the CPU
// (the record's host peak RSS stands for its memory).

#include <fstream>

#include "backend/backend.h"
#include "device.h"
#include "step_timer.h"

namespace gpubench::engine {

namespace {

class CpuBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }
  bool has(Capability /*c*/) const override { return false; }
  void synchronize() const override {}
  std::unique_ptr<StepTimer> make_step_timer() const override { return make_host_step_timer(nullptr); }
  void reset_memory_peaks() const override {}
  DeviceMemoryPeaks read_memory_peaks() const override { return {}; }
  std::pair<int64_t, std::string> usable_memory() const override {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    long long kib = 0;
    while (meminfo >> key >> kib) {
      std::getline(meminfo, unit);
      if (key == "MemAvailable:") return {static_cast<int64_t>(kib) * 1024, "the host's available memory (MemAvailable)"};
    }
    return {0, ""};
  }
  std::pair<std::string, int> name_and_capability() const override { return {"CPU", 0}; }
  std::string cap_memory(int64_t /*bytes*/) const override {
    throw std::runtime_error("a memory cap needs a device with a caching allocator; the CPU has none");
  }
};

}  // namespace

std::shared_ptr<const Backend> make_cpu_backend(const ResolvedDevice& /*d*/) { return std::make_shared<CpuBackend>(); }

}  // namespace gpubench::engine
