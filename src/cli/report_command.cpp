// gpubench report: records in, report.md + report.html (charts by scripts/plot_results.py, embedded) out.

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/subprocess.h"
#include "gpubench/core/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

int report_command(const ReportArgs& a) {
  namespace fs = std::filesystem;
  ReportInput in;
  in.title = a.title;
  std::vector<std::string> skipped;
  try {
    in.runs = load_records(a.paths, &skipped);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  for (const auto& s : skipped) spdlog::warn("skipped {}", s);
  if (in.runs.empty()) {
    spdlog::error("no gpubench run records in the given paths");
    return kExitUsage;
  }
  try {  // the output folder must be usable before anything is drawn into it
    check_output_location((fs::path(a.out_dir) / "report.md").string());
  } catch (const std::exception& e) {
    spdlog::error("--out {}: {}", a.out_dir, e.what());
    return kExitUsage;
  }
  const std::vector<std::string>& chart_names = report_chart_files();
  std::error_code ec;
  for (const auto& c : chart_names) fs::remove(fs::path(a.out_dir) / c, ec);  // no stale charts from an earlier report

  const std::string script = env_or("GPUBENCH_PLOT_SCRIPT", std::string(GPUBENCH_SOURCE_DIR) + "/scripts/plot_results.py");
  const std::string python = env_or("GPUBENCH_PLOT_PYTHON", GPUBENCH_PLOT_PYTHON);
  std::vector<std::string> args{python, script, "--out", a.out_dir};
  if (!a.compare_json.empty()) args.insert(args.end(), {"--compare", a.compare_json});
  for (const auto& r : in.runs) args.push_back(r.path);
  const int rc = fs::exists(script) ? run_child(args) : -1;
  for (const auto& c : chart_names) {
    if (fs::exists(fs::path(a.out_dir) / c, ec)) in.charts.push_back(c);
  }
  if (rc != 0) {
    in.chart_note = fs::exists(script)
                        ? script + " failed (exit " + std::to_string(rc) + "): is python3-matplotlib installed?"
                        : "the plotting script " + script + " is missing";
    spdlog::warn("no charts: {}", in.chart_note);
  }
  try {
    PrinterMultiplex mux;
    mux.add("md", a.out_dir + "/report.md");
    mux.add("html", a.out_dir + "/report.html",
            [&](const std::string& name) { return slurp(fs::path(a.out_dir) / name); });
    mux.print(report_document(in));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  std::printf("report: %s/report.md and %s/report.html (%zu runs, %zu charts)\n", a.out_dir.c_str(), a.out_dir.c_str(),
              in.runs.size(), in.charts.size());
  return kExitOk;
}

}  // namespace gpubench::cli
