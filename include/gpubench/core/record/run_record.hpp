#pragma once
// RunRecord: the one contract between the engine and everything that prints, stores or compares results.
// Field names carry their unit (_s seconds, _ms milliseconds, _bytes, _per_s per second, flops = FLOPs).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/json_optional.hpp"
#include "gpubench/core/record/metric.hpp"
#include "gpubench/core/record/profile_record.hpp"
#include "gpubench/core/scenario/scenario.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/core/record/telemetry.hpp"

namespace gpubench {

/// Version of the JSON layout written by gpubench; bumped on any incompatible change (docs/record-schema.md).
inline constexpr int kRecordSchemaVersion = 3;  // 2: tagged `metrics`; 3: `profile`, `stopped_by`, the bottleneck verdict

/// How a run ended. Anything but kOk makes `gpubench run` exit with code 1.
enum class RunStatus { kOk, kOom, kNan, kInterrupted, kFailed };
std::string to_string(RunStatus s);
RunStatus run_status_from_string(const std::string& s);  ///< throws std::invalid_argument

/// Host, device and software the run used.
struct EnvironmentRecord {
  std::string hostname, os, cpu_model;
  int64_t cpu_cores = 0;
  std::string device;                 ///< resolved device string, e.g. "cuda:0"
  std::string device_type;            ///< cpu | cuda | rocm | mps
  std::string device_name;            ///< e.g. "NVIDIA H200"
  std::optional<int64_t> device_memory_bytes;
  std::string compute_capability;     ///< "9.0" (CUDA), gfx arch (ROCm), empty otherwise
  std::optional<int64_t> multiprocessors;
  std::string pci_bus_id;             ///< "00000000:19:00.0" (NVML's form), empty where not applicable
  std::string nvidia_driver_version;  ///< the NVIDIA driver, e.g. "580.159.04" (NVML); empty without NVML
  std::string cuda_driver_api_version;  ///< the CUDA version the driver supports (cudaDriverGetVersion), e.g. "13.0"
  std::string driver_version;         ///< the old name of cuda_driver_api_version (same value), kept for old readers
  std::string cuda_runtime_version;   ///< CUDA runtime LibTorch was built with, e.g. "13.0"
  std::string cudnn_version;          ///< e.g. "9.19.0"
  std::string libtorch_version;       ///< e.g. "2.11.0"
  /// Which LibTorch that is, in words: "2.15.0, CUDA 13.2 build", "2.11.0, ROCm build", "2.15.0, CPU only" (a build
  /// without the CUDA module links only a CUDA wheel's CPU side); empty in records before it was recorded.
  std::string libtorch_build;
  /// gpubench's backend that ran the device (docs/backends.md): cuda (its CUDA module) | cpu | generic (LibTorch's
  /// device-generic API: MPS, XPU, ROCm without the module, PrivateUse1 backends); empty in older records.
  std::string backend;
  /// An out-of-tree accelerator's backend library (--backend-library): its path as given and its version (what it
  /// exports as gpubench_backend_version(), else its file name's .so.X.Y); empty where none was loaded.
  std::string backend_library, backend_library_version;
  std::string gpubench_version, git_revision, build_type, compiler;
  std::string command_line;
  std::string start_time_utc;         ///< ISO 8601, e.g. "2026-11-29T23:41:07Z"
  std::string nccl_version;           ///< NCCL LibTorch uses, e.g. "2.27.7"; empty without NCCL
  std::optional<int64_t> host_memory_bytes;  ///< MemTotal
  std::string cpu_governor;           ///< cpufreq scaling governor ("performance", "powersave", "mixed: ..."), if any
  std::string container;              ///< "docker", "podman", "kubernetes", "lxc", ... ; empty when none detected
  /// CUDA_*, NCCL_*, TORCH_*, PYTORCH_*, OMP_NUM_THREADS and GPUBENCH_* variables as set at start (they change speed).
  std::map<std::string, std::string> variables;
  bool operator==(const EnvironmentRecord& o) const = default;
};

/// The model that was trained.
struct ModelRecord {
  std::string name;
  int64_t parameters = 0;              ///< trainable parameters
  /// Analytic FLOPs per sample of one timed step: 3 x forward in training; in mode inference, the inference step's
  /// (the forward; the UNet's guided step is two forwards). The name predates inference mode.
  double train_flops_per_sample = 0;
  double attention_flops_per_sample = 0;  ///< the part of it in attention's QK^T and AV matmuls; 0 for models without
  std::string sample_unit;             ///< "images", "sequences", ...
  int64_t tokens_per_sample = 0;       ///< sequence models: tokens per sample (for tokens/s); 0 otherwise
  /// The per-model scenario keys this model takes: the record's scenario holds these and the common keys only.
  std::vector<std::string> scenario_keys;
  std::string step;                    ///< what one timed step computes (training step, or the inference step)
  bool operator==(const ModelRecord& o) const = default;
};

/// precision: fp8: the recipe that ran, which Linear layers ran in FP8, and MFU against both peaks.
struct Fp8Record {
  std::string activation_format = "e4m3", weight_format = "e4m3";
  std::string grad_format;   ///< e5m2 | e4m3
  std::string scaling;       ///< tensor | rowwise | delayed
  int64_t amax_history = 0;  ///< delayed scaling's history length (0 otherwise)
  std::vector<std::string> converted;  ///< layers whose matrix products ran in FP8 (module names)
  std::vector<std::string> kept;       ///< "name (why)": layers left in the compute dtype (bf16)
  /// MFU against the device's dense bf16 peak (the summary's `mfu`) and against its dense FP8 peak (the same
  /// achieved FLOP/s over the FP8 peak); both peaks in TFLOP/s (0: unknown).
  double bf16_peak_tflops = 0, fp8_peak_tflops = 0, mfu_bf16_peak = 0, mfu_fp8_peak = 0;
  std::string fp8_peak_source;  ///< where the FP8 peak comes from
  bool operator==(const Fp8Record& o) const = default;
};

/// How the precision request was carried out on the device.
struct PrecisionRecord {
  std::string requested;      ///< as in the scenario, e.g. "amp"
  std::string resolved;       ///< fp32 | tf32 | bf16 | fp16
  std::string autocast_dtype; ///< "bfloat16", "float16" or "none"
  bool tf32_matmul = false;   ///< cuBLAS matmuls may use TF32
  bool tf32_cudnn = false;    ///< cuDNN convolutions may use TF32
  bool loss_scaling = false;  ///< dynamic loss scaling (fp16)
  std::string memory_format;  ///< contiguous | channels_last
  std::string resolution;     ///< how and why "amp" became `resolved` (empty when the precision was explicit)
  std::optional<Fp8Record> fp8;  ///< precision: fp8 only (absent from the JSON otherwise)
  bool operator==(const PrecisionRecord& o) const = default;
};

/// How the training step was executed.
/// One fused operation of `kernels: fused`, and how it ran here.
struct FusionRecord {
  std::string name;            ///< linear_cross_entropy | swiglu | rotary
  std::string implementation;  ///< "cuda kernel" (gpubench's), or "aten"/"aten (chunked)": the ATen form ran instead
  std::string note;            ///< what the kernel does, or why the ATen form ran
  bool operator==(const FusionRecord& o) const = default;
};

struct ExecutionRecord {
  std::string mode = "eager";            ///< eager | cuda_graph (the whole step captured once, replayed per step)
  bool graph_requested = false;          ///< the scenario asked for `graph: true`
  std::string graph_fallback;            ///< why a requested graph did not run (eager instead); empty otherwise
  std::string optimizer_implementation;  ///< foreach | fused
  std::string kernels = "aten";          ///< aten | fused: the kernel path (scenario key `kernels`)
  std::vector<FusionRecord> fusions;     ///< with kernels: fused, each fused operation the model used
  bool operator==(const ExecutionRecord& o) const = default;
};

/// One machine of a multi-process run, as its ranks described it: which ranks ran there and the host facts that make
/// two nodes comparable (a slow node is found by its figures and explained by these).
struct NodeRecord {
  std::string hostname;
  std::string address;              ///< its address on the route to the rendezvous host (where its traffic leaves from)
  std::vector<int64_t> ranks;       ///< the ranks that ran there, ascending
  std::string os, cpu_model;
  int64_t cpu_cores = 0;
  int64_t host_memory_bytes = 0;    ///< MemTotal; 0 where unknown
  std::string device_name;          ///< what its first rank trained on
  std::string libtorch_version, gpubench_version;  ///< a node built against another LibTorch is a different test
  bool operator==(const NodeRecord& o) const = default;
};

/// Multi-process data-parallel runs (absent for a single process).
struct DistributedRecord {
  int64_t world_size = 1;
  std::string backend;                   ///< nccl | gloo
  std::string launcher;                  ///< gpubench | torchrun | slurm | mpirun
  double bucket_mb = 0;                  ///< all-reduce bucket size (MiB)
  int64_t buckets = 0;                   ///< how many buckets the parameters made
  /// [epoch][rank]: each rank's wall time for the epoch (s). The epoch's `seconds` is the slowest of them.
  std::vector<std::vector<double>> rank_epoch_seconds;
  /// [epoch][rank]: time the compute stream waited for gradient all-reduces after backward (s): communication
  /// that did not overlap the backward pass.
  std::vector<std::vector<double>> rank_comm_wait_seconds;
  int64_t slowest_rank = 0;              ///< rank with the largest total epoch time
  std::string interconnect;              ///< e.g. "NVLink (18 links active)", "PCIe", "loopback (CPU)"
  std::string rendezvous;                ///< host:port of rank 0's store, as the launcher's variables named it
  std::vector<NodeRecord> nodes;         ///< each machine the ranks ran on, in order of its lowest rank
  bool operator==(const DistributedRecord& o) const = default;
};

/// A file the input pipeline could not use, and why.
struct SkippedFileRecord {
  std::string path, reason;
  bool operator==(const SkippedFileRecord& o) const { return path == o.path && reason == o.reason; }
};

/// `decode: auto` on a CUDA device: what the run measured before choosing its decoder (data/decode_choice.hpp),
/// images/s of this rank; 0 where not measured (a path that cannot run, or a comparison the choice did not need).
struct DecodeCalibrationRecord {
  double step_img_per_s = 0;        ///< the step alone, its batch already on the device
  double cpu_img_per_s = 0;         ///< the workers decoding every sample, nothing else running
  double gpu_img_per_s = 0;         ///< nvJPEG decoding every sample it can take, nothing else running
  std::string gpu_backend;          ///< hardware | gpu_hybrid | hybrid; empty where nvJPEG is not usable
  double fed_cpu_img_per_s = 0;     ///< the step fed by the workers alone
  double fed_gpu_img_per_s = 0;     ///< the step fed by nvJPEG alone
  double fed_mixed_img_per_s = 0;   ///< the step fed at mixed_share
  double mixed_share = 0;           ///< the workers' share of a batch fed_mixed was measured at
  std::string choice;               ///< cpu | gpu | mixed
  double expected_img_per_s = 0;    ///< the chosen path's measured rate
  double seconds = 0;               ///< the calibration's wall time (untimed, before the first epoch)
  bool operator==(const DecodeCalibrationRecord& o) const = default;
};

/// `data: folder` runs: the data set and the pipeline that fed the step (absent for synthetic data). Per-epoch
/// figures (input wait, loader capacity, files skipped, page cache) are the epochs' metrics.
struct DataRecord {
  std::string source;                    ///< "folder"
  std::string path;                      ///< the ImageFolder root
  int64_t images = 0, classes = 0;
  int64_t other_files = 0;               ///< files in the class folders that are not JPEGs by name (not used)
  int64_t links_outside = 0;             ///< links leading out of the folder: skipped (not used), counted
  int64_t bytes = 0;                     ///< the images' bytes in total (0 in records before 2026-12-07)
  std::string listing_digest;            ///< FNV-1a 64 of each image's path below `path` and size (data/image_folder)
  std::string decode;                    ///< cpu | gpu | mixed
  std::string decoder;                   ///< library, backend, workers
  std::string decode_fallback;           ///< why the GPU decoder was not used (decode: auto), or failed on a batch
  std::string decode_reason;             ///< why this decoder: asked for, or decode: auto's measurement and its figures
  std::optional<DecodeCalibrationRecord> decode_calibration;  ///< decode: auto on a CUDA device: what it measured
  int64_t workers = 0, prefetch = 0;
  std::string augmentation;
  bool data_only = false;                ///< the pipeline timed alone: the epochs' "steps" are batches delivered
  int64_t files_skipped = 0;             ///< distinct unreadable or undecodable files met
  std::vector<SkippedFileRecord> skipped_examples;  ///< the first of them (at most 10)
  bool operator==(const DataRecord& o) const = default;
};

/// What else the host did during an epoch (core/record/host_activity.hpp): CPU time is in seconds over the epoch's
/// wall time; divided by it, in cores. Null in records before 2026-12-07 and where /proc cannot be read.
struct HostActivity {
  double seconds = 0;          ///< wall time measured (s)
  int64_t cpu_cores = 0;       ///< CPUs online
  double own_cpu_s = 0;        ///< this process's CPU time, all its threads (s)
  double other_cpu_s = 0;      ///< every other process's CPU time: the host's busy time less this process's (s)
  double steal_s = 0;          ///< time a hypervisor gave to other guests (s, over all CPUs)
  double load_average_1m = 0;  ///< /proc/loadavg's first figure at the end (this run's threads count in it)
  int64_t job_processes = 1;   ///< this job's processes on the host (local ranks); peers' time is in other_cpu_s
  bool operator==(const HostActivity& o) const = default;
};

/// One timed epoch.
struct EpochRecord {
  int64_t index = 0;               ///< 0-based
  int64_t steps = 0;
  int64_t samples = 0;             ///< steps x batch_size
  double seconds = 0;              ///< wall time of the epoch, device synchronised at both ends (s)
  double samples_per_s = 0;        ///< samples / seconds (never a mean of per-step rates)
  StepTimeStats step_time;         ///< device-event (CUDA) or host-clock (CPU) step times
  std::vector<double> step_times_ms;  ///< every timed step (ms, 4 decimals), for statistics recomputed later
  std::optional<int64_t> peak_allocated_bytes;  ///< device memory held by tensors, peak in the epoch
  std::optional<int64_t> peak_reserved_bytes;   ///< device memory held by the caching allocator, peak
  std::optional<int64_t> peak_host_rss_bytes;   ///< process resident set size, peak so far (CPU runs)
  double loss_first = 0, loss_last = 0;
  int64_t skipped_steps = 0;       ///< fp16 steps skipped by the loss scaler (inf/NaN gradients)
  bool complete = true;            ///< false when the epoch was cut by the time budget, an interrupt or a failure
  /// Power, energy, clocks, temperature, throttling; null when off. In a multi-GPU run: the whole job's (energy and
  /// power summed over the GPUs, J/sample over all ranks' samples; `devices` says how many).
  std::optional<EpochTelemetry> telemetry;
  std::optional<HostActivity> host;  ///< what else the host did meanwhile (other processes' CPU, steal, load)
  /// Multi-GPU runs: each rank's own device telemetry, by rank (empty for one process).
  std::vector<EpochTelemetry> rank_telemetry;
  /// Extra metrics measured for this epoch that have no field here (metrics.hpp); the JSON's `metrics` array holds
  /// these after the standard ones derived from the fields.
  Metrics metrics;
  bool operator==(const EpochRecord& o) const = default;
};

/// One factor of the bottleneck attribution (analysis/bottleneck.hpp): the share of the timed step it costs.
struct BottleneckFactor {
  /// capacity | input | communication | thermal | power | clock | memory | compute | kernels | launch
  std::string factor;
  double share = 0;      ///< fraction of the timed step's wall time (0..1)
  std::string evidence;  ///< the figures behind the share
  std::string method;    ///< how it was estimated (e.g. "NVML utilisation", "kernel profile")
  bool operator==(const BottleneckFactor& o) const = default;
};

/// Whole-run figures over all timed epochs.
struct RunSummary {
  int64_t epochs = 0, steps = 0, samples = 0;
  double seconds = 0;                  ///< sum of epoch wall times (s)
  double samples_per_s = 0;            ///< samples / seconds
  double steps_per_s = 0;              ///< optimizer steps / seconds ("it/s")
  double tokens_per_s = 0;             ///< samples_per_s x tokens_per_sample (sequence models; 0 otherwise)
  double epoch_seconds_mean = 0;       ///< mean wall time of complete epochs (s); 0 if none completed
  double achieved_tflops = 0;          ///< samples_per_s x train_flops_per_sample / 1e12 (TFLOP/s)
  /// The device's dense peak for the precision in use (TFLOP/s) and where it came from (the device table entry);
  /// unset for devices not in the table.
  std::optional<double> peak_tflops;
  std::string peak_source;
  std::optional<double> mfu;           ///< model FLOP utilisation: achieved_tflops / peak_tflops (a fraction)
  StepTimeStats step_time;             ///< over all timed steps
  std::optional<int64_t> peak_allocated_bytes, peak_reserved_bytes, peak_host_rss_bytes;
  int64_t warmup_steps = 0;
  double warmup_seconds = 0;           ///< untimed warm-up, including cuDNN autotuning (s)
  std::string stopped_by;              ///< "", "time_budget", "interrupt": what cut the run short
  /// What limits the run (analysis/bottleneck.hpp): the factor of `bottleneck_factors` with the largest share, or
  /// empty with too little evidence; `bottleneck_evidence` gives the top factors' shares and figures.
  std::string bounded_by;
  std::string bottleneck_evidence;
  /// Every factor with its share of the step, largest first (readers recompute it from the record).
  std::vector<BottleneckFactor> bottleneck_factors;
  /// Energy over all timed epochs, for the whole job (every GPU of a multi-GPU run): J, J per sample trained, and
  /// the mean power (J / s, W); unset when an epoch lacks an energy figure. `power_devices` = GPUs summed.
  std::optional<double> energy_j, joules_per_sample, power_avg_w;
  int64_t power_devices = 0;
  /// Last complete epoch against the first (sustained runs): throughput and SM clock change (%), temperature (C).
  std::optional<double> throughput_drift_pct, sm_clock_drift_pct, temperature_drift_c;
  /// Extra whole-run metrics with no field here (metrics.hpp), as on epochs.
  Metrics metrics;
  bool operator==(const RunSummary& o) const = default;
};

/// Everything one run produced.
struct RunRecord {
  int schema_version = kRecordSchemaVersion;
  RunStatus status = RunStatus::kOk;
  std::string reason;                  ///< why status is not ok (empty when ok)
  Scenario scenario;                   ///< resolved: every value concrete
  PrecisionRecord precision;
  ExecutionRecord execution;
  EnvironmentRecord environment;
  ModelRecord model;
  std::vector<EpochRecord> epochs;
  RunSummary summary;
  std::vector<std::string> notes;      ///< things a reader must know (CPU bounds, fallbacks, ...)
  TelemetryInfo telemetry;             ///< which reader sampled the device, and static device facts
  std::optional<DistributedRecord> distributed;  ///< multi-process runs: per-rank times, backend, world size
  std::optional<ProfileRecord> profile;  ///< `--profile`: the kernel-level summary of separate, untimed steps
  std::optional<DataRecord> data;        ///< `data: folder`: the data set and input pipeline
  int64_t repeat_index = 1;            ///< 1-based repeat of this scenario within one invocation (--repeats)
  int64_t repeat_count = 1;
  /// Every member; the scenario's origins (file:line, flags: provenance) are left out by Scenario's own ==.
  bool operator==(const RunRecord& o) const = default;
};

/// Values no run can produce (negative times or counts, zero-length steps, a successful run without a batch size,
/// non-finite figures), each as "path: value (why)". Empty for a sound record. Readers refuse records with any.
std::vector<std::string> record_problems(const RunRecord& r);

/// Recomputes `summary` totals from `epochs` and the per-step samples (ms) of all timed steps.
void summarize_run(RunRecord& r, const std::vector<double>& all_step_ms);

/// Each rank's own description (one rank in `ranks`), indexed by rank, merged into one entry per machine (the same
/// hostname and address), in order of each machine's lowest rank.
std::vector<NodeRecord> nodes_of_ranks(const std::vector<NodeRecord>& per_rank);
/// Energy over all timed epochs for the whole job (every GPU): unset figures when an epoch lacks energy.
struct JobEnergy {
  std::optional<double> energy_j, joules_per_sample, power_avg_w;  ///< J, J per sample trained, J / s (W)
  int64_t devices = 0;                                              ///< GPUs summed
};
/// From the epochs' telemetry; works for records written before the summary carried these figures.
JobEnergy job_energy(const RunRecord& r);
/// The NVIDIA driver the run used: NVML's reading (telemetry.driver_version), which environment.nvidia_driver_version
/// repeats; the environment's where the telemetry has none.
const std::string& nvidia_driver_of(const RunRecord& r);
/// Fills the summary's energy fields from job_energy.
void summarize_energy(RunRecord& r);
/// Fills the summary's drift fields from the first and last complete epochs (needs two of them).
void compute_drift(RunRecord& r);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EnvironmentRecord, hostname, os, cpu_model, cpu_cores, device,
                                                device_type, device_name, device_memory_bytes,
                                                compute_capability, multiprocessors, pci_bus_id, nvidia_driver_version,
                                                cuda_driver_api_version, driver_version, cuda_runtime_version, cudnn_version, libtorch_version,
                                                libtorch_build, backend, backend_library, backend_library_version,
                                                gpubench_version, git_revision, build_type, compiler,
                                                command_line, start_time_utc, nccl_version,
                                                host_memory_bytes, cpu_governor, container, variables)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelRecord, name, parameters, train_flops_per_sample,
                                                attention_flops_per_sample, sample_unit, tokens_per_sample, step,
                                                scenario_keys)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Fp8Record, activation_format, weight_format, grad_format, scaling,
                                                amax_history, converted, kept, bf16_peak_tflops, fp8_peak_tflops,
                                                mfu_bf16_peak, mfu_fp8_peak, fp8_peak_source)
