#pragma once
// Reading scenarios from YAML/JSON files and command-line overrides, with errors that name file, line and key.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpubench/core/scenario.hpp"

namespace gpubench {

/// A scenario that cannot be accepted. what() is the full user-facing message:
/// "<file>:<line>:<column>: <key>: <problem>" (or "command line --flag: ..." for overrides).
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(Origin origin, std::string key, std::string problem);
  const Origin& origin() const { return origin_; }
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  Origin origin_;
  std::string key_;
  std::string problem_;
};

/// One documented scenario key (for --help, docs and "did you mean").
struct ScenarioKey {
  std::string key;          ///< dotted key as written in files, e.g. "optimizer.lr"
  std::string flag;         ///< command-line flag, e.g. "--lr"
  std::string description;  ///< one line, with the unit
  bool boolean = false;     ///< true/false key: the bare flag (`--cuda-graph`) means true
  bool per_model = false;   ///< applies only to the models that declare it (ModelKeys); common to all otherwise
};

/// For each model, the per-model scenario keys it takes (the engine's registry declares them next to each factory).
using ModelKeys = std::map<std::string, std::vector<std::string>>;

/// Whether `key` is a per-model key (image_size, seq_len, layers, ...) rather than one every model takes.
bool is_per_model_key(const std::string& key);

/// Seconds from "90", "1.5", "90s", "2m", "1h" or "500ms" (the syntax of duration keys such as time_budget_s).
/// Throws ScenarioError naming `where` (e.g. "command line --cooldown").
double parse_duration_s(const std::string& text, const std::string& where);

/// Every key a scenario file may contain.
const std::vector<ScenarioKey>& scenario_keys();

/// Builds a Scenario from files and flag overrides, validating every value as it arrives.
class ScenarioLoader {
 public:
  /// `known_models`: names accepted for `model` (the engine's registry); empty accepts any name. Per-model keys are
  /// then not checked against the model.
  explicit ScenarioLoader(std::vector<std::string> known_models);
  /// The registry's models with their per-model keys: check() also refuses a key of another model.
  explicit ScenarioLoader(ModelKeys model_keys);

  /// Merges a YAML (.yaml/.yml) or JSON (.json) file into `s`. Throws ScenarioError.
  void load_file(const std::string& path, Scenario& s) const;
  /// Merges scenario text (format by `format`: "yaml" or "json"); `source` names it in messages.
  void load_text(const std::string& text, const std::string& format, const std::string& source,
                 Scenario& s) const;
  /// Applies one override: `key` is a dotted scenario key, `value` the flag's text, `flag` names it in errors.
  void apply_override(const std::string& key, const std::string& value, const std::string& flag,
                      Scenario& s) const;
  /// Checks cross-field rules (e.g. dataset_size >= batch_size) and, with ModelKeys, that every per-model key set
  /// applies to the chosen model ("key 'layers': not a key of resnet50; it applies to bert-base, sd-unet").
  /// Throws ScenarioError.
  void check(const Scenario& s) const;

 private:
  std::vector<std::string> known_models_;
  ModelKeys model_keys_;  ///< empty: per-model keys are not checked
};

}  // namespace gpubench
