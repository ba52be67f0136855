#pragma once
// The scenario's `mode` as a type: what code branches on. The key's text (`train`, `inference`, `generate`) is what
// files, flags and records hold; the loader accepts exactly the names below, so a loaded scenario always maps.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench {

enum class RunMode { kTrain, kInference, kGenerate };

/// The key's values, in RunMode's order.
const std::vector<std::string>& run_mode_names();
/// `text` as a RunMode; nullopt where it is none of run_mode_names().
std::optional<RunMode> parse_run_mode(std::string_view text);
/// The key's text of `mode`.
const std::string& run_mode_name(RunMode mode);
/// `s.mode` as a RunMode. Throws std::invalid_argument naming the value for text the loader would have refused.
RunMode run_mode(const Scenario& s);

}  // namespace gpubench
