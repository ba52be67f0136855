#include "gpubench/core/reference/device_table.hpp"

#include "core/text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

namespace gpubench {

namespace embedded {
extern const char* const kDeviceTableYaml;
}

namespace {

using text::lower;

std::optional<double> number(const YAML::Node& entry, const char* key, const std::string& where) {
  const YAML::Node n = entry[key];
  if (!n) return std::nullopt;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    throw std::runtime_error(where + ":" + std::to_string(n.Mark().line + 1) + ": key '" + key +
                             "': expected a number, got '" + n.Scalar() + "'");
  }
}

/// The figure of `precision` among fp32, tf32, bf16, fp16 and fp8's, in that order.
std::optional<double> of_precision(const std::string& precision, const std::array<std::optional<double>, 5>& figures) {
  static const std::array<const char*, 5> names = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (precision == names[i]) return figures[i];
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> DeviceSpec::peak_tflops(const std::string& precision) const {
  return of_precision(precision, {fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops, fp8_tflops});
}

std::optional<double> DeviceSpec::measured_peak_tflops(const std::string& precision) const {
  return of_precision(precision, {measured_fp32_tflops, measured_tf32_tflops, measured_bf16_tflops,
                                  measured_fp16_tflops, measured_fp8_tflops});
}

std::vector<DeviceSpec> parse_device_table(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const YAML::Node list = root["devices"];
  if (!list || !list.IsSequence()) throw std::runtime_error(source + ": expected a top-level 'devices' list");
  std::vector<DeviceSpec> out;
  for (const auto& e : list) {
    const std::string where = source;
    DeviceSpec d;
    if (!e["name"]) throw std::runtime_error(where + ":" + std::to_string(e.Mark().line + 1) + ": entry without 'name'");
    d.name = e["name"].as<std::string>();
    if (e["match"]) d.match = e["match"].as<std::vector<std::string>>();
    d.fp32_tflops = number(e, "fp32_tflops", where);
    d.tf32_tflops = number(e, "tf32_tflops", where);
    d.bf16_tflops = number(e, "bf16_tflops", where);
    d.fp16_tflops = number(e, "fp16_tflops", where);
    d.fp8_tflops = number(e, "fp8_tflops", where);
    d.memory_gb = number(e, "memory_gb", where);
    d.bandwidth_gbs = number(e, "bandwidth_gbs", where);
    d.tdp_w = number(e, "tdp_w", where);
    d.launch_price_usd = number(e, "launch_price_usd", where);
    d.price_cny = number(e, "price_cny", where);
    if (!e["source"]) {
      throw std::runtime_error(where + ":" + std::to_string(e.Mark().line + 1) + ": device '" + d.name +
                               "' has no 'source'");
    }
    d.source = e["source"].as<std::string>();
    if (e["notes"]) d.notes = e["notes"].as<std::string>();
    d.measured_fp32_tflops = number(e, "measured_fp32_tflops", where);
    d.measured_tf32_tflops = number(e, "measured_tf32_tflops", where);
    d.measured_bf16_tflops = number(e, "measured_bf16_tflops", where);
    d.measured_fp16_tflops = number(e, "measured_fp16_tflops", where);
    d.measured_fp8_tflops = number(e, "measured_fp8_tflops", where);
    d.measured_bandwidth_gbs = number(e, "measured_bandwidth_gbs", where);
    if (e["measured_source"]) d.measured_source = e["measured_source"].as<std::string>();
    const bool measured = d.measured_fp32_tflops || d.measured_tf32_tflops || d.measured_bf16_tflops ||
                          d.measured_fp16_tflops || d.measured_fp8_tflops || d.measured_bandwidth_gbs;
    if (measured && d.measured_source.empty()) {
      throw std::runtime_error(where + ":" + std::to_string(e.Mark().line + 1) + ": device '" + d.name +
                               "' has measured ceilings but no 'measured_source'");
    }
    out.push_back(std::move(d));
  }
  return out;
}

int64_t usable_memory_bytes(double memory_gb) {
  return static_cast<int64_t>((memory_gb * kVisibleMemoryFraction - kContextGiB) * 1073741824.0);
}

const std::vector<DeviceSpec>& device_table() {
  static const std::vector<DeviceSpec> table = parse_device_table(embedded::kDeviceTableYaml, "configs/devices/devices.yaml");
  return table;
}

bool same_device_name(const std::string& a, const std::string& b) { return lower(a) == lower(b); }

const DeviceSpec* find_device_spec(const std::string& device_name) {
  if (device_name.empty()) return nullptr;
  for (const auto& d : device_table()) {
    if (same_device_name(d.name, device_name)) return &d;
    for (const auto& m : d.match) {
      if (same_device_name(m, device_name)) return &d;
    }
  }
  return nullptr;
}

}  // namespace gpubench
