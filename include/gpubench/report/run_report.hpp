#pragma once
// `gpubench report`: a Markdown report and a self-contained HTML page over a set of run records, with the charts
// scripts/plot_results.py drew (embedded in the HTML as data URIs).

#include <functional>
#include <string>
#include <vector>

#include "gpubench/core/compare.hpp"

namespace gpubench {

struct ReportInput {
  std::string title = "gpubench report";
  std::vector<LoadedRecord> runs;
  std::vector<std::string> charts;  ///< PNG file names next to the report (throughput.png, ...), in display order
  std::string chart_note;           ///< why there are no charts, when there are none
};

/// The Markdown report: a table of runs, sweeps (throughput against batch size), then the charts.
std::string format_report_markdown(const ReportInput& in);
/// The same as one HTML file; `png_base64(name)` returns a chart's bytes in base64 (empty if unreadable).
std::string format_report_html(const ReportInput& in, const std::function<std::string(const std::string&)>& png_base64);
/// Standard base64 (RFC 4648) of `bytes`.
std::string base64_encode(const std::string& bytes);

/// `&`, `<`, `>` and `"` as entities: safe text for HTML and XML elements and attributes.
std::string markup_escape(const std::string& s);

/// The chart files scripts/plot_results.py may draw, in display order.
const std::vector<std::string>& report_chart_files();

}  // namespace gpubench
