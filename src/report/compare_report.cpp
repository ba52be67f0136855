#include <fmt/format.h>

#include "gpubench/report/compare_report.hpp"
#include "gpubench/report/run_report.hpp"

namespace gpubench {

namespace {

std::string change(const Comparison& c) {
  if (c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline) return "-";
  return fmt::format("{:+.2f}% [{:+.2f}%, {:+.2f}%]", (c.ratio - 1) * 100, (c.ci_low - 1) * 100, (c.ci_high - 1) * 100);
}

std::string why(const Comparison& c) {
  if (c.verdict == Verdict::kNotComparable) {
    std::string keys;
    for (const auto& k : c.differing_keys) keys += (keys.empty() ? "" : ", ") + k;
    return "differs in: " + keys;
  }
  if (c.verdict == Verdict::kNoBaseline) return "no baseline run of this model";
  std::string issues;
  for (const auto& i : c.not_like_for_like) issues += (issues.empty() ? "" : "; ") + i;
  return issues.empty() ? "" : "NOT like-for-like: " + issues;
}

}  // namespace

std::string format_compare_console(const CompareResult& r, double threshold) {
  std::string out = fmt::format("{:<36} {:>12} {:>12} {:>34}  {}\n", "scenario", "base /s", "new /s",
                                "change [95% CI]", "verdict");
  for (const auto& c : r.comparisons) {
    const bool numbers = c.base_samples_per_s > 0;
    out += fmt::format("{:<36} {:>12} {:>12} {:>34}  {}{}\n", c.label,
                       numbers ? fmt::format("{:.1f}", c.base_samples_per_s) : "-",
                       numbers ? fmt::format("{:.1f}", c.new_samples_per_s) : "-", change(c), to_string(c.verdict),
                       why(c).empty() ? "" : " (" + why(c) + ")");
  }
  if (!r.environment.differences.empty()) {
    out += r.environment.like_for_like ? "environment differences:\n"
                                       : "environment differences (NOT like-for-like):\n";
    for (const auto& d : r.environment.differences) out += "  " + d + "\n";
  }
  out += fmt::format("regression threshold: {:.1f}%\n", threshold * 100);
  return out;
}

std::string format_compare_markdown(const CompareResult& r, double threshold) {
  std::string out = "| scenario | base (samples/s) | new (samples/s) | change [95% CI] | verdict |\n";
  out += "| --- | ---: | ---: | --- | --- |\n";
  for (const auto& c : r.comparisons) {
    const bool numbers = c.base_samples_per_s > 0;
    const std::string verdict = c.verdict == Verdict::kRegression ? "**regression**" : to_string(c.verdict);
    out += fmt::format("| {} | {} | {} | {} | {}{} |\n", c.label,
                       numbers ? fmt::format("{:.1f}", c.base_samples_per_s) : "-",
                       numbers ? fmt::format("{:.1f}", c.new_samples_per_s) : "-", change(c), verdict,
                       why(c).empty() ? "" : " (" + why(c) + ")");
  }
  out += fmt::format("\nA regression is a slowdown whose 95% interval excludes no change and which exceeds {:.1f}%.\n",
                     threshold * 100);
  if (!r.environment.differences.empty()) {
    out += r.environment.like_for_like ? "\nEnvironment differences:\n" : "\n**Not like-for-like.** Environment differences:\n";
    for (const auto& d : r.environment.differences) out += "- " + d + "\n";
  }
  return out;
}

std::string format_compare_junit(const CompareResult& r, double threshold) {
  int failures = 0, skipped = 0;
  for (const auto& c : r.comparisons) {
    failures += c.verdict == Verdict::kRegression;
    skipped += c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuite name=\"gpubench compare\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                     r.comparisons.size(), failures, skipped);
  for (const auto& c : r.comparisons) {
    out += fmt::format("  <testcase classname=\"gpubench\" name=\"{}\">", markup_escape(c.label));
    if (c.verdict == Verdict::kRegression) {
      out += fmt::format("\n    <failure message=\"{}\">throughput {} beyond the {:.1f}% threshold</failure>\n  ",
                         markup_escape("regression: " + change(c)), markup_escape(change(c)), threshold * 100);
    } else if (c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline) {
      out += fmt::format("\n    <skipped message=\"{}\"/>\n  ", markup_escape(to_string(c.verdict) + ": " + why(c)));
    } else {
      out += fmt::format("\n    <system-out>{}: {}</system-out>\n  ", markup_escape(to_string(c.verdict)),
                         markup_escape(change(c)));
    }
    out += "</testcase>\n";
  }
  out += "</testsuite>\n";
  return out;
}

nlohmann::json compare_to_json(const CompareResult& r, double threshold) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.comparisons) {
    rows.push_back({{"label", c.label},
                    {"verdict", to_string(c.verdict)},
                    {"ratio", c.ratio},
                    {"ci_low", c.ci_low},
                    {"ci_high", c.ci_high},
                    {"interval_basis", c.interval_basis},
                    {"base_samples_per_s", c.base_samples_per_s},
                    {"new_samples_per_s", c.new_samples_per_s},
                    {"differing_keys", c.differing_keys},
                    {"like_for_like", c.like_for_like()},
                    {"not_like_for_like", c.not_like_for_like},
                    {"base_paths", c.base_paths},
                    {"new_paths", c.new_paths}});
  }
  return {{"schema", "gpubench.compare"},
          {"schema_version", 1},
          {"threshold", threshold},
          {"regression", r.any_regression()},
          {"like_for_like", r.environment.like_for_like},
          {"environment_differences", r.environment.differences},
          {"comparisons", rows}};
}

}  // namespace gpubench
