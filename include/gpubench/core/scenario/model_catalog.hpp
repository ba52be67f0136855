#pragma once
// What each model declares about itself, torch-free: its keys, defaults, recipe and cross-key rules. The engine's
// registry fills one entry per model next to its factory; the scenario loader, the resolver, `--help`, `validate`
// and `list --format json` read them, so nothing outside the registry repeats a model's defaults.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpubench/core/scenario/scenario.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench {

/// A model's size from its keys, for the memory estimate made before anything is built.
struct ModelSize {
  int64_t parameters = 0;  ///< trainable parameters, as count_parameters() counts them on the built model
  /// Bytes one sample's forward keeps for the backward in 2-byte (fp16/bf16) activations, training, no gradient
  /// checkpointing: a lower-side figure (the H200's measured peaks are 5-30 % above it).
  double activation_bytes_per_sample = 0;
  /// The same with gradient checkpointing (one block's activations plus each block's input).
  double checkpointed_activation_bytes_per_sample = 0;
  /// What one sample holds at once in inference (no backward): the logits of a language model, a fraction of the
  /// training figure otherwise.
  double inference_activation_bytes_per_sample = 0;
  /// mode: generate: KV-cache elements one sequence holds per position (2 x layers x key-value heads x head
  /// dimension); 0 for models that do not generate.
  double kv_elements_per_token = 0;
};

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
  /// The reference recipe's optimizer and hyper-parameters (what the scenario leaves open is filled from it).
  OptimizerSettings recipe;
  bool channels_last = false;  ///< `memory_format: auto` picks channels_last on GPUs (4-D activations)
  bool image_input = false;    ///< an image classifier (what `data: folder` feeds)
  /// A decoder that runs mode: generate (a KV cache, one token per step); its positions are its `seq_len` key.
  bool generates = false;
  /// Rules across this model's keys (head counts that divide widths, ...), applied to a scenario whose model keys
  /// hold their defaults; throws std::invalid_argument naming the keys. Empty: no rules.
  std::function<void(const Scenario&)> check;
  /// Its size for a scenario whose model keys hold their defaults (see ModelSize). Empty: no memory estimate.
  std::function<ModelSize(const Scenario&)> size;

  std::vector<std::string> option_keys() const;
};

using ModelCatalog = std::vector<ModelInfo>;

/// Each model's own keys, by model name (what ScenarioLoader takes).
ModelOptions options_by_model(const ModelCatalog& catalog);
/// The entry named `name`, or nullptr.
const ModelInfo* find_model_info(const ModelCatalog& catalog, const std::string& name);

/// `s` for the model `info` describes: another model's key is refused (std::invalid_argument naming it), and the
/// model's keys left unset take their declared defaults, so a record holds every key the model took.
Scenario fill_model_options(const ModelInfo& info, Scenario s);

/// The catalog as JSON for scripts (`gpubench list --format json`): per model its unit, default batch, recipe and
/// every key with type, range, choices, default, flag and help. Schema "gpubench.models".
nlohmann::json catalog_json(const ModelCatalog& catalog);

}  // namespace gpubench
