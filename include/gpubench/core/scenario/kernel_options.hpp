#pragma once
// The per-operation choices under `kernels: fused`, generation and GPU decoding that were once environment switches:
// scenario keys `kernel_options.<name>` (YAML `kernel_options: {decode_run: off}`, flags `--decode-run off`), each
// declared once in kernel_option_table() with its type, default, help and the variable that used to set it. The
// resolver fills every one (a documented variable counts where neither file nor flag set the key, its origin
// "environment VAR"), `validate --resolved` shows them, the record keeps them, and the engine reads them from the
// scenario: no engine code reads the environment.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubench {

/// A GEMV's reach: nowhere, where it measured faster on the H200 (the default), or on every product it can take.
enum class KernelReach { kOff, kAuto, kOn };

/// Every choice, concrete. Defaults are the forms measured best on the H200 (docs/generate.md, docs/data.md).
struct KernelOptions {
  KernelReach decode_run = KernelReach::kAuto;     ///< the run GEMV (one token, 8 MiB of weights or more)
  KernelReach decode_stream = KernelReach::kAuto;  ///< the streamed GEMV (rows of 2,048+, 8 MiB or more)
  bool decode_pdl = true;                ///< decode kernels launched programmatically (sm_90+), overlapping the last
  bool decode_evict_first = true;        ///< the GEMVs read weights with L2's evict_first priority
  bool decode_greedy_tail = true;        ///< the greedy argmax inside the LM head's launch
  bool decode_embed = true;              ///< the embedding rows in one programmatic launch
  int64_t attention_cluster_splits = 8;  ///< splits per thread-block cluster in decode attention (0: no clusters)
  int64_t attention_min_split = 64;  ///< positions per split of decode attention, at least
  bool decode_one_kernel = false;        ///< the whole decode step as one persistent kernel (slower on the H200)
  bool flash_decode = true;              ///< FlashAttention's KV-cache kernel for decode attention (else masked SDPA)
  bool prefill_graph = true;             ///< the prompt's prefill captured and replayed as a CUDA graph
  bool nvjpeg_roi = true;                ///< nvJPEG decodes only the crop window (batched ROI decode)

  bool operator==(const KernelOptions& o) const;
  bool operator!=(const KernelOptions& o) const { return !(*this == o); }
};

/// One option's declaration: the table the loader, the help, the resolver, the record and the docs read.
struct KernelOptionInfo {
  std::string name;    ///< "decode_run": key kernel_options.decode_run, flag --decode-run
  std::string type;    ///< "off|auto|on", "BOOL" or "INT"
  int64_t min = 0, max = 0;  ///< INT: the accepted range
  std::string env;     ///< the documented variable that sets it when neither file nor flag does
  std::string help;    ///< what it chooses, for `run --help` and the docs
  std::string applies; ///< where it acts: "kernels: fused, mode: generate", "mode: generate", "decode: gpu|mixed"
  /// The option's value in `o` as JSON ("off"/"auto"/"on", true/false, an integer), and setting it from JSON
  /// (already checked against type and range).
  std::function<nlohmann::json(const KernelOptions& o)> get;
  std::function<void(KernelOptions& o, const nlohmann::json& v)> set;
};

/// All options, in the order help and records list them.
const std::vector<KernelOptionInfo>& kernel_option_table();
const KernelOptionInfo* find_kernel_option(const std::string& name);

/// "off" | "auto" | "on".
std::string reach_name(KernelReach r);
/// The reach named `text` ("off"/"auto"/"on"; the old variables' "0"/"1"/"" read as off/on/auto), or nullopt.
std::optional<KernelReach> parse_reach(const std::string& text);

/// The variables' values (read by the caller, a function so tests can supply their own), checked as the keys are:
/// {option name -> value} for each variable that is set; a malformed value throws std::invalid_argument
/// "VARIABLE='value': takes ...".
std::vector<std::pair<std::string, nlohmann::json>> kernel_options_from_environment(
    const std::function<const char*(const char*)>& getenv);

/// The options that differ from the defaults, as "decode_run off, prefill_graph false" ("" when none): for labels
/// and notes.
std::string describe_non_defaults(const KernelOptions& o);

void to_json(nlohmann::json& j, const KernelOptions& o);
void from_json(const nlohmann::json& j, KernelOptions& o);

}  // namespace gpubench
