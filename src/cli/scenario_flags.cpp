#include "cli/scenario_flags.h"

#include <algorithm>

#include "gpubench/engine/engine.hpp"

namespace gpubench::cli {

namespace {
/// Whether `model` declares `key` (or takes it as an alias of one of its keys).
bool takes(const ModelOptions& models, const std::string& model, const std::string& key) {
  const auto it = models.find(model);
  if (it == models.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&key](const ModelOption& o) {
    return o.key == key || std::find(o.aliases.begin(), o.aliases.end(), key) != o.aliases.end();
  });
}

/// A key's help: under `run MODEL --help`, MODEL's own words for its key (or which of its keys an alias stands for);
/// otherwise every model's.
std::string focused_description(const ModelOptions& models, const std::string& focus, const ScenarioKey& k) {
  const auto it = models.find(focus);
  if (!k.per_model || it == models.end()) return k.description;
  for (const auto& o : it->second) {
    if (o.key == k.key) return o.as_key().description;
  }
  for (const auto& o : it->second) {
    if (std::find(o.aliases.begin(), o.aliases.end(), k.key) != o.aliases.end()) {
      return "same as " + o.flag + " (an alias kept for older files and flags)";
    }
  }
  return k.description;
}
}  // namespace

std::string& ScenarioFlags::help_model() {
  static std::string model;
  return model;
}

void ScenarioFlags::focus_help(const std::vector<std::string>& argv) {
  const bool help = std::any_of(argv.begin(), argv.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (!help) return;
  const std::vector<std::string> models = model_names();
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string word = argv[i];
    if (word.rfind("--model=", 0) == 0) word = word.substr(8);
    if (std::find(models.begin(), models.end(), word) != models.end()) {
      help_model() = word;
      return;
    }
  }
}

void ScenarioFlags::declare(CLI::App& cmd, const Shape& shape) {
  if (!shape.model_help.empty()) {
    auto* positional = cmd.add_option("MODEL", model_, shape.model_help)->type_name("NAME");
    if (shape.required_model) positional->required();
  }
  if (shape.with_config) {
    cmd.add_option("-c,--config", config_, "Scenario file (YAML or JSON); flags override its values")
        ->check(CLI::ExistingFile.description(""))
        ->type_name("FILE");
  }
  amp_option_ = cmd.add_flag("--amp", amp_,
                             "Mixed precision as PyTorch means it: fp16 autocast with dynamic loss scaling on GPUs "
                             "(torch.autocast + GradScaler), bf16 autocast on a CPU with bf16 instructions (fp32 on one "
                             "without: emulated bf16 is ~9x slower there, said); --precision bf16 for bfloat16");
  channels_last_option_ = cmd.add_flag("--channels-last", channels_last_, "Same as --memory-format channels_last");
  const ModelOptions models = model_options();
  const bool lists = shape.values == Values::kLists;
  const std::string suffix = lists ? "; a comma list sweeps it" : "";
  for (const auto& k : all_scenario_keys(models)) {
    if (k.key == "model") continue;
    std::string takers;
    for (const auto& [name, options] : models) {
      for (const auto& o : options) {
        if (o.key == k.key) takers += (takers.empty() ? "" : ", ") + name;
      }
    }
    std::string names = k.flag;
    if (k.key == "output" && shape.out_alias) names += ",--out";  // --out: every command's product
    std::string type = k.type_name.empty() ? "TEXT" : k.type_name;
    if (lists && !k.boolean) type += "[,...]";
    if (lists && k.key == "batch_size") type += "|max";
    const std::string description = focused_description(models, help_model(), k);
    auto* opt = cmd.add_option(names, raw_[k.key], description + suffix + " [" + k.key + "]")->type_name(type);
    if (k.boolean) opt->expected(0, 1);  // `--cuda-graph` alone means true; `--cuda-graph false` also works
    const std::string& focus = help_model();
    const bool theirs = !focus.empty() && k.per_model && !takes(models, focus, k.key);
    // Another model's key under `run MODEL --help`: hidden from the help (an empty group), still parsed.
    opt->group(theirs ? "" : !k.per_model ? "Scenario keys (every model)" : "Keys of " + (focus.empty() ? takers : focus));
    flag_of_[k.key] = k.flag;
    option_of_[k.key] = opt;
    boolean_[k.key] = k.boolean;
  }
  option_of_["model"] = cmd.add_option("--model", raw_["model"], "Same as the positional MODEL [model]")->type_name("NAME");
  flag_of_["model"] = "--model";
}

std::map<std::string, std::string> ScenarioFlags::overrides() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, opt] : option_of_) {
    if (opt->count() == 0) continue;
    const std::string& v = raw_.at(key);
    out[key] = (boolean_.count(key) && boolean_.at(key) && v.empty()) ? "true" : v;
  }
  return out;
}

ScenarioInputs ScenarioFlags::inputs() const {
  ScenarioInputs in;
  in.config = config_;
  in.model = model_;
  in.amp = amp_;
  in.channels_last = channels_last_;
  in.overrides = overrides();
  in.flag_of = flag_of_;
  return in;
}

std::vector<std::string> ScenarioFlags::as_args() const {
  std::vector<std::string> out;
  if (config_) out.insert(out.end(), {"--config", *config_});
  if (amp_) out.emplace_back("--amp");
  if (channels_last_) out.emplace_back("--channels-last");
  for (const auto& [key, value] : overrides()) out.insert(out.end(), {flag_of_.at(key), value});
  return out;
}

}  // namespace gpubench::cli
