#pragma once
// Scenario: everything that defines one benchmark run, validated, with the origin of every value.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/scenario/kernel_options.hpp"

namespace gpubench {

/// Where a scenario value came from, so an error (or a reader of the record) can point at it.
struct Origin {
  std::string source;  ///< file path, "command line --flag", or "default"
  int line = 0;        ///< 1-based; 0 when the source has no lines (flags, defaults)
  int column = 0;      ///< 1-based; 0 when unknown

  /// "file.yaml:3:7", "command line --batch-size" or "default".
  std::string describe() const;
};

/// Optimizer choice and hyper-parameters. Unset values take the model's default at run time.
struct OptimizerSettings {
  std::string name;                     ///< "sgd" or "adamw"; empty = the model's default
  std::optional<double> lr;             ///< learning rate
  std::optional<double> momentum;       ///< SGD momentum
  std::optional<double> weight_decay;   ///< L2 (SGD) or decoupled (AdamW) weight decay
  std::optional<bool> nesterov;         ///< SGD Nesterov momentum
  std::optional<double> beta1, beta2;   ///< AdamW moment decay rates
  std::optional<double> eps;            ///< AdamW denominator epsilon
  std::string implementation;           ///< "fused" (ATen's fused kernels) | "foreach"; empty = auto (fused)

  bool operator==(const OptimizerSettings& o) const = default;
};

/// One benchmark run, as requested. Optional fields are resolved (device-, model-dependent defaults) by the
/// engine; the record stores the resolved scenario, so every value in a record is concrete.
struct Scenario {
  std::string name;                       ///< free-form label
  std::string model = "resnet50";         ///< a name from `gpubench list`
  /// train (forward, backward, optimizer step) | inference (eval mode under inference mode: forward only, no
  /// optimizer; per-batch latency percentiles in the record; the UNet runs one guided denoising step) | generate
  /// (decoders: a prompt of prompt_tokens, then new_tokens greedy tokens one at a time over a static KV cache)
  std::string mode = "train";
  /// mode: generate: tokens of the prompt (prefilled in one forward) and tokens generated after it, per sequence
  /// (resolved to 512 and 128). Written to records only for generate, so other modes' identities stay as they were.
  std::optional<int64_t> prompt_tokens, new_tokens;
  /// mode: generate: the KV cache's element type: auto (the weights': bf16 or fp16 under those precisions, else
  /// fp32) | bf16 | fp16 | fp32
  std::string kv_cache_dtype = "auto";
  /// precision: fp8 (FP8 matrix products in the Linear layers, bf16 autocast around them; engine/fp8.h):
  std::string fp8_grad_format = "e5m2";  ///< gradients' format: e5m2 (range, default) | e4m3 (precision)
  std::string fp8_scaling = "tensor";    ///< tensor (current amax, default) | rowwise | delayed (amax history)
  int64_t fp8_amax_history = 16;         ///< delayed scaling: steps of amax kept
  bool fp8_lm_head = false;              ///< convert the LM head too
  bool fp8_classifier = false;           ///< convert a classifier head too
  std::optional<int64_t> batch_size;      ///< samples per step; default from the model (CPU: bounded)
  std::string precision = "fp32";         ///< fp32 | tf32 | bf16 | fp16 | amp (the device's preferred mixed precision) | fp8
  std::string memory_format = "auto";     ///< auto | contiguous | channels_last
  std::string device = "auto";            ///< auto | cpu | cuda | cuda:N | rocm | rocm:N | mps
  int64_t epochs = 1;                     ///< timed epochs
  int64_t dataset_size = 100000;          ///< samples per epoch (the seeds' 100k-image ImageNet subset)
  std::optional<int64_t> warmup_steps;    ///< untimed steps before the first epoch (default 10; CPU: 2)
  OptimizerSettings optimizer;
  uint64_t seed = 0;                      ///< seeds model initialisation and the synthetic data
  std::optional<double> time_budget_s;    ///< stop timing after this many measured seconds (s); CPU default 60
  std::optional<double> duration_s;       ///< sustained run: keep training whole epochs for this long (s)
  int64_t grad_accumulation = 1;          ///< micro-batches of batch_size per optimizer step
  bool cudnn_benchmark = true;            ///< let cuDNN autotune convolution algorithms
  bool graph = false;                     ///< capture the whole step in a CUDA graph and replay it (CUDA only)
  /// aten (the operations PyTorch eager runs: like for like with published eager figures) | fused (gpubench's fused
  /// kernels where the model has them; the record lists each and how it ran)
  std::string kernels = "aten";
  /// The per-operation choices of fused kernels, generation and GPU decoding (kernel_options.hpp): keys
  /// kernel_options.<name>. Written to records only where one applies (kernels: fused, mode: generate, data: folder).
  KernelOptions kernel_options;
  /// refuse (exit 2 before anything is built when the memory estimate exceeds the device's memory) | warn (a note)
  std::string memory_check = "refuse";
  /// Cap the run's device memory (bytes): the CUDA caching allocator's per-process fraction, so that a large GPU shows
  /// a smaller card's out-of-memory (docs/fit.md). Unset: no cap. Written to records only where set.
  std::optional<int64_t> memory_limit;
  /// The device table card whose usable memory becomes `memory_limit` (`--emulate`); empty: none.
  std::string emulate;
  /// An out-of-tree accelerator's backend library (a LibTorch PrivateUse1 backend), loaded before devices are
  /// counted; its devices are `device: NAME` (the name it registers). Empty: none. Written to records only where set.
  std::string backend_library;
  double ddp_bucket_mb = 25;              ///< multi-GPU: gradient all-reduce bucket size (MiB), as DDP's bucket_cap_mb
  double ddp_timeout_s = 300;             ///< multi-GPU: a collective or rendezvous that takes longer fails the run (s)
  std::string output;                     ///< record path; empty = runs/<generated name>.json
  bool telemetry = true;                  ///< sample power, clocks and temperature during the timed epochs
  double telemetry_interval_s = 0.1;      ///< sampling period (s)
  std::string telemetry_trace;            ///< CSV file for the raw samples; empty = none
  bool profile = false;                   ///< after the timed epochs, profile separate steps (kernels, categories)
  int64_t profile_steps = 5;              ///< steps in that profile
  std::string data = "synthetic";         ///< synthetic (one batch on the device, reused) | folder (JPEG ImageFolder)
  std::string data_path;                  ///< data: folder: the ImageFolder root (one folder per class)
  int64_t data_workers = 0;               ///< data: folder: decoding threads per rank (0: the cores less one, per rank)
  std::string decode = "auto";            ///< data: folder: cpu (libjpeg-turbo) | gpu (nvJPEG) | auto (gpu where it works)
  int64_t prefetch = 3;                   ///< data: folder: batches prepared ahead of the step
  bool data_only = false;                 ///< data: folder: time the input pipeline alone (no model step)

