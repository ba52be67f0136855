#pragma once
// The engine's public face: no torch types, so the CLI and reporters never see LibTorch's headers.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/launch.hpp"
#include "gpubench/core/run_record.hpp"
#include "gpubench/core/scenario.hpp"
#include "gpubench/core/scenario_loader.hpp"

namespace gpubench {

/// A model the registry can build.
struct ModelInfo {
  std::string name;               ///< registry name, e.g. "resnet50"
  std::string description;        ///< one line, with the reference it matches
  std::string sample_unit;        ///< "images", "sequences", ...
  int64_t default_batch_size = 0; ///< on accelerators; CPU runs are bounded further
  std::string default_optimizer;  ///< "sgd" or "adamw"
  /// This model's own scenario keys (image_size, seq_len, layers, ...) with type, range, default and help, declared
  /// next to its factory. A scenario that sets another model's key is refused (exit 2); a record keeps only these
  /// besides the common keys, each with a concrete value (or null: the model's own architecture value).
  std::vector<ModelOption> options;
  std::vector<std::string> option_keys() const;
};

/// Models known to the registry, in listing order.
std::vector<ModelInfo> available_models();
/// Just their names (what a scenario's `model` may say).
std::vector<std::string> model_names();
/// Each model's own keys, for the scenario loader and `--help`.
ModelOptions model_options();

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

/// Progress of the running benchmark, for progress lines.
struct StepProgress {
  bool warmup = false;
  int64_t epoch = 0, epochs = 0;  ///< 0-based epoch index and count (warm-up: 0 of 0)
  int64_t step = 0, steps = 0;    ///< steps done in this epoch (or warm-up) and its length
  int64_t batch_size = 0;
  double elapsed_s = 0;           ///< host time since this epoch (or warm-up) started (s)
};

/// Receives events while a benchmark runs. Called on the training thread: keep handlers cheap.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// Once the scenario is resolved (defaults filled, device chosen), before any training step. `header` has
  /// the resolved scenario, environment, model and precision; no epochs yet.
  virtual void on_start(const RunRecord& /*header*/) {}
  /// Which reader samples the device and its static facts (`active` false: none, and `info.reason` says why).
  /// Sent by the Runner once, after on_start and before training.
  virtual void on_telemetry(const TelemetryInfo& /*info*/, bool /*active*/) {}
  /// Something the user must know, e.g. "ran on the CPU with a 60 s budget".
  virtual void on_note(const std::string& /*message*/) {}
  /// A phase begins: "building model", "warm-up", "epoch 1/3", ...
  virtual void on_phase(const std::string& /*phase*/) {}
  /// A timed epoch is about to start (the device has just been synchronised). 0-based index.
  virtual void on_epoch_begin(int64_t /*index*/) {}
  /// After every step (timed or warm-up). No device synchronisation happens for this.
  virtual void on_step(const StepProgress& /*progress*/) {}
  /// A timed epoch has just ended (the device synchronised), on every rank of a multi-process run: this process's
  /// device telemetry for the epoch, which trained `samples` samples here; empty when there is none. The engine
  /// combines the ranks' figures into the epoch record (per rank and the job's totals).
  virtual std::optional<EpochTelemetry> on_epoch_end(int64_t /*index*/, int64_t /*samples*/) { return std::nullopt; }
  /// After every timed epoch, with its finished record (telemetry included).
  virtual void on_epoch(const EpochRecord& /*epoch*/) {}
};

/// Things about the invocation that are not part of the scenario.
struct RunOptions {
  std::string command_line;                          ///< recorded verbatim
  const std::atomic<bool>* stop_requested = nullptr; ///< set (e.g. by SIGINT) to end the run as "interrupted"
  /// This process's place in a multi-process run (torchrun, SLURM, mpirun, --nproc-per-node); default: alone.
  /// With world_size > 1 the run is data-parallel over c10d, each rank on cuda:<local_rank> (or the CPU).
  RankInfo rank;
};

/// Trains `scenario` and returns its record. Run failures (no device, OOM, non-finite loss, interrupt) come back
/// as a record with that status and a reason, never as an exception.
RunRecord run_benchmark(const Scenario& scenario, RunObserver& observer, const RunOptions& options);

}  // namespace gpubench
