#pragma once
// Views of a comparison: terminal table, Markdown (pull-request comments), JUnit XML (CI dashboards), JSON.

#include <string>

#include "gpubench/core/compare.hpp"

namespace gpubench {

std::string format_compare_console(const CompareResult& r, double threshold);
std::string format_compare_markdown(const CompareResult& r, double threshold);
/// One test case per scenario; regressions are failures, not-comparable pairs are skipped.
std::string format_compare_junit(const CompareResult& r, double threshold);
nlohmann::json compare_to_json(const CompareResult& r, double threshold);

}  // namespace gpubench
