// gpubench report: records in, report.md + report.html (charts by scripts/plot_results.py, embedded) out.

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/subprocess.h"
#include "gpubench/core/record_io.hpp"
#include "gpubench/core/store.hpp"
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

/// The store's history as CSV for the trend chart: one series per scenario and GPU model.
void write_trend(const std::string& path, const std::vector<HistoryRow>& history) {
  Document d;
  Table t;
  t.id = "trend";
  for (const char* key : {"series", "start_time_utc", "value", "run_id", "driver_version", "libtorch_version",
                          "git_revision"}) {
    t.add_column(Column::text(key, key));
  }
  for (const auto& h : history) {
    if (h.status != "ok") continue;
    const std::string series = h.model + " bs" + (h.batch_size ? std::to_string(*h.batch_size) : "?") + " " +
                               h.precision + " " + h.device_name;
    t.rows.push_back({Cell::str(series), Cell::str(h.start_time_utc), Cell::num(h.value),
                      Cell::num(static_cast<double>(h.id)), Cell::str(h.driver_version), Cell::str(h.libtorch_version),
                      Cell::str(h.git_revision)});
  }
  d.table(std::move(t));
  PrinterMultiplex mux;
  mux.add("csv", path);
  mux.print(d);
}

}  // namespace

int report_command(const ReportArgs& a) {
  namespace fs = std::filesystem;
  ReportInput in;
  in.title = a.title;
  std::vector<std::string> skipped;
  std::vector<HistoryRow> history;
  size_t record_files = 0;
  try {
    if (!a.paths.empty()) in.runs = load_records(a.paths, &skipped);
    record_files = in.runs.size();  // the store's runs come after these, and are not files
    if (!a.db.empty()) {
      // The store's runs join the report, and its history of the metric becomes the trend chart.
      const ResultsStore store(a.db);
      HistoryQuery q;
      q.metric = a.metric;
      history = store.history(q);
      for (const auto& h : history) in.runs.push_back(LoadedRecord{a.db + ":" + std::to_string(h.id), store.record(h.id)});
    }
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
  if (!history.empty()) {
    const std::string trend = (fs::path(a.out_dir) / "trend.csv").string();
    try {
      write_trend(trend, history);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return kExitRunFailed;
    }
    std::string unit = history.front().unit;
    args.insert(args.end(), {"--trend", trend, "--trend-metric", a.metric + (unit.empty() ? "" : " (" + unit + ")")});
  }
  for (size_t i = 0; i < record_files; ++i) args.push_back(in.runs[i].path);
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
