#pragma once
// The standard metrics: the catalog that derives tagged values (metric.hpp) from a record's typed fields. The record's
// JSON carries them in its `metrics` arrays; printers, `export` and `compare --metric` read them from here.

#include <string>
#include <vector>

#include "gpubench/core/record/metric.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

/// Whether `tag` is one of the standard metrics derived from record fields (those are not stored as extras).
bool is_standard_metric(const std::string& tag);

/// One entry of the standard catalog, for `--help` and docs: tag, name, unit hint, direction, and where it applies.
struct MetricInfo {
  std::string tag, name, unit;
  Better better = Better::kNeither;
  bool per_epoch = false, per_run = false;
  std::string help;
};
const std::vector<MetricInfo>& standard_metrics();

/// Every metric of an epoch: the standard ones its fields hold, then its extras (in the order they were added).
Metrics epoch_metrics(const RunRecord& r, const EpochRecord& e);
/// Every metric of a run: the standard ones of the summary, then the summary's extras.
Metrics run_metrics(const RunRecord& r);
/// Drops standard metrics from a list read from JSON (they are derived again from the fields, never trusted twice),
/// and keeps one entry per tag (the last value).
Metrics extra_metrics_only(Metrics metrics);

/// Whether a unit hint is a rate ("images/s", "it/s", "TFLOP/s" is not: it has its own format).
bool is_rate_unit(const std::string& unit);
/// The record's throughput unit: "images/s", "sequences/s" ("samples/s" when the model did not say).
std::string throughput_unit(const RunRecord& r);


}  // namespace gpubench
