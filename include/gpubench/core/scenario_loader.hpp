#pragma once
// Reading scenarios from YAML/JSON files and command-line overrides, with errors that name file, line and key.

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
};

/// Seconds from "90", "1.5", "90s", "2m", "1h" or "500ms" (the syntax of duration keys such as time_budget_s).
/// Throws ScenarioError naming `where` (e.g. "command line --cooldown").
double parse_duration_s(const std::string& text, const std::string& where);

/// Every key a scenario file may contain.
const std::vector<ScenarioKey>& scenario_keys();

/// Builds a Scenario from files and flag overrides, validating every value as it arrives.
class ScenarioLoader {
 public:
  /// `known_models`: names accepted for `model` (the engine's registry); empty accepts any name.
  explicit ScenarioLoader(std::vector<std::string> known_models);

  /// Merges a YAML (.yaml/.yml) or JSON (.json) file into `s`. Throws ScenarioError.
  void load_file(const std::string& path, Scenario& s) const;
  /// Merges scenario text (format by `format`: "yaml" or "json"); `source` names it in messages.
  void load_text(const std::string& text, const std::string& format, const std::string& source,
                 Scenario& s) const;
  /// Applies one override: `key` is a dotted scenario key, `value` the flag's text, `flag` names it in errors.
  void apply_override(const std::string& key, const std::string& value, const std::string& flag,
                      Scenario& s) const;
  /// Checks cross-field rules (e.g. dataset_size >= batch_size). Throws ScenarioError.
  void check(const Scenario& s) const;

 private:
  std::vector<std::string> known_models_;
};

}  // namespace gpubench
