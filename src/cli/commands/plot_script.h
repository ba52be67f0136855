#pragma once
// The report's chart script (scripts/plot_results.py), compiled into the binary (plot_script.cpp.in).

namespace gpubench::cli {

/// The text of scripts/plot_results.py as it was when this binary was built.
const char* plot_script_text();

/// The script's exit code when matplotlib cannot be imported (it says so on standard error).
inline constexpr int kPlotScriptNoMatplotlib = 3;

}  // namespace gpubench::cli
