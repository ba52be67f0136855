#pragma once
// Reading scenarios from YAML/JSON files and command-line overrides, with errors that name file, line and key.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench {

/// A scenario that cannot be accepted. what() is the full user-facing message:
/// "<file>:<line>:<column>: <key>: <problem>" (or "command line --flag: ..." for overrides).
/// A file with several bad keys is one ScenarioError holding all of them (`all()`, in file order): what() is every
/// message, one per line, and origin(), key() and problem() are the first's.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(Origin origin, std::string key, std::string problem);
  /// `errors` (at least one) as one error.
  explicit ScenarioError(std::vector<ScenarioError> errors);
  const Origin& origin() const { return origin_; }
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }
  /// Every problem this error stands for: itself alone, or the file's problems in order.
  std::vector<ScenarioError> all() const { return others_.empty() ? std::vector<ScenarioError>{*this} : others_; }

 private:
  Origin origin_;
  std::string key_;
  std::string problem_;
  std::vector<ScenarioError> others_;  ///< set when this error stands for several
};

/// One documented scenario key (for --help, docs and "did you mean").
struct ScenarioKey {
  std::string key;          ///< dotted key as written in files, e.g. "optimizer.lr"
  std::string flag;         ///< command-line flag, e.g. "--lr"
  std::string description;  ///< one line, with the unit
  bool boolean = false;     ///< true/false key: the bare flag (`--cuda-graph`) means true
  bool per_model = false;   ///< a model's own key (ModelOption); common to all models otherwise
  /// What the value looks like, for typed help: INT, NUMBER, BOOL, DURATION (90s, 2m), FILE, DIR, TEXT, or the
  /// choices ("fp32|tf32|bf16|fp16|amp").
  std::string type_name;
};

/// One of a model's own scenario keys, declared next to the model's factory (LibTorch's options structs): the
/// loader validates it, `--help` lists it under the model, and the engine fills in its default.
struct ModelOption {
  enum class Type { kInt, kFloat, kBool, kChoice };
  std::string key;                    ///< as written in files, e.g. "seq_len"
  std::string flag;                   ///< e.g. "--seq-len"
  std::string help;                   ///< one line, with the unit
  Type type = Type::kInt;
  double min = 0, max = 0;            ///< inclusive range (kInt, kFloat)
  std::vector<std::string> choices;   ///< kChoice
  nlohmann::json default_value;       ///< null: the model's own architecture value (an override key)
  /// Other names of this key, still read from files, flags and records (bert-base's and gpt2's `width` is their
  /// `hidden`, the name llama gives the same concept): one name per concept across models.
  std::vector<std::string> aliases;
  ScenarioKey as_key() const;
};

/// `s`'s model keys under the names `own` (its model's declarations) gives them: a value set by an alias moves to its
/// key, with its origin. Throws ScenarioError when a key and its alias are both set.
void apply_key_aliases(const std::vector<ModelOption>& own, Scenario& s);

/// Each model's own keys, by model name (the engine's registry: model_options()).
using ModelOptions = std::map<std::string, std::vector<ModelOption>>;

/// The common keys, then every model's own keys once each (first declaration wins), for help and sweeps.
std::vector<ScenarioKey> all_scenario_keys(const ModelOptions& models);

/// The closest of `choices` to `word`, fewer than `below` edits away; "" when none is (did-you-mean for keys,
/// models, flags and commands).
std::string closest_match(const std::string& word, const std::vector<std::string>& choices, size_t below = 3);

/// Seconds from "90", "1.5", "90s", "2m", "1h" or "500ms" (the syntax of duration keys such as time_budget_s).
/// Throws ScenarioError naming `where` (e.g. "command line --cooldown").
double parse_duration_s(const std::string& text, const std::string& where);

/// The keys every model takes (the models' own keys are declared by the models: ModelOptions).
const std::vector<ScenarioKey>& scenario_keys();

/// Builds a Scenario from files and flag overrides, validating every value as it arrives.
class ScenarioLoader {
 public:
  /// `known_models`: names accepted for `model`; empty accepts any name. No model's own keys are known then.
  explicit ScenarioLoader(std::vector<std::string> known_models);
  /// The registry's models with their own keys: files and flags may set any model's key (validated by its
  /// declaration); check() refuses a key the chosen model does not take and checks it against that model's range.
  explicit ScenarioLoader(ModelOptions models);

  /// Merges a YAML (.yaml/.yml) or JSON (.json) file into `s`. Throws ScenarioError.
  void load_file(const std::string& path, Scenario& s) const;
  /// Merges scenario text (format by `format`: "yaml" or "json"); `source` names it in messages.
  void load_text(const std::string& text, const std::string& format, const std::string& source,
                 Scenario& s) const;
  /// Applies one override: `key` is a dotted scenario key, `value` the flag's text, `flag` names it in errors.
  void apply_override(const std::string& key, const std::string& value, const std::string& flag,
                      Scenario& s) const;
  /// Moves values set by a key's alias to the key (apply_key_aliases with the chosen model's declarations).
  void apply_aliases(Scenario& s) const;
  /// Checks cross-field rules (e.g. dataset_size >= batch_size) and that every model key set applies to the chosen
  /// model ("key 'layers': not a key of resnet50; it applies to bert-base, sd-unet"). Throws ScenarioError.
  void check(const Scenario& s) const;

 private:
  /// How a model key is read: by the declaration of the model `s` names, once it names one; before that (a file
  /// may name the model after its keys) by the models' declarations merged, widest range and every choice, and
  /// check() then holds the value to the chosen model's.
  const ModelOption* find_option(const std::string& key, const Scenario& s) const;
  std::vector<std::string> known_models_;
  ModelOptions models_;
  std::map<std::string, ModelOption> merged_options_;
};

}  // namespace gpubench
