#pragma once
// How the scenario loader reads one value (internal to core/scenario): typed readers of YAML scalars that throw
// ScenarioError naming the file, line and key, within typed limits.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench::scenario_detail {

inline constexpr size_t kMaxScalarBytes = 4096;            // longer than any path or name a scenario needs
inline constexpr size_t kMaxFileBytes = 1 << 20;            // a scenario file is a few hundred bytes
inline constexpr double kMaxDurationS = 366.0 * 24 * 3600;  // a year: longer durations are typos

/// "<where>: key '<key>': <problem>".
std::string make_message(const Origin& origin, const std::string& key, const std::string& problem);

/// Where a value is and what it is called, for error messages.
struct Ctx {
  Origin origin;
  std::string key;
};

[[noreturn]] void fail(const Ctx& c, const std::string& problem);
std::string scalar(const YAML::Node& n, const Ctx& c, const std::string& expected);
int64_t as_int(const YAML::Node& n, const Ctx& c, int64_t lo, int64_t hi);
double as_double(const YAML::Node& n, const Ctx& c, double lo, double hi, bool lo_open);
bool as_bool(const YAML::Node& n, const Ctx& c);
std::string as_enum(const YAML::Node& n, const Ctx& c, const std::vector<std::string>& allowed);
std::string as_string(const YAML::Node& n, const Ctx& c);
/// A file or folder name: a string that is not empty (an empty name must never fall back to a default place).
std::string as_path(const YAML::Node& n, const Ctx& c);
/// Seconds from a duration such as 90, 90s, 2m, 1.5h or 500ms, within a year.
double as_duration_s(const YAML::Node& n, const Ctx& c);
/// Bytes from a size with its unit ("12GiB", "16GB", "800MiB"); at least `lo`.
int64_t as_size_bytes(const YAML::Node& n, const Ctx& c, int64_t lo);
std::optional<int64_t> parse_size_bytes(const std::string& text);
/// auto | cpu | mps | cuda | rocm | cuda:N | rocm:N with N a device ordinal from 0 to 1023.
bool valid_device(const std::string& d);
/// One of LibTorch's own device names (valid_device's first list): a backend library's NAME is not.
bool builtin_device(const std::string& d);
/// A model's own key, read as its declaration says.
nlohmann::json option_value(const ModelOption& o, const YAML::Node& n, const Ctx& c);

std::string join(const std::vector<std::string>& v, const std::string& sep);
/// " (did you mean 'x'?)" for the closest of `choices`, or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices);

/// The keys every model takes: each one's documentation and how it is read into a Scenario.
using Setter = std::function<void(const YAML::Node&, const Ctx&, Scenario&, const std::vector<std::string>&)>;
struct Field {
  ScenarioKey doc;
  Setter set;
};
const std::vector<Field>& fields();
const Field* find_field(const std::string& key);
/// The keys directly under `prefix` ("" or "optimizer.").
std::vector<std::string> keys_with_prefix(const std::string& prefix);

}  // namespace gpubench::scenario_detail
