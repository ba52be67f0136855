#include "gpubench/core/analysis/identity.hpp"

#include <cstdint>
#include <cstdio>

#include <algorithm>
#include <map>

namespace gpubench {

namespace {

std::string device_type_of(const RunRecord& r) {
  if (!r.environment.device_type.empty()) return r.environment.device_type;
  const std::string& d = r.scenario.device;
  return d.substr(0, d.find(':'));
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// The value at a dotted path of `j` ("optimizer.lr"), or null.
nlohmann::json at_path(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* cur = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(part)) return nullptr;
    cur = &(*cur)[part];
    if (dot == std::string::npos) return *cur;
    start = dot + 1;
  }
}

}  // namespace

nlohmann::json scenario_identity(const RunRecord& r) {
  nlohmann::json j = r.scenario;
  // Where the data lies and how many threads fed it are not what was measured (compare lists them as conditions).
  for (const char* k : {"output", "name", "telemetry", "telemetry_interval_s", "telemetry_trace", "profile",
                        "profile_steps", "device", "data_path", "data_workers"}) {
    j.erase(k);
  }
  // Choices left at their defaults name no scenario of their own: a record written before kernel_options existed
  // pairs with a new one that kept them.
  if (r.scenario.kernel_options == KernelOptions{}) j.erase("kernel_options");
  // Only the record's own model keys (a caller that bypassed the loader may have set others).
  if (!r.model.scenario_keys.empty()) {
    // Every key a scenario can write, those written only for generation, FP8 or kernel options included.
    static const nlohmann::json common = [] {
      Scenario all;
      all.mode = "generate";
      all.precision = "fp8";
      all.kernels = "fused";
      return nlohmann::json(all);
    }();
    for (auto it = j.begin(); it != j.end();) {
      const bool own = std::find(r.model.scenario_keys.begin(), r.model.scenario_keys.end(), it.key()) !=
                       r.model.scenario_keys.end();
      it = (!common.contains(it.key()) && !own) ? j.erase(it) : std::next(it);
    }
  }
  j["precision_resolved"] = r.precision.resolved.empty() ? r.scenario.precision : r.precision.resolved;
  j["world_size"] = r.distributed ? r.distributed->world_size : 1;
  j["execution"] = r.execution.mode.empty() ? "eager" : r.execution.mode;
  // The data is its files: count, bytes and the listing's digest, wherever the folder lies. A record written before
  // the digest existed has only its folder's name to say which data it read.
  if (r.data && r.data->source == "folder") {
    if (r.data->listing_digest.empty()) {
      j["data_path"] = r.data->path;
    } else {
      j["data_files"] = r.data->images;
      j["data_bytes"] = r.data->bytes;
      j["data_listing"] = r.data->listing_digest;
    }
  }
  j["device_type"] = device_type_of(r);
  j["device_model"] = r.environment.device_name;
  return j;
}

std::vector<std::string> identity_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> keys;
  for (const auto& op : nlohmann::json::diff(a, b)) {
    std::string path = op.value("path", std::string());
    if (!path.empty() && path[0] == '/') path = path.substr(1);
    std::replace(path.begin(), path.end(), '/', '.');
    if (std::find(keys.begin(), keys.end(), path) == keys.end()) keys.push_back(path);
  }
  return keys;
}

std::string identity_value(const nlohmann::json& identity, const std::string& key) {
  return value_text(at_path(identity, key));
}

std::vector<std::string> describe_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> out;
  for (const auto& k : identity_differences(a, b)) {
    out.push_back(k + ": " + value_text(at_path(a, k)) + " -> " + value_text(at_path(b, k)));
  }
  return out;
}

namespace {

/// Per model, its own keys with their defaults (use_model_catalog_for_labels).
std::map<std::string, std::vector<std::pair<std::string, nlohmann::json>>>& model_defaults() {
  static std::map<std::string, std::vector<std::pair<std::string, nlohmann::json>>> defaults;
  return defaults;
}

/// " (layers=2, attention=math)" for the model keys of `id` set away from their defaults; "" when none.
std::string changed_model_keys(const nlohmann::json& id, const std::string& model) {
  const auto found = model_defaults().find(model);
  if (found == model_defaults().end()) return "";
  std::string out;
  for (const auto& [key, fallback] : found->second) {
    const auto it = id.find(key);
    // Null is the model's own architecture value: a default too.
    if (it == id.end() || it->is_null() || *it == fallback) continue;
    out += (out.empty() ? "" : ", ") + key + "=" + value_text(*it);
  }
  return out.empty() ? "" : " (" + out + ")";
}

}  // namespace

void use_model_catalog_for_labels(const ModelCatalog& catalog) {
  auto& defaults = model_defaults();
  defaults.clear();
  for (const auto& m : catalog) {
    auto& keys = defaults[m.name];
    for (const auto& o : m.options) keys.emplace_back(o.key, o.default_value);
  }
}

