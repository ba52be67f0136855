#pragma once
// One function from what the user typed (scenario files, the positional model, flags) to the scenario a run executes:
// loaded and checked with file:line:key errors, every default filled (the model's keys, the device's, the recipe's),
// the record paths chosen and the data folder checked, all before anything runs. `run` executes exactly this;
// `validate --resolved` and `run --dry-run` print it. Torch-free: the engine supplies the model catalog and the
// device facts (gpubench/runner/resolve_here.hpp wires them for this machine).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/scenario/model_catalog.hpp"
#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench {

/// What the user typed, before anything is read.
struct ScenarioInputs {
  std::optional<std::string> config;  ///< --config FILE (YAML or JSON)
  std::optional<std::string> model;   ///< the positional MODEL
  bool amp = false;                   ///< --amp: precision amp
  bool channels_last = false;         ///< --channels-last: memory_format channels_last
  /// Flag overrides: scenario key -> its text; `flag_of` names each key's flag for messages.
  std::map<std::string, std::string> overrides;
  std::map<std::string, std::string> flag_of;
};

/// Files and flags merged and checked (flags override the file). Throws ScenarioError naming file, line and key.
Scenario load_scenario(const ScenarioInputs& in, const ModelOptions& models);

/// The device a scenario would run on, as the engine finds it on this machine.
struct DeviceFacts {
  std::string id;    ///< "cpu", "cuda:0", "mps"; the request itself when unavailable
  std::string type;  ///< "cpu", "cuda", "rocm", "mps": what the device-dependent defaults follow
  bool available = true;
  std::string reason;  ///< why it is unavailable
  /// Memory a run there can use, in bytes (0: unknown): the host's MemAvailable on the CPU, the GPU's total memory.
  int64_t memory_bytes = 0;
  std::string memory_source;  ///< what memory_bytes is ("MemAvailable", "total device memory")
  std::string name;            ///< "NVIDIA H200"; empty where unknown
  int compute_capability = 0;  ///< CUDA: major * 10 + minor (90 for Hopper); 0 elsewhere or unknown
  /// gpubench's backend that serves it: cuda | cpu | generic (docs/backends.md); empty when unavailable.
  std::string backend;
};

/// Why a device cannot train in FP8 (precision: fp8), naming it and its compute capability: FP8 tensor cores start
/// at compute capability 8.9 (Ada, Hopper, Blackwell); the CPU, MPS and ROCm have none gpubench uses. Nothing where
/// it can.
std::optional<std::string> fp8_unsupported(const std::string& device_type, const std::string& device_name,
                                           int capability);

/// What a run needs in memory before anything is built: the model state (fp32 weights, their autocast copies,
/// gradients, the optimizer's moments) and the activations a step keeps, from the model's declared size. The peak is
/// at the end of the forward pass, when the gradients of the last step are gone (zero_grad sets them to none) and the
/// activations are all kept, or at the end of the backward, when the gradients exist and the activations are freed:
/// total = weights + autocast copies + optimizer state + max(activations, gradients). Over the 162 committed eager
/// single-GPU H200 records (every model, training and inference) it is 79-97 % of the measured peak (ModelSizeTest).
struct MemoryEstimate {
  int64_t parameters = 0;
  int64_t weights_bytes = 0, autocast_copy_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, activation_bytes = 0;
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;  ///< the device's (DeviceFacts::memory_bytes); 0: unknown
  std::string available_source;
  bool fits() const { return available_bytes <= 0 || total_bytes <= available_bytes; }
};

/// The estimate for a resolved scenario (model keys and device defaults filled) of `model`; nullopt when the model
/// declares no size.
std::optional<MemoryEstimate> estimate_memory(const Scenario& s, const ModelInfo& model, const std::string& precision,
                                              const DeviceFacts& device);

struct ResolveOptions {
  int world_size = 1;  ///< ranks that share the data folder (each trains batch_size per step)
  int repeats = 1;     ///< records the run writes (`--repeats`)
  /// Checks `data: folder` against the resolved scenario (the data layer's scan, bound by the caller); throws
  /// std::runtime_error saying what is wrong. Empty: the folder is not checked.
  std::function<void(const Scenario&, int world_size)> check_data;
  /// Choose the record paths (an empty `output` becomes the default record path). Off for library callers that
  /// write no record file.
  bool choose_output = true;
  /// A memory estimate above the device's memory refuses the scenario (with `memory_check: refuse`). Off: a note
  /// only (validate checks a file, whatever machine it runs on).
  bool refuse_memory = true;
  /// precision: fp8 on a device without FP8 tensor cores refuses the scenario. Off: a note (validate).
  bool refuse_unsupported = true;
  /// The binary has gpubench's CUDA module (BuildInfo::cuda_module). Without it, the options only the module runs
  /// (cuda_module_requests) refuse the scenario (a note with refuse_unsupported off).
  bool cuda_module = true;
};

