// CPU package energy from Linux powercap (Intel RAPL; AMD exposes the same interface on recent kernels).
// Counters wrap at max_energy_range_uj; the reader unwraps them into one monotonic total over all packages.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "gpubench/telemetry/readers.hpp"

namespace gpubench::telemetry {

namespace fs = std::filesystem;

namespace {

bool read_u64(const fs::path& p, uint64_t& v) {
  std::ifstream in(p);
  return static_cast<bool>(in >> v);
}

class RaplReader final : public Reader {
 public:
  struct Zone {
    fs::path energy;
    uint64_t range = 0, last = 0;
    double total_uj = 0;
  };

  explicit RaplReader(std::vector<Zone> zones) : zones_(std::move(zones)) {}

  std::string name() const override { return "rapl"; }

  TelemetrySample read() override {
    TelemetrySample s;
    double total = 0;
    for (auto& z : zones_) {
      uint64_t v = 0;
      if (!read_u64(z.energy, v)) return s;  // a zone vanished or became unreadable: no energy this time
      if (v >= z.last) {
        z.total_uj += static_cast<double>(v - z.last);
      } else {  // wrapped around max_energy_range_uj
        z.total_uj += static_cast<double>(z.range - z.last + v);
      }
      z.last = v;
      total += z.total_uj;
    }
    s.energy_j = total / 1e6;
    const auto now = std::chrono::steady_clock::now();
    if (has_previous_) {
      const double dt = std::chrono::duration<double>(now - previous_time_).count();
      if (dt > 0) s.power_w = (*s.energy_j - previous_energy_j_) / dt;
    }
    has_previous_ = true;
    previous_time_ = now;
    previous_energy_j_ = *s.energy_j;
    return s;
  }

  TelemetryInfo info() override {
    TelemetryInfo t;
    t.reader = name();
    t.available = true;
    t.reason = "CPU package energy only (RAPL): no clocks, temperature or utilisation";
    return t;
  }

 private:
  std::vector<Zone> zones_;
  bool has_previous_ = false;
  std::chrono::steady_clock::time_point previous_time_;
  double previous_energy_j_ = 0;
};

}  // namespace

std::string powercap_root() {
  const char* env = std::getenv("GPUBENCH_POWERCAP_ROOT");
  return env != nullptr && *env != '\0' ? env : "/sys/class/powercap";
}

std::unique_ptr<Reader> open_rapl(std::string* why_not) {
  const fs::path root(powercap_root());
  std::error_code ec;
  std::vector<RaplReader::Zone> zones;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    // Top-level packages only ("intel-rapl:0"); sub-zones ("intel-rapl:0:0") are parts of them.
    if (name.rfind("intel-rapl:", 0) != 0 || name.find(':', 11) != std::string::npos) continue;
    RaplReader::Zone z;
    z.energy = entry.path() / "energy_uj";
    if (!read_u64(z.energy, z.last)) {
      *why_not = "RAPL: " + z.energy.string() + " is not readable (it needs root on most kernels)";
      return nullptr;
    }
    if (!read_u64(entry.path() / "max_energy_range_uj", z.range)) z.range = UINT64_MAX;
    zones.push_back(z);
  }
  if (zones.empty()) {
    *why_not = "RAPL: no intel-rapl packages under " + root.string();
    return nullptr;
  }
  std::sort(zones.begin(), zones.end(), [](const auto& a, const auto& b) { return a.energy < b.energy; });
  return std::make_unique<RaplReader>(std::move(zones));
}

}  // namespace gpubench::telemetry
