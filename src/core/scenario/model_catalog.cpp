#include "gpubench/core/scenario/model_catalog.hpp"

#include <algorithm>
#include <stdexcept>

#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench {

std::vector<std::string> ModelInfo::option_keys() const {
  std::vector<std::string> out;
  for (const auto& o : options) out.push_back(o.key);
  return out;
}

ModelOptions options_by_model(const ModelCatalog& catalog) {
  ModelOptions out;
  for (const auto& m : catalog) out[m.name] = m.options;
  return out;
}

const ModelInfo* find_model_info(const ModelCatalog& catalog, const std::string& name) {
  const auto it = std::find_if(catalog.begin(), catalog.end(), [&name](const ModelInfo& m) { return m.name == name; });
  return it == catalog.end() ? nullptr : &*it;
}

Scenario fill_model_options(const ModelInfo& info, Scenario s) {
  apply_key_aliases(info.options, s);
  const std::vector<std::string> own = info.option_keys();
  for (const auto& [key, value] : s.model_options) {
    if (std::find(own.begin(), own.end(), key) == own.end()) {
      throw std::invalid_argument("key '" + key + "' is not a key of " + info.name);
    }
  }
  for (const auto& o : info.options) s.model_options.emplace(o.key, o.default_value);
  return s;
}

namespace {

std::string type_of(const ModelOption& o) {
  switch (o.type) {
    case ModelOption::Type::kInt: return "int";
    case ModelOption::Type::kFloat: return "number";
    case ModelOption::Type::kBool: return "bool";
    case ModelOption::Type::kChoice: return "choice";
  }
  return "int";
}

}  // namespace

nlohmann::json catalog_json(const ModelCatalog& catalog) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : catalog) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& o : m.options) {
      nlohmann::json k = {{"key", o.key},   {"flag", o.flag},           {"type", type_of(o)},
                          {"help", o.help}, {"default", o.default_value}};
      if (o.type == ModelOption::Type::kInt || o.type == ModelOption::Type::kFloat) {
        k["min"] = o.min;
        k["max"] = o.max;
      }
      if (o.type == ModelOption::Type::kChoice) k["choices"] = o.choices;
      keys.push_back(std::move(k));
    }
    // What a run on a GPU resolves to when it sets nothing but the model: the defaults a reference script needs.
    Scenario s;
    s.model = m.name;
    s = fill_model_options(m, s);
    fill_device_defaults(s, m, DeviceFacts{"cuda:0", "cuda", true, "", 0, ""});
    models.push_back({{"name", m.name},
                      {"description", m.description},
                      {"sample_unit", m.sample_unit},
                      {"default_batch_size", m.default_batch_size},
                      {"default_optimizer", m.default_optimizer},
                      {"channels_last", m.channels_last},
                      {"image_input", m.image_input},
                      {"keys", keys},
                      {"gpu_defaults", s}});
  }
  return {{"schema", "gpubench.models"}, {"schema_version", 1}, {"models", models}};
}

}  // namespace gpubench
