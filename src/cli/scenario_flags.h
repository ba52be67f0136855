#pragma once
// The flags that make a scenario, shared by run, sweep, scaling and validate: the positional MODEL, --config, --amp,
// --channels-last, and one flag per scenario key, generated from the key table and the models' declarations so they
// never drift (`batch_size` <-> --batch-size), with typed help and the key's file name in brackets.

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench::cli {

class ScenarioFlags {
 public:
  /// kOne: one value per key (run, validate); kLists: comma lists and `--batch-size max` (sweep).
  enum class Values { kOne, kLists };
  struct Shape {
    Values values = Values::kOne;
    std::string model_help;      ///< the positional MODEL's help; none when empty (the command has its own)
    bool required_model = false;
    bool with_config = true;     ///< -c/--config FILE
    bool out_alias = false;      ///< --out for --output (run: the record is its product)
  };
  /// Declares the flags on `cmd`.
  void declare(CLI::App& cmd, const Shape& shape);
  /// `gpubench run MODEL --help` (or `--model MODEL --help`): the help lists MODEL's own keys and hides the other
  /// models' (they still parse, and are refused with the model that takes them). Call before declaring, with argv.
  static void focus_help(const std::vector<std::string>& argv);

  /// What the user typed, after parsing.
  ScenarioInputs inputs() const;
  /// The scenario keys given as flags, key -> text (a bare boolean flag means "true").
  std::map<std::string, std::string> overrides() const;
  /// Every key's flag name, for messages.
  const std::map<std::string, std::string>& flag_of() const { return flag_of_; }
  /// The typed scenario flags again, as arguments for a child `gpubench run` (without MODEL).
  std::vector<std::string> as_args() const;
  const std::optional<std::string>& model() const { return model_; }
  const std::optional<std::string>& config() const { return config_; }

 private:
  static std::string& help_model();
  std::optional<std::string> model_, config_;
  bool amp_ = false, channels_last_ = false;
  std::map<std::string, std::string> raw_, flag_of_;
  std::map<std::string, CLI::Option*> option_of_;
  std::map<std::string, bool> boolean_;
  CLI::Option* amp_option_ = nullptr;
  CLI::Option* channels_last_option_ = nullptr;
};

}  // namespace gpubench::cli
