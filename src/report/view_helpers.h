#pragma once
// What the views share (internal to the report layer): labels for a run and the tables' common columns.

#include <string>
#include <vector>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/document.hpp"

namespace gpubench::views {

std::string file_name(const std::string& path);
std::string sample_unit(const RunRecord& r);
std::string device_label(const RunRecord& r);
std::string precision_label(const RunRecord& r);
std::string mode_label(const RunRecord& r);
/// Puts `m` in its column of `row`, adding the column when the table lacks it. Rates of different sample units
/// share one column, headed in samples/s.
void put_metric(Table& t, std::vector<Cell>& row, const Metric& m);
/// The metrics of `ms` whose tags are in `wanted` (in that order), then every extra metric (not in the standard
/// catalog): views show a chosen few standard metrics and every metric someone added.
Metrics pick(const Metrics& ms, const std::vector<std::string>& wanted);
/// Identity of a run for tables that list runs.
void put_identity(Table& t, std::vector<Cell>& row, const LoadedRecord& lr);
/// OpenMetrics (`--format openmetrics`): the labels that name a run (its scenario identity, device, software and
/// which run it was: start time and repeat), and the run's gauges (gpubench_run_ok, then every metric of
/// run_metrics, or `metrics` when given) with those labels and `extra` ones.
std::vector<std::pair<std::string, std::string>> run_labels(const RunRecord& r);
void add_gauges(Document& d, const std::vector<std::pair<std::string, std::string>>& labels, const Metrics& metrics);
void add_run_gauges(Document& d, const RunRecord& r);
/// The profile's headline, its time by category and its top kernels.
void add_profile(Document& d, const ProfileRecord& p);

}  // namespace gpubench::views