/// The options of `s` that only gpubench's CUDA module runs, each as "KEY: VALUE (--FLAG VALUE)": kernels: fused,
/// precision: fp8, decode: gpu | mixed, graph: true.
std::vector<std::pair<std::string, std::string>> cuda_module_requests(const Scenario& s);

/// The allocator cap a scenario asks for, in bytes: its memory_limit, else its emulated card's usable memory
/// (usable_memory_bytes, device_table.hpp); none if neither is set. What `run` caps at and `fit` plans under.
std::optional<int64_t> requested_memory_cap(const Scenario& s);

/// The scenario a run executes, with what resolution decided.
struct ResolvedScenario {
  Scenario scenario;                       ///< every key concrete; `output` is the record path
  DeviceFacts device;
  std::string precision;                   ///< as it resolves on that device: fp32 | tf32 | bf16 | fp16 | fp8
  std::vector<std::string> notes;          ///< what the user must know (the CPU bounds); the record keeps them
  std::vector<std::string> record_paths;   ///< one per repeat (`_r1`, `_r2`, ... when repeating)
  std::optional<MemoryEstimate> memory;    ///< checked against the device's memory (`memory_check`)
};

/// The documented variables read into `s`: each kernel option's (kernel_options.hpp: GPUBENCH_DECODE_RUN, ...) where
/// neither file nor flag set its key (its origin then "environment VAR"), and the hooks (Scenario::fault_inject from
/// GPUBENCH_FAULT_INJECT, Scenario::nvjpeg_library from GPUBENCH_NVJPEG). The one place a run's choices come from the
/// environment: the engine reads none. Throws ScenarioError naming the variable for a malformed value.
void apply_documented_environment(Scenario& s, const std::function<const char*(const char*)>& getenv);

/// `requested` (loaded and checked) resolved for `device`: the documented environment (above), the model's keys, the device-dependent defaults (batch,
/// warm-up, time budget and memory format; bounded on the CPU), the recipe's optimizer, the record paths, the
/// model's cross-key rules and the data folder. Throws ScenarioError naming the key. Resolving a resolved scenario
/// changes nothing.
ResolvedScenario resolve_scenario(const Scenario& requested, const ModelCatalog& models, const DeviceFacts& device,
                                  const ResolveOptions& options);

/// The precision a request resolves to on a device type: `amp` is PyTorch's (fp16 autocast with loss scaling on
/// GPUs, bf16 autocast on the CPU), except on a CPU without bf16 instructions (cpu_bf16_support), where it is fp32:
/// emulated bf16 is ~9x slower there, and mixed precision is asked for speed. The others are themselves.
std::string resolved_precision(const std::string& requested, const std::string& device_type);

/// Fills the device-dependent defaults of `s` and its optimizer from `model`'s recipe (then PyTorch's defaults);
/// returns the notes a user must see (the CPU bounds). Leaves set values alone.
std::vector<std::string> fill_device_defaults(Scenario& s, const ModelInfo& model, const DeviceFacts& device);

/// The default record path: runs/<model>_<device>_<precision>_bs<N>.json, or the first of _2, _3, ... whose file
/// (and, when repeating, whose _r1 file) does not exist yet. Deterministic for a given folder, so `validate
/// --resolved` shows the path the run will write.
std::string default_record_path(const Scenario& s, const std::string& precision, int repeats);
/// "runs/x.json" -> "runs/x_r2.json" when repeating; unchanged for a single run.
std::string repeat_record_path(const std::string& path, int index, int count);

/// `text` as part of a file name: letters, digits and `. - _ =` stay, anything else becomes '-'.
std::string file_name_part(std::string text);

void to_json(nlohmann::json& j, const DeviceFacts& d);
void to_json(nlohmann::json& j, const MemoryEstimate& m);
/// {"schema": "gpubench.resolved_scenario", "scenario": ..., "scenario_sources": ..., "device": ..., "precision", "notes",
/// "record_paths"}: the scenario in the form a record's `scenario` holds it.
void to_json(nlohmann::json& j, const ResolvedScenario& r);

}  // namespace gpubench
