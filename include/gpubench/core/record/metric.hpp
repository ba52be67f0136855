#pragma once
// Metrics as tagged values (nvbench's summaries): a stable tag, a human name, a unit hint and the direction in which
// a change is an improvement. Printers loop over them and format each value by its unit hint; `compare --metric TAG`
// compares any of them; `export` writes one column per tag.
//
// Two kinds reach a record:
//  - standard metrics, derived from the record's typed fields (the v1 contract every reader knows): throughput, step
//    time percentiles, memory peaks, energy, power, clocks, ... The catalog is metric_catalog.hpp, nowhere else.
//  - extra metrics, added where they are measured (`EpochRecord::metrics`, `RunSummary::metrics`) with no field, no
//    serialiser line and no printer change: they travel in the record's `metrics` arrays and show up everywhere.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpubench {

/// Which way a change is an improvement.
enum class Better { kHigher, kLower, kNeither };
std::string to_string(Better b);
Better better_from_string(const std::string& s);  ///< throws std::invalid_argument

struct Metric {
  std::string tag;   ///< stable id, snake_case with the unit in the name as record fields have: "samples_per_s"
  std::string name;  ///< for people: "throughput", "step time p95"
  /// Unit hint for printers: "bytes", "s", "ms", "W", "J", "C", "MHz", "%", "fraction" (shown as %), "count",
  /// "TFLOP/s" or a rate "<unit>/s" ("images/s", "it/s"); anything else prints as a plain number with the unit.
  std::string unit;
  Better better = Better::kNeither;
  double value = 0;
  bool operator==(const Metric& o) const = default;
};
using Metrics = std::vector<Metric>;

void to_json(nlohmann::json& j, const Metric& m);
void from_json(const nlohmann::json& j, Metric& m);  ///< throws on a missing tag or a non-finite value

/// The metric with `tag`, or nullptr.
const Metric* find_metric(const Metrics& metrics, const std::string& tag);
/// Adds `m`, or replaces the value of the metric with the same tag (a measurement taken again).
void set_metric(Metrics& metrics, Metric m);

/// The metric `compare` uses by default: throughput.
inline constexpr const char* kThroughputTag = "samples_per_s";

}  // namespace gpubench
