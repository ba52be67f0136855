// The scenario loader's value readers (values.h).

#include "core/scenario/values.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace gpubench {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& choices, size_t below) {
  std::string best;
  size_t best_d = below;
  for (const auto& c : choices) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace gpubench

namespace gpubench::scenario_detail {


std::string make_message(const Origin& origin, const std::string& key, const std::string& problem) {
  std::string where = origin.describe();
  if (key.empty()) return where + ": " + problem;
  return where + ": key '" + key + "': " + problem;
}


void fail(const Ctx& c, const std::string& problem) { throw ScenarioError(c.origin, c.key, problem); }

std::string kind_of(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "nothing (null)";
  return "'" + n.Scalar() + "'";
}

// A quoted YAML/JSON scalar ("256") is a string, not a number: refusing it keeps files unambiguous.
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

std::string scalar(const YAML::Node& n, const Ctx& c, const std::string& expected) {
  if (!n.IsScalar()) fail(c, "expected " + expected + ", got " + kind_of(n));
  // Type tags (`!!str 5`, `!custom x`) would change what a value means; a scenario has no use for them.
  if (!n.Tag().empty() && n.Tag() != "?" && n.Tag() != "!") {
    fail(c, "type tags are not accepted (got '" + n.Tag() + "'); write the plain value");
  }
  if (n.Scalar().size() > kMaxScalarBytes) {
    fail(c, "value is " + std::to_string(n.Scalar().size()) + " characters long; at most " +
                std::to_string(kMaxScalarBytes) + " are accepted");
  }
  return n.Scalar();
}

int64_t as_int(const YAML::Node& n, const Ctx& c, int64_t lo, int64_t hi) {
  const std::string expected =
      "an integer" + (hi == INT64_MAX ? " >= " + std::to_string(lo)
                                      : " from " + std::to_string(lo) + " to " + std::to_string(hi));
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    fail(c, "expected " + expected + ", got '" + text + "'");
  }
  if (v < lo || v > hi) fail(c, "expected " + expected + ", got " + text);
  return v;
}

double as_double(const YAML::Node& n, const Ctx& c, double lo, double hi, bool lo_open) {
  std::ostringstream os;
  os << "a number " << (lo_open ? "> " : ">= ") << lo;
  if (std::isfinite(hi)) os << " and <= " << hi;
  const std::string expected = os.str();
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    fail(c, "expected " + expected + ", got '" + text + "'");
  }
  if ((lo_open ? v <= lo : v < lo) || v > hi) fail(c, "expected " + expected + ", got " + text);
  return v;
}

bool as_bool(const YAML::Node& n, const Ctx& c) {
  std::string text = scalar(n, c, "true or false");
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (!is_quoted(n)) {
    if (lower == "true") return true;
    if (lower == "false") return false;
  }
  fail(c, "expected true or false, got '" + text + "'");
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices) {
  const std::string best = closest_match(word, choices);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string as_enum(const YAML::Node& n, const Ctx& c, const std::vector<std::string>& allowed) {
  const std::string expected = "one of " + join(allowed, ", ");
  const std::string text = scalar(n, c, expected);
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
    fail(c, "expected " + expected + ", got '" + text + "'" + did_you_mean(text, allowed));
  }
  return text;
}

std::string as_string(const YAML::Node& n, const Ctx& c) { return scalar(n, c, "a string"); }

std::string as_path(const YAML::Node& n, const Ctx& c) {
  std::string s = scalar(n, c, "a file name");
  if (s.empty()) fail(c, "expected a file name, got an empty value (leave the key out for the default)");
  return s;
}

/// A plain decimal number (digits, one optional point, an optional exponent) and an optional unit of letters, with
/// optional blanks around: {number, unit}. Parsed by hand: no regular expression (std::regex recurses per character
/// and overflows the stack on long input).
std::optional<std::pair<double, std::string>> number_and_unit(const std::string& text) {
  size_t i = 0;
  auto blank = [&text](size_t k) { return k < text.size() && (text[k] == ' ' || text[k] == '\t'); };
  while (blank(i)) ++i;
  const size_t start = i;
  size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t k = i + 1;
    if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
    const size_t exp_start = k;
    while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
    if (k == exp_start) return std::nullopt;
    i = k;
  }
  double v = std::strtod(text.substr(start, i - start).c_str(), nullptr);
  while (blank(i)) ++i;
  size_t unit_end = i;
  while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) ++unit_end;
  const std::string unit = text.substr(i, unit_end - i);
  i = unit_end;
  while (blank(i)) ++i;
  if (i != text.size()) return std::nullopt;
  return std::make_pair(v, unit);
}

