// gpubench report: records in, report.md + report.html (charts by scripts/plot_results.py, embedded) out.

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands/commands.h"
#include "cli/commands/plot_script.h"
#include "cli/subprocess.h"
#include "gpubench/core/analysis/scenario_groups.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
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

/// The store's history as CSV for the trend chart: one series per scenario identity (with its GPU model), named by
/// `series[i]` for history row i (the report's distinct scenario labels).
void write_trend(const std::string& path, const std::vector<HistoryRow>& history, const std::vector<std::string>& series) {
  Document d;
  Table t;
  t.id = "trend";
  for (const char* key : {"series", "start_time_utc", "value", "unit", "run_id", "driver_version",
                          "libtorch_version", "git_revision"}) {
    t.add_column(Column::text(key, key));
  }
  for (size_t i = 0; i < history.size(); ++i) {
    const HistoryRow& h = history[i];
    if (h.status != "ok") continue;
    t.rows.push_back({Cell::str(series.at(i)), Cell::str(h.start_time_utc), Cell::num(h.value), Cell::str(h.unit),
                      Cell::num(static_cast<double>(h.id)), Cell::str(h.driver_version), Cell::str(h.libtorch_version),
                      Cell::str(h.git_revision)});
  }
  d.table(std::move(t));
  PrinterMultiplex mux;
  mux.add("csv", path);
  mux.print(d);
}

/// The chart script: $GPUBENCH_PLOT_SCRIPT when set (to try an edited script), else the copy compiled into this
/// binary, written to a temporary file for the run and removed after (`path` empty when it cannot be written).
class PlotScript {
 public:
  PlotScript() {
    if (const char* env = std::getenv("GPUBENCH_PLOT_SCRIPT"); env != nullptr && *env != '\0') {
      path_ = env;
      return;
    }
    std::error_code ec;
    const auto dir = std::filesystem::temp_directory_path(ec);
    std::string tmpl = (ec ? std::filesystem::path("/tmp") : dir) / "gpubench-plot-XXXXXX.py";
    const int fd = mkstemps(tmpl.data(), 3);
    if (fd < 0) {
      problem_ = "no temporary file for the chart script (" + tmpl + ")";
      return;
    }
    const std::string text = plot_script_text();
    const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    owned_ = tmpl;
    if (written) {
      path_ = tmpl;
    } else {
      problem_ = "could not write the chart script to " + tmpl;
    }
  }
  ~PlotScript() {
    std::error_code ec;
    if (!owned_.empty()) std::filesystem::remove(owned_, ec);
  }
  PlotScript(const PlotScript&) = delete;
  PlotScript& operator=(const PlotScript&) = delete;
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string path_, owned_, problem_;
};

/// Each chart's labels as the script reports them in charts.json ({"throughput.png": ["label", ...], ...}); none
/// when the file is missing or unreadable (the charts still show).
std::map<std::string, std::vector<std::string>> read_chart_labels(const std::filesystem::path& file) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(file);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [chart, labels] : j.items()) {
      for (const auto& l : labels) {
        if (l.is_string()) out[chart].push_back(l.get<std::string>());
      }
    }
  } catch (const std::exception& e) {
    spdlog::warn("{}: {}", file.string(), e.what());
  }
  return out;
}

class ReportCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("RECORDS", paths_, "Record files or directories of records (optional with --db)")->type_name("RECORDS");
    cmd.add_option("--db", db_, "A results store: its runs join the report, with a trend chart of --metric")
        ->type_name("STORE");
    cmd.add_option("--metric", metric_, "The metric the trend chart draws (default samples_per_s)")->type_name("TAG");
    cmd.add_option("-o,--out", out_dir_, "Output folder (default report/)")->type_name("DIR");
    cmd.add_option("--title", title_, "Report title")->type_name("TEXT");
    cmd.add_option("--compare", compare_json_, "JSON from `gpubench compare --json`, drawn as ratio bars with their intervals")
        ->type_name("FILE");
    cmd.footer("Charts are drawn by the chart script built into this binary (scripts/plot_results.py) with python3 and\n"
               "matplotlib (Debian: python3-matplotlib); without them the report says why and has no charts.\n"
               "GPUBENCH_PLOT_PYTHON and GPUBENCH_PLOT_SCRIPT override the interpreter and the script.");
  }

  void files(FileRoles& roles) const override {
    for (const auto& p : paths_) record_input(roles, p, "RECORDS");
    roles.store(db_, "--db");
    roles.input(compare_json_, "--compare");
    if (out_dir_.empty()) throw UsageError("--out: no folder named");
    for (const char* f : {"report.md", "report.html", "groups.json", "trend.csv", "charts.json"}) {
      roles.output((std::filesystem::path(out_dir_) / f).string(), "--out");
    }
  }

  int run(Context& ctx) override {
    namespace fs = std::filesystem;
    if (out_dir_.empty()) throw UsageError("--out: no folder named");
    ReportInput in;
    in.title = title_;
    std::vector<HistoryRow> history;
    if (!paths_.empty()) in.runs = load_records_or_fail(paths_);
    const size_t record_files = in.runs.size();  // the store's runs come after these, and are not files
    if (!db_.empty()) {
      // The store's runs join the report, and its history of the metric becomes the trend chart.
      std::unique_ptr<ResultsStore> opened;
      try {
        opened = std::make_unique<ResultsStore>(db_, ResultsStore::Access::kRead);  // a read never makes a store
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
      const ResultsStore& store = *opened;
      HistoryQuery q;
      q.metric = metric_;
      history = store.history(q);
      for (const auto& h : history) in.runs.push_back(LoadedRecord{store.name() + ":" + std::to_string(h.id), store.record(h.id)});
    }
    if (in.runs.empty()) throw UsageError("no gpubench run records in the given paths");
    try {  // the output folder must be usable before anything is drawn into it
      check_output_location((fs::path(out_dir_) / "report.md").string());
    } catch (const std::exception& e) {
      throw UsageError("--out " + out_dir_ + ": " + e.what());
    }
    const std::vector<std::string>& chart_names = report_chart_files();
    std::error_code ec;
    for (const auto& c : chart_names) fs::remove(fs::path(out_dir_) / c, ec);  // no stale charts from an earlier report
    fs::remove(fs::path(out_dir_) / "charts.json", ec);

    const PlotScript script;
    const std::string python = env_or("GPUBENCH_PLOT_PYTHON", GPUBENCH_PLOT_PYTHON);
    std::vector<std::string> args{python, script.path(), "--out", out_dir_};
    if (!compare_json_.empty()) args.insert(args.end(), {"--compare", compare_json_});
    if (!history.empty()) {
      const std::string trend = (fs::path(out_dir_) / "trend.csv").string();
      try {
        // Series are scenario identities, named as the report names them (a data-only run is not a training run).
        std::vector<const RunRecord*> records;
        for (const auto& lr : in.runs) records.push_back(&lr.record);
        std::vector<std::string> labels(in.runs.size());
        for (const auto& g : group_by_scenario(records)) {
          for (size_t i : g.runs) labels[i] = g.label;
        }
        write_trend(trend, history, std::vector<std::string>(labels.begin() + static_cast<std::ptrdiff_t>(record_files),
                                                              labels.end()));
      } catch (const std::exception& e) {
        throw OutputNotWritten(e.what());
      }
      // Each unit gets its own axis (the script reads the rows' unit column): the label is the metric alone.
      args.insert(args.end(), {"--trend", trend, "--trend-metric", metric_});
    }
    const std::string groups = (fs::path(out_dir_) / "groups.json").string();
    try {
      write_file_atomic(groups, report_chart_groups(in).dump(1));
    } catch (const std::exception& e) {
      throw OutputNotWritten(e.what());
    }
    args.insert(args.end(), {"--groups", groups});
    for (size_t i = 0; i < record_files; ++i) args.push_back(in.runs[i].path);
    const bool have_script = !script.path().empty() && fs::exists(script.path(), ec);
    const int rc = have_script ? run_child(args) : -1;
    for (const auto& c : chart_names) {
      if (fs::exists(fs::path(out_dir_) / c, ec)) in.charts.push_back(c);
    }
    in.chart_labels = read_chart_labels(fs::path(out_dir_) / "charts.json");
    if (rc != 0) {
      if (!have_script) {
        in.chart_note = script.problem().empty() ? "the chart script " + script.path() + " does not exist (GPUBENCH_PLOT_SCRIPT)"
                                                 : script.problem();
      } else if (rc == -1 || rc == 127) {
        in.chart_note = "no Python interpreter '" + python + "' to run the chart script (install python3 and "
                        "python3-matplotlib, or set GPUBENCH_PLOT_PYTHON)";
      } else if (rc == kPlotScriptNoMatplotlib) {
        in.chart_note = python + " has no matplotlib (Debian: apt-get install python3-matplotlib; or set "
                        "GPUBENCH_PLOT_PYTHON to a python3 that has it)";
      } else {
        in.chart_note = "the chart script failed (exit " + std::to_string(rc) + "; its message is above)";
      }
      spdlog::warn("no charts: {}", in.chart_note);
    }
    const Document doc = report_document(in);
    PrinterMultiplex mux;
    mux.add("md", out_dir_ + "/report.md");
    mux.add("html", out_dir_ + "/report.html", [&](const std::string& name) { return slurp(fs::path(out_dir_) / name); });
    try {
      mux.print(doc);
    } catch (const std::exception& e) {
      throw OutputNotWritten(e.what());
    }
    Document done;
    done.kind = "report_written";
    done.title = "report";
    done.paragraph("report: " + out_dir_ + "/report.md and " + out_dir_ + "/report.html (" +
                   std::to_string(in.runs.size()) + " runs, " + std::to_string(in.charts.size()) + " charts)");
    if (!in.chart_note.empty()) done.paragraph("no charts: " + in.chart_note);
    done.data = {{"markdown", out_dir_ + "/report.md"}, {"html", out_dir_ + "/report.html"},
                 {"runs", in.runs.size()},          {"charts", in.charts},
                 {"chart_note", in.chart_note}};
    ctx.print(done);
    return kExitOk;
  }

 private:
  std::vector<std::string> paths_;
  std::string out_dir_ = "report", title_ = "gpubench report", compare_json_, db_, metric_ = "samples_per_s";
};

}  // namespace

CommandSpec report_command() {
  return {"report", "Markdown report and a self-contained HTML page with charts",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<ReportCommand>(); }};
}

}  // namespace gpubench::cli
