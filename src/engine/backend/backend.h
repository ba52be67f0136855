#pragma once
// The backend seam: what differs between devices, asked of one object chosen once from the resolved device.
//   cuda     gpubench's CUDA module (src/engine/cuda/): CUDA events, CUDA's caching allocator, its memory cap.
//   cpu      the host: the host clock, the host's available memory, no device allocator.
//   generic  every other device LibTorch can drive, through its device-generic API: MPS, XPU, ROCm's HIP build when
//            the CUDA module is not built, and out-of-tree PrivateUse1 backends (--backend-library). Steps are timed
//            on c10::Event (the host clock, the device synchronised each step, where the device has no timing
//            events), memory through at::accelerator's allocator statistics.
// docs/backends.md says what each supports and how to add one.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace gpubench::engine {

class StepTimer;
struct ResolvedDevice;

enum class BackendKind { kCpu, kCuda, kGeneric };
/// "cpu" | "cuda" | "generic": the record's environment.backend.
const char* backend_name(BackendKind kind);

/// What a backend can run beyond ATen's operators; a scenario asking for one a backend lacks is refused (exit 2).
enum class Capability { kFusedKernels, kFp8, kGraphCapture, kDeviceJpegDecode };

/// Peak device memory since the last reset, in bytes; empty where the backend keeps no such counters.
struct DeviceMemoryPeaks {
  std::optional<int64_t> allocated_bytes, reserved_bytes;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual bool has(Capability c) const = 0;
  /// Makes the device current for this thread (streams, events and new tensors default to it).
  virtual void make_current() const {}
  /// Blocks until all work queued on the device has finished.
  virtual void synchronize() const = 0;
  /// A timer for the steps of an epoch (device events where the device has them).
  virtual std::unique_ptr<StepTimer> make_step_timer() const = 0;
  virtual void reset_memory_peaks() const = 0;
  virtual DeviceMemoryPeaks read_memory_peaks() const = 0;
  /// Memory a run can use, in bytes, and what that figure is; {0, ""} where unknown.
  virtual std::pair<int64_t, std::string> usable_memory() const = 0;
  /// The device's name and CUDA compute capability (major * 10 + minor; 0 where not CUDA).
  virtual std::pair<std::string, int> name_and_capability() const = 0;
  virtual void release_cached_memory() const {}
  /// Caps what the device's allocator may hold at `bytes`; returns what was set. Throws std::runtime_error where
  /// no cap can be set.
  virtual std::string cap_memory(int64_t bytes) const = 0;
};

/// The backend for `d`: CUDA for a CUDA (or HIP) device when the CUDA module is built, the CPU's for the CPU, the
/// generic one for every other device.
std::shared_ptr<const Backend> make_backend(const ResolvedDevice& d);

// Each implementation's factory (backend.cpp chooses).
std::shared_ptr<const Backend> make_cpu_backend(const ResolvedDevice& d);
std::shared_ptr<const Backend> make_generic_backend(const ResolvedDevice& d);
/// nullptr in a build without the CUDA module (cuda/without_cuda.cpp).
std::shared_ptr<const Backend> make_cuda_backend(const ResolvedDevice& d);

}  // namespace gpubench::engine
