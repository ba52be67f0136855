#pragma once
// Views of a comparison: terminal table, Markdown (pull-request comments), JUnit XML (CI dashboards), JSON.

#include <string>

#include "gpubench/core/compare.hpp"
#include "gpubench/core/published.hpp"

namespace gpubench {

std::string format_compare_console(const CompareResult& r, double threshold);
std::string format_compare_markdown(const CompareResult& r, double threshold);
/// One test case per scenario; regressions are failures, not-comparable pairs are skipped.
std::string format_compare_junit(const CompareResult& r, double threshold);
nlohmann::json compare_to_json(const CompareResult& r, double threshold);

/// A reproduction beside a published figure, as Markdown (readable on a console too): the two numbers, % of the
/// published figure, every recipe difference, price-performance in the publication's unit and energy per sample.
std::string format_published_markdown(const PublishedComparison& c, const RunRecord& run, const std::string& run_path);

}  // namespace gpubench
