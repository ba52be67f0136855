#include "gpubench/core/scenario/run_mode.hpp"

#include <stdexcept>

namespace gpubench {

const std::vector<std::string>& run_mode_names() {
  static const std::vector<std::string> names{"train", "inference", "generate"};
  return names;
}

std::optional<RunMode> parse_run_mode(std::string_view text) {
  const auto& names = run_mode_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<RunMode>(i);
  }
  return std::nullopt;
}

const std::string& run_mode_name(RunMode mode) { return run_mode_names().at(static_cast<size_t>(mode)); }

RunMode run_mode(const Scenario& s) {
  if (const auto m = parse_run_mode(s.mode)) return *m;
  throw std::invalid_argument("mode: '" + s.mode + "' is not one of train, inference, generate");
}

}  // namespace gpubench