void to_json(nlohmann::json& j, const PrecisionRecord& p);
void from_json(const nlohmann::json& j, PrecisionRecord& p);
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FusionRecord, name, implementation, note)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExecutionRecord, mode, graph_requested, graph_fallback,
                                                optimizer_implementation, kernels, fusions)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NodeRecord, hostname, address, ranks, os, cpu_model, cpu_cores,
                                                host_memory_bytes, device_name, libtorch_version, gpubench_version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DistributedRecord, world_size, backend, launcher, bucket_mb, buckets,
                                                rank_epoch_seconds, rank_comm_wait_seconds, slowest_rank,
                                                interconnect, rendezvous, nodes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SkippedFileRecord, path, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DecodeCalibrationRecord, step_img_per_s, cpu_img_per_s, gpu_img_per_s,
                                                gpu_backend, fed_cpu_img_per_s, fed_gpu_img_per_s,
                                                fed_mixed_img_per_s, mixed_share, choice, expected_img_per_s, seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DataRecord, source, path, images, classes, other_files, links_outside, bytes, listing_digest, decode, decoder,
                                                decode_fallback, decode_reason, decode_calibration, workers, prefetch, augmentation,
                                                data_only,
                                                files_skipped, skipped_examples)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HostActivity, seconds, cpu_cores, own_cpu_s, other_cpu_s, steal_s,
                                                load_average_1m, job_processes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EpochRecord, index, steps, samples, seconds, samples_per_s,
                                                step_time, step_times_ms, peak_allocated_bytes, peak_reserved_bytes,
                                                peak_host_rss_bytes, loss_first, loss_last, skipped_steps,
                                                complete, telemetry, host, rank_telemetry, metrics)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BottleneckFactor, factor, share, evidence, method)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunSummary, epochs, steps, samples, seconds, samples_per_s,
                                                steps_per_s, tokens_per_s,
                                                epoch_seconds_mean, achieved_tflops, peak_tflops, peak_source, mfu,
                                                step_time,
                                                peak_allocated_bytes, peak_reserved_bytes, peak_host_rss_bytes,
                                                warmup_steps, warmup_seconds, stopped_by, bounded_by,
                                                bottleneck_evidence, bottleneck_factors, energy_j,
                                                joules_per_sample, power_avg_w, power_devices,
                                                throughput_drift_pct, sm_clock_drift_pct, temperature_drift_c, metrics)

void to_json(nlohmann::json& j, const RunRecord& r);
void from_json(const nlohmann::json& j, RunRecord& r);

}  // namespace gpubench
