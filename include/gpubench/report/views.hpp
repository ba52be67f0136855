#pragma once
// Every view gpubench prints, as a Document (document.hpp): what each command says. How it is said (console,
// Markdown, HTML, CSV, JSONL, JSON, JUnit) is the printers' business. Tables take their metric columns from the
// records' tagged metrics (metrics.hpp), so a new metric appears in every view that lists metrics.

#include <map>
#include <string>
#include <vector>

#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/published.hpp"
#include "gpubench/core/analysis/projection.hpp"
#include "gpubench/core/analysis/scaling.hpp"
#include "gpubench/core/scenario/resolve.hpp"
#include "gpubench/report/document.hpp"

namespace gpubench {

/// `gpubench run`: what ran where, a row per epoch, totals, every other metric, status and notes.
Document run_summary_document(const RunRecord& record);

/// `gpubench compare`: a row per scenario with both sides' value of the metric, the change with its interval and
/// the verdict; environment differences; JUnit cases (regressions fail, not-comparable pairs are skipped); JSON
/// data in the `gpubench.compare` layout.
Document compare_document(const CompareResult& r, double threshold);

/// `gpubench compare published/ID RUN…`: each run beside the published figure.
struct PublishedRun {
  std::string path;
  const RunRecord* run = nullptr;
  PublishedComparison comparison;
};
Document published_document(const PublishedReference& ref, const std::vector<PublishedRun>& runs);

/// `gpubench report`: runs, sweeps (throughput against batch size), repeats, charts.
struct ReportInput {
  std::string title = "gpubench report";
  std::vector<LoadedRecord> runs;
  std::vector<std::string> charts;  ///< PNG file names next to the report (throughput.png, ...), in display order
  std::string chart_note;           ///< why there are no charts, when there are none
  /// Each chart's labels (bars, series, panels) as the chart script reports them (charts.json).
  std::map<std::string, std::vector<std::string>> chart_labels;
};
Document report_document(const ReportInput& in);
/// The report's grouping for its chart script (scripts/plot_results.py --groups draws it, deciding nothing itself):
///   "sweeps": [[record path, ...], ...], each one scenario's runs of several batch sizes, in batch order;
///   "scenarios": [{id, label, model, mode, device_model, unit, n, mean, half_width_95, values, paths, ok_paths,
///                  epochs_max}, ...], one per scenario identity (scenario_groups.hpp), labels distinct.
nlohmann::json report_chart_groups(const ReportInput& in);
/// The chart files scripts/plot_results.py may draw, in display order.
const std::vector<std::string>& report_chart_files();

/// `gpubench export`: one row per epoch (or per run) with identity columns and every metric as a column.
enum class ExportPer { kEpoch, kRun };
Document export_document(const std::vector<LoadedRecord>& records, ExportPer per);

/// `gpubench sweep`: a row per point.
struct SweepPointResult {
  std::string label;                  ///< "batch_size=64,precision=bf16"
  std::map<std::string, std::string> swept;  ///< the keys this point varies, with their values
  std::string record_path;
  int exit_code = 0;
  std::optional<RunRecord> record;    ///< absent when the point left no record
  std::string status_note;            ///< e.g. "not even batch size 1 fits"
};
Document sweep_document(const std::string& model, const std::vector<SweepPointResult>& points);

/// `gpubench scaling`: a row per rank count with efficiency against the base run.
/// `gpubench trace`: one profile's breakdown, or two side by side (per-step time by category and by kernel, the
/// kernels that differ most first). Each entry: a label (the trace's path) and its summary (all kernels kept).
Document trace_document(const std::vector<std::pair<std::string, ProfileRecord>>& traces, size_t top);

/// `gpubench scaling --project`: projected step, efficiency and epoch time per GPU count, measured beside projected
/// where given, and the model's assumptions.
Document projection_document(const Projection& p);

Document scaling_document(const std::string& model, const ScalingResult& result);

/// A two-column table of named values ("field", "value"): what `info`, `db` and `dataset make` print.
Table fields_table(std::string id, std::string title, const std::vector<std::pair<std::string, std::string>>& rows);

/// `run --dry-run` and `validate --resolved`: every key of the resolved scenario with its value and where it came
/// from (a file line, a flag, or the default), the device, the record paths and the notes. JSON: the resolved
/// scenario (core/scenario/resolve.hpp's layout), `source` naming the file it was read from.
Document resolved_document(const ResolvedScenario& r, const std::string& source);

/// `run --repeats N`: a row per repeat (record, status, throughput, median step) and the spread of throughput.
struct RepeatRow {
  int index = 0;
  std::string record_path;
  RunRecord record;
};
Document repeats_document(const std::vector<RepeatRow>& repeats);

/// `gpubench metrics`: the standard metric tags with unit, direction, where they apply and their meaning.
Document metrics_document();

}  // namespace gpubench
