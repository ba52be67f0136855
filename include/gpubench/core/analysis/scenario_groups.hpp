#pragma once
// Runs grouped by scenario identity (identity.hpp, the definition compare uses): what the report's headline, its
// tables and its charts show one row or one bar for. Repeats collapse to a mean with a Student t 95 % interval over
// runs; training and inference, data pipelines, GPU counts and GPU models are different groups because they are
// different identities. Torch-free.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

/// Mean of a set of runs' values with its two-sided 95 % Student t interval over runs (no interval below 2 runs).
struct RunSpread {
  int64_t n = 0;
  double mean = 0, min = 0, max = 0;
  std::optional<double> half_width_95;  ///< mean ± this; set from 2 runs on
  std::optional<double> cv_pct;         ///< sample standard deviation / mean, in %; set from 2 runs on
};
RunSpread spread_of(const std::vector<double>& values);

struct ScenarioGroup {
  nlohmann::json identity;
  std::string id;            ///< identity_id(identity)
  std::string label;         ///< identity_label, made distinct among the groups (distinct_labels)
  std::string model, mode;   ///< mode: train | inference
  std::string device_model;  ///< "NVIDIA H200"; the device type where the record names no model
  std::string unit;          ///< throughput unit, "images/s"
  std::vector<size_t> runs;     ///< indices into the input, every status, in input order
  std::vector<size_t> ok_runs;  ///< those with status ok and a throughput
  RunSpread throughput;         ///< samples/s (in `unit`) over ok_runs
  /// Means over ok_runs of the metrics as the views show them (metric_catalog's run_metrics; unset where none has it).
  std::optional<double> step_p50_ms, step_p95_ms, joules_per_sample, mfu;
  std::optional<int64_t> peak_reserved_bytes;  ///< the largest over all runs (an OOM run's too)
  std::optional<double> epochs_max;            ///< the most epochs any ok run timed
  /// The verdict most runs carry (their own or decided from the record; an OOM run's is capacity), "" when none has
  /// one; `verdicts` counts how many runs had one.
  std::string bounded_by;
  int64_t verdicts = 0;
};

/// `runs` grouped by identity, in a stable order: device model, mode (training first), unit, model, batch size, GPUs,
/// label.
std::vector<ScenarioGroup> group_by_scenario(const std::vector<const RunRecord*>& runs);

}  // namespace gpubench
