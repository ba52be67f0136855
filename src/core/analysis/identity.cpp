#include "gpubench/core/analysis/identity.hpp"

#include <cstdint>
#include <cstdio>

#include <algorithm>

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
  for (const char* k : {"output", "name", "telemetry", "telemetry_interval_s", "telemetry_trace", "profile",
                        "profile_steps", "device"}) {
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
  j["decode_resolved"] = r.data ? r.data->decode : std::string();
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

std::string identity_label(const RunRecord& r) {
  const Scenario& s = r.scenario;
  std::string label = s.model + " bs" + (s.batch_size ? std::to_string(*s.batch_size) : std::string("?")) + " " +
                      (r.precision.resolved.empty() ? s.precision : r.precision.resolved);
  if (s.precision == "amp") label += " (amp)";
  label += " " + s.mode;
  label += r.execution.mode == "cuda_graph" ? " graph" : " eager";
  if (s.kernels != "aten") label += " " + s.kernels + " kernels";
  if (s.data == "folder") {
    label += s.data_only ? " data-only" : " folder";
    if (r.data) label += "/" + r.data->decode;
  }
  const int64_t world = r.distributed ? r.distributed->world_size : 1;
  if (world > 1) label += ", " + std::to_string(world) + " GPUs";
  if (!r.environment.device_name.empty()) label += ", " + r.environment.device_name;
  return label;
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