  /// The chosen model's own keys (image_size, seq_len, layers, ...): each model declares them, with type, range,
  /// default and help, next to its factory (the engine's registry); the loader checks them against that
  /// declaration. Values are JSON scalars; null means "the model's own" for keys that override an architecture.
  /// The engine fills in the model's defaults, so a record holds every key the model takes.
  std::map<std::string, nlohmann::json> model_options;

  /// Test and installation hooks from documented variables, filled by the resolver (never scenario keys, never
  /// recorded): GPUBENCH_FAULT_INJECT (docs/cli.md: a rank killed, stopped or out of memory at a chosen step) and
  /// GPUBENCH_NVJPEG (the nvJPEG library to load first).
  std::string fault_inject, nvjpeg_library;

  /// Where each key that was set came from (dotted key -> origin). Keys absent here hold defaults.
  std::map<std::string, Origin> origins;

  /// A model option's value, or nullopt when absent or null. Throws nlohmann::json::type_error on a wrong type.
  template <typename T>
  std::optional<T> option(const std::string& key) const {
    const auto it = model_options.find(key);
    if (it == model_options.end() || it->second.is_null()) return std::nullopt;
    return it->second.get<T>();
  }

  bool is_set(const std::string& key) const { return origins.count(key) != 0; }
  /// kernels: fused (gpubench's kernels where the model has them, steered by kernel_options), the one test of the
  /// kernel path every layer asks.
  bool fused_kernels() const { return kernels == "fused"; }
  /// Values only (origins are provenance, not identity): two runs of the same scenario compare equal.
  bool operator==(const Scenario& o) const;
};

/// Whether any of the scenario's kernel_options acts in it (kernels: fused, mode: generate or data: folder): where
/// records and identities carry them.
bool kernel_options_apply(const Scenario& s);

/// Preferred-precision values accepted by `precision`.
const std::vector<std::string>& precision_names();

void to_json(nlohmann::json& j, const Origin& o);
void from_json(const nlohmann::json& j, Origin& o);
void to_json(nlohmann::json& j, const OptimizerSettings& o);
void from_json(const nlohmann::json& j, OptimizerSettings& o);
void to_json(nlohmann::json& j, const Scenario& s);
void from_json(const nlohmann::json& j, Scenario& s);

}  // namespace gpubench
