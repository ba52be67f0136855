#pragma once
// Device resolution, synchronisation and memory statistics behind one small interface.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "backend/backend.h"

namespace gpubench::engine {

/// The requested device is not usable here; what() says why and what to check.
class DeviceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ResolvedDevice {
  c10::Device device{c10::kCPU};
  std::string id;    ///< "cpu", "cuda:0", "rocm:0", "mps", "testaccel:0"
  std::string type;  ///< "cpu", "cuda", "rocm", "mps", "xpu", or the name a PrivateUse1 backend registered
  /// The backend that serves it (resolve_device sets it; empty: the CPU's).
  std::shared_ptr<const Backend> backend;
  bool is_cuda_like() const { return device.is_cuda(); }  ///< CUDA or ROCm (HIP presents as CUDA)
};

/// `d`'s backend (the CPU's where none was set).
const Backend& backend_of(const ResolvedDevice& d);

/// The first line of an error message (LibTorch's carry a C++ backtrace after it).
inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// Resolves "auto", "cpu", "cuda[:N]", "rocm[:N]", "mps", "xpu[:N]", and the name (with :N) of a PrivateUse1 backend
/// a loaded backend library registered (also "privateuseone[:N]"). Throws DeviceUnavailable with a clear reason:
/// `rocm` on a LibTorch that is not a ROCm build, `cuda` on one that is (its GPUs are AMD's: say rocm), a backend
/// this LibTorch does not have.
ResolvedDevice resolve_device(const std::string& spec);

/// Makes `d` the current CUDA device of this thread (streams, events and new tensors default to it).
void make_current(const ResolvedDevice& d);

/// Blocks until all work queued on `d` has finished (no-op on the CPU).
void synchronize(const ResolvedDevice& d);

void reset_memory_peaks(const ResolvedDevice& d);
DeviceMemoryPeaks read_memory_peaks(const ResolvedDevice& d);
/// Memory a run on `d` can use, in bytes, and what that figure is: the GPU's total memory, the host's MemAvailable
/// on the CPU; {0, ""} where unknown (MPS).
std::pair<int64_t, std::string> usable_memory(const ResolvedDevice& d);

/// The device's name ("NVIDIA H200") and CUDA compute capability as major * 10 + minor (0 where not CUDA).
std::pair<std::string, int> name_and_capability(const ResolvedDevice& d);
/// Releases cached device memory (after an OOM, before writing the record).
void release_cached_memory(const ResolvedDevice& d);

/// Caps what the caching allocator may hold on `d` at `bytes` (its per-process memory fraction): an allocation
/// beyond it fails as an out-of-memory would on a card of that size. Returns what was set; throws
/// std::runtime_error where no cap can be set (not CUDA; a build without the CUDA module).
std::string cap_device_memory(const ResolvedDevice& d, int64_t bytes);

/// Peak resident set size of this process, in bytes (getrusage).
int64_t host_peak_rss_bytes();

/// Whether the CUDA backend was compiled in and a device is visible.
bool cuda_available();
/// The LibTorch this binary runs with is a ROCm (HIP) build: its AMD GPUs present as CUDA devices.
bool is_rocm_build();
/// The LibTorch this binary runs with has CUDA's runtime (an NVIDIA build; false for ROCm and for a build that links
/// only LibTorch's CPU side, GPUBENCH_CUDA=OFF against PyPI's wheel).
bool is_cuda_build();
bool mps_available();
/// Intel GPUs through LibTorch's XPU backend.
bool xpu_available();

}  // namespace gpubench::engine