/// Seconds from "90", "1.5", "90s", "2m", "1.5h" or "500ms".
std::optional<double> parse_duration(const std::string& text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  auto [v, unit] = *parsed;
  if (unit == "ms") v /= 1000.0;
  else if (unit == "m" || unit == "min") v *= 60.0;
  else if (unit == "h") v *= 3600.0;
  else if (!unit.empty() && unit != "s") return std::nullopt;
  return v;
}

double as_duration_s(const YAML::Node& n, const Ctx& c) {
  const std::string expected = "a duration > 0 such as 90, 90s, 2m or 1.5h";
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  const std::optional<double> v = parse_duration(text);
  if (!v || !(*v > 0) || !std::isfinite(*v)) fail(c, "expected " + expected + ", got '" + text + "'");
  if (*v > kMaxDurationS) fail(c, "'" + text + "' is longer than a year; at most 366 days are accepted");
  return *v;
}

/// Bytes from "12GiB", "16GB", "800MiB", "1.5TiB": a number and a unit (B, kB/KB, MB, GB, TB in powers of 1000; KiB,
/// MiB, GiB, TiB in powers of 1024). The unit is required: a bare number could be bytes or GiB.
std::optional<int64_t> parse_size_bytes(const std::string& text) {
  const auto parsed = number_and_unit(text);
  if (!parsed) return std::nullopt;
  static const std::vector<std::pair<std::string, double>> units = {
      {"B", 1.0},   {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"KiB", 1024.0},
      {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [unit, scale] : units) {
    if (parsed->second != unit) continue;
    const double bytes = parsed->first * scale;
    if (!std::isfinite(bytes) || bytes > 9.0e18) return std::nullopt;
    return static_cast<int64_t>(std::llround(bytes));
  }
  return std::nullopt;
}

int64_t as_size_bytes(const YAML::Node& n, const Ctx& c, int64_t lo) {
  const std::string expected = "a size with its unit such as 12GiB, 16GB or 800MiB";
  const std::string text = scalar(n, c, expected);
  const std::optional<int64_t> v = parse_size_bytes(text);
  if (!v) fail(c, "expected " + expected + ", got '" + text + "'");
  if (*v < lo) fail(c, "'" + text + "' is below the smallest accepted, " + std::to_string(lo >> 20) + " MiB");
  return *v;
}

bool builtin_device(const std::string& d) {
  const std::string type = d.substr(0, d.find(':'));
  return valid_device(d) && (type == "auto" || type == "cpu" || type == "mps" || type == "cuda" || type == "rocm" ||
                             type == "xpu");
}

/// auto | cpu | mps | cuda | rocm | xpu | cuda:N | rocm:N | xpu:N with N a device ordinal from 0 to 1023, or the
/// name a backend library registers (a lowercase identifier, as c10::register_privateuse1_backend takes) with :N.
/// Whether such a name exists is known once the library is loaded: the device's resolution says.
bool valid_device(const std::string& d) {
  const auto colon = d.find(':');
  const std::string type = d.substr(0, colon);
  if (type.empty() || type.size() > 32 || !(type[0] >= 'a' && type[0] <= 'z') ||
      type.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return false;
  }
  if (colon == std::string::npos) return true;
  const std::string index = d.substr(colon + 1);
  if (type == "auto" || type == "cpu" || type == "mps") return false;
  if (index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos) return false;
  return std::stoi(index) <= 1023;  // at most 4 digits: cannot overflow
}


/// A model's own key, read as its declaration says.
nlohmann::json option_value(const ModelOption& o, const YAML::Node& n, const Ctx& c) {
  switch (o.type) {
    case ModelOption::Type::kInt:
      return as_int(n, c, static_cast<int64_t>(o.min), static_cast<int64_t>(o.max));
    case ModelOption::Type::kFloat: return as_double(n, c, o.min, o.max, false);
    case ModelOption::Type::kBool: return as_bool(n, c);
    case ModelOption::Type::kChoice: return as_enum(n, c, o.choices);
  }
  fail(c, "unknown option type");
}


}  // namespace gpubench::scenario_detail