std::string identity_label(const nlohmann::json& id) {
  auto text = [&id](const char* key, const std::string& fallback) {
    const auto it = id.find(key);
    return it != id.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  const auto batch = id.find("batch_size");
  const std::string requested = text("precision", "");
  std::string label = text("model", "?") + changed_model_keys(id, text("model", "")) + " bs" +
                      (batch != id.end() && batch->is_number_integer() ? std::to_string(batch->get<int64_t>()) : "?") +
                      " " + text("precision_resolved", requested);
  if (requested == "amp") label += " (amp)";
  label += " " + text("mode", "train");
  label += text("execution", "eager") == "cuda_graph" ? " graph" : " eager";
  const std::string kernels = text("kernels", "aten");
  if (kernels != "aten") label += " " + kernels + " kernels";
  if (text("data", "synthetic") == "folder") {
    const auto only = id.find("data_only");
    label += only != id.end() && only->is_boolean() && only->get<bool>() ? " data-only" : " folder";
    const std::string decode = text("decode", "auto");
    if (decode != "auto") label += "/" + decode;
  }
  const auto ws = id.find("world_size");
  const int64_t world = ws != id.end() && ws->is_number_integer() ? ws->get<int64_t>() : 1;
  if (world > 1) label += ", " + std::to_string(world) + " GPUs";
  const std::string device = text("device_model", "");
  if (!device.empty()) label += ", " + device;
  // A capped run is another card's memory on this one: the label says so (a cap is part of the identity).
  const std::string emulate = text("emulate", "");
  const auto cap = id.find("memory_limit");
  if (!emulate.empty()) {
    label += " emulating " + emulate;
  } else if (cap != id.end() && cap->is_number_integer()) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.3g", static_cast<double>(cap->get<int64_t>()) / 1073741824.0);
    label += " capped at " + std::string(gib) + " GiB";
  }
  return label;
}

std::string identity_label(const RunRecord& r) { return identity_label(scenario_identity(r)); }

namespace {

/// `key=value` for a dotted key of an identity ("optimizer.lr=0.1", "dataset_size=4096"; an empty text "(unset)").
std::string key_value(const nlohmann::json& identity, const std::string& key) {
  const std::string v = identity_value(identity, key);
  return key + "=" + (v.empty() ? "(unset)" : v);
}

}  // namespace

std::vector<std::string> distinct_labels(const std::vector<nlohmann::json>& identities,
                                         const std::vector<std::string>& labels) {
  std::vector<std::string> out = labels;
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < labels.size(); ++i) by_label[labels[i]].push_back(i);
  for (const auto& [label, members] : by_label) {
    // The distinct identities behind one label, and every key in which any two of them differ.
    std::vector<size_t> firsts;
    for (size_t i : members) {
      const bool seen = std::any_of(firsts.begin(), firsts.end(), [&](size_t f) { return identities[f] == identities[i]; });
      if (!seen) firsts.push_back(i);
    }
    if (firsts.size() < 2) continue;
    std::vector<std::string> keys;
    for (size_t a = 0; a < firsts.size(); ++a) {
      for (size_t b = a + 1; b < firsts.size(); ++b) {
        for (const auto& k : identity_differences(identities[firsts[a]], identities[firsts[b]])) {
          if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
      }
    }
    for (size_t i : members) {
      std::string extra;
      for (const auto& k : keys) extra += (extra.empty() ? "" : ", ") + key_value(identities[i], k);
      out[i] = label + " [" + extra + "]";
    }
  }
  return out;
}

std::vector<std::string> scenario_labels(const std::vector<nlohmann::json>& identities) {
  std::vector<std::string> labels;
  labels.reserve(identities.size());
  for (const auto& id : identities) labels.push_back(identity_label(id));
  return distinct_labels(identities, labels);
}

std::vector<std::string> identity_keys() {
  Scenario all;
  all.mode = "generate";
  all.precision = "fp8";
  all.kernels = "fused";
  all.data = "folder";
  RunRecord r;
  r.scenario = all;
  r.scenario.kernel_options.decode_one_kernel = !KernelOptions{}.decode_one_kernel;  // kept: not at its default
  r.data = DataRecord{};
  r.data->source = "folder";
  r.data->listing_digest = "0";
  std::vector<std::string> keys;
  const nlohmann::json identity = scenario_identity(r);  // items() of a temporary would dangle
  for (const auto& [key, value] : identity.items()) keys.push_back(key);
  return keys;
}

std::string fnv1a_hex(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string identity_id(const nlohmann::json& identity) {
  return fnv1a_hex(identity.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::json without_keys(nlohmann::json identity, const std::vector<std::string>& keys) {
  for (const auto& k : keys) identity.erase(k);
  return identity;
}

}  // namespace gpubench
