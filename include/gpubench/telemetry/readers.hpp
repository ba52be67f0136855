#pragma once
// Power, clock and temperature readers behind one interface. Vendor libraries are loaded with dlopen at run time,
// so gpubench runs (and says why there is no telemetry) where a library is absent.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpubench/core/record/telemetry.hpp"

namespace gpubench::telemetry {

/// Reads one device's metrics. Implementations: NVML (NVIDIA), ROCm SMI (AMD), RAPL (CPU package energy).
class Reader {
 public:
  virtual ~Reader() = default;
  virtual std::string name() const = 0;
  /// One sample; metrics that fail this time stay empty (the aggregate counts them as missing).
  virtual TelemetrySample read() = 0;
  /// Static facts (power limit, ECC, MIG, PCIe link, driver); `reader` and `available` are filled in.
  virtual TelemetryInfo info() = 0;
};

/// Which device to read: what the engine resolved.
struct DeviceSelector {
  std::string device_type;  ///< "cuda", "rocm", "cpu", "mps"
  int index = 0;            ///< device ordinal (fallback when the bus id cannot be matched)
  std::string pci_bus_id;   ///< "00000000:19:00.0"; preferred, since NVML's order may differ from CUDA's
};

/// Whether a reader can work here, and why not (for `gpubench info` and the record).
struct ReaderStatus {
  std::string name;
  bool available = false;
  std::string detail;
};

// Where the libraries and files are; environment variables override them (the tests' fakes use this).
std::string nvml_library_path();      ///< $GPUBENCH_NVML_LIBRARY or "libnvidia-ml.so.1"
std::string rocm_smi_library_path();  ///< $GPUBENCH_ROCM_SMI_LIBRARY or "librocm_smi64.so"
std::string powercap_root();          ///< $GPUBENCH_POWERCAP_ROOT or "/sys/class/powercap"

std::unique_ptr<Reader> open_nvml(const DeviceSelector& d, std::string* why_not);
std::unique_ptr<Reader> open_rocm_smi(const DeviceSelector& d, std::string* why_not);
std::unique_ptr<Reader> open_rapl(std::string* why_not);

/// The reader for `d` (NVML for cuda, ROCm SMI for rocm, RAPL for cpu), or null with `why_not` set.
std::unique_ptr<Reader> open_reader(const DeviceSelector& d, std::string* why_not);

/// Every reader's status on this machine (device 0 for the GPU readers).
std::vector<ReaderStatus> probe_readers();

/// Samples a reader on its own thread at a fixed period. Readings accumulate in memory (about 100 bytes each:
/// two hours at 100 ms is 7 MB).
class Sampler {
 public:
  Sampler(std::unique_ptr<Reader> reader, double interval_s);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();           ///< begins sampling (idempotent); takes one reading at once
  void stop();            ///< stops and joins the thread (idempotent)
  double now_s() const;   ///< the clock samples are stamped with (s since construction)
  std::vector<TelemetrySample> samples() const;  ///< a copy of everything read so far
  Reader& reader() { return *reader_; }

 private:
  void loop();
  std::unique_ptr<Reader> reader_;
  double interval_s_;
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, running_ = false;
  std::vector<TelemetrySample> samples_;
  std::thread thread_;
};

}  // namespace gpubench::telemetry
