#include "cli/scenario_flags.h"

#include "gpubench/engine/engine.hpp"

namespace gpubench::cli {

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
                             "(torch.autocast + GradScaler), bf16 autocast on the CPU; --precision bf16 for bfloat16");
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
    auto* opt = cmd.add_option(names, raw_[k.key], k.description + suffix + " [" + k.key + "]")->type_name(type);
    if (k.boolean) opt->expected(0, 1);  // `--cuda-graph` alone means true; `--cuda-graph false` also works
    opt->group(k.per_model ? "Keys of " + takers : "Scenario keys (every model)");
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
