#pragma once
// The engine's public face: no torch types, so the CLI and reporters never see LibTorch's headers.

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpubench/core/scenario/launch.hpp"
#include "gpubench/core/record/run_record.hpp"
#include "gpubench/core/scenario/scenario.hpp"
#include "gpubench/core/scenario/model_catalog.hpp"
#include "gpubench/core/scenario/resolve.hpp"
#include "gpubench/engine/observer.hpp"

namespace gpubench {


/// Models known to the registry, in listing order: what each declares about itself (core's ModelInfo).
ModelCatalog available_models();
/// Just their names (what a scenario's `model` may say).
std::vector<std::string> model_names();
/// Each model's own keys, for the scenario loader and `--help`.
ModelOptions model_options();

/// An out-of-tree accelerator's backend library (`--backend-library`, scenario key backend_library): a LibTorch
/// PrivateUse1 backend such as Ascend's torch_npu or gpubench's test accelerator. Its devices run on the generic
/// backend (docs/backends.md).
struct BackendLibrary {
  std::string path;     ///< as given
  std::string backend;  ///< the name it registered: its devices are `device: NAME[:N]`
  std::string version;  ///< what it exports as gpubench_backend_version(), else its file name's ".so.X.Y", else empty
  int64_t devices = 0;  ///< how many devices its guard reports
};
/// The library is missing, cannot be loaded, registers no backend, or crashed while loading (in a child process
/// that probes it first); what() names the path and says which.
class BackendLibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Loads `path` before any device is counted; the same path again is a no-op, another one is refused (a process
/// holds one PrivateUse1 backend). Throws BackendLibraryError.
BackendLibrary load_backend_library(const std::string& path);
/// The library this process loaded, if any.
std::optional<BackendLibrary> loaded_backend_library();

/// A device gpubench could run on, or one it cannot use with the reason.
struct DeviceInfo {
  std::string id;                 ///< "cpu", "cuda:0", "rocm:0", "mps"
  std::string name;               ///< e.g. "NVIDIA H200"
  std::optional<int64_t> memory_bytes;
  std::string compute_capability; ///< CUDA "9.0" / ROCm gfx name / empty
  bool available = true;
  std::string note;               ///< why it is unavailable, or a remark
};

/// Devices on this machine, CPU first; backends compiled in but unusable appear with available=false.
std::vector<DeviceInfo> list_devices();

/// A device backend as this binary and the LibTorch it runs with see it (`gpubench info`, the record's
/// environment.libtorch_build).
struct BackendInfo {
  std::string name;             ///< cuda | rocm | mps | xpu | cpu (the `device:` values that select it)
  bool in_libtorch = false;     ///< the LibTorch this binary runs with was built with it
  bool available = false;       ///< ... and one of its devices is usable here now
  std::string version;          ///< its runtime's version where LibTorch says (CUDA "13.0"), else empty
  bool run_on_hardware = false; ///< gpubench has trained on this backend's real hardware (docs/guide.md, Backends)
  std::string serves;           ///< gpubench's backend for its devices: cuda | generic | cpu (docs/backends.md)
  std::string tested;           ///< how gpubench's runs there are proven: "on hardware", "in CI on the test accelerator"
  std::string note;             ///< what it needs, or why it cannot be used here
};
/// The backends gpubench knows, in the order `device: auto` tries them (cuda or rocm, mps, xpu, cpu).
std::vector<BackendInfo> list_backends();
/// The LibTorch this binary runs with, in words: "2.15.0, CUDA 13.2 build" / "2.11.0, ROCm build" / "2.15.0, CPU".
std::string libtorch_build();

/// Ceilings measured on the device itself: a large dense matrix product per math mode and a device copy.
struct PeakMeasurement {
  std::string device, device_name;
  std::vector<std::pair<std::string, double>> tflops;  ///< (fp32 | tf32 | bf16 | fp16, TFLOP/s)
  double copy_gbs = 0;                                 ///< device-to-device copy, bytes read + written (GB/s)
  std::string method;
};
/// Measures `device_id` ("cuda:0", "cpu", ...); takes seconds. Throws std::runtime_error if it is unusable.
PeakMeasurement measure_peaks(const std::string& device_id);

/// Host, device and software versions for `device_id` ("cpu", "cuda:0", ...). Never throws.
EnvironmentRecord describe_environment(const std::string& device_id);

/// Things about the invocation that are not part of the scenario.
struct RunOptions {
  std::string command_line;                          ///< recorded verbatim
  const std::atomic<bool>* stop_requested = nullptr; ///< set (e.g. by SIGINT) to end the run as "interrupted"
  /// This process's place in a multi-process run (torchrun, SLURM, mpirun, --nproc-per-node); default: alone.
  /// With world_size > 1 the run is data-parallel over c10d, each rank on cuda:<local_rank> (or the CPU).
  RankInfo rank;
};

/// The device `requested` ("auto", "cuda", "cuda:1", "cpu", ...) names on this machine for this process (a rank of a
/// multi-process run takes cuda:<local_rank> unless the request names an index). Never throws: an unusable device
/// comes back with available=false, its type and the reason.
DeviceFacts probe_device(const std::string& requested, const RankInfo& rank);

/// Trains the resolved scenario and returns its record. Run failures (no device, OOM, non-finite loss, interrupt)
/// come back as a record with that status and a reason, never as an exception. The record's scenario is
/// `resolved.scenario` and its notes begin with the resolution's.
RunRecord run_benchmark(const ResolvedScenario& resolved, RunObserver& observer, const RunOptions& options);
/// The same for a scenario not yet resolved (library callers, tests): resolved for this machine first, without the
/// data-folder check (the input pipeline makes it). A scenario that cannot be resolved ends as a failed record.
RunRecord run_benchmark(const Scenario& scenario, RunObserver& observer, const RunOptions& options);

}  // namespace gpubench
