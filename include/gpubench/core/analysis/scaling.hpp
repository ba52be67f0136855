#pragma once
// Data-parallel scaling from measured records: throughput per rank count and efficiency against the smallest run.

#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

struct ScalingPoint {
  int64_t ranks = 1;
  std::string record_path;
  int exit_code = 0;
  std::optional<RunRecord> record;  ///< absent when the run left no readable record
  std::string error;                ///< why there is no record
  // Filled by compute_scaling for points whose run finished ok:
  std::optional<double> samples_per_s, per_rank_samples_per_s;
  std::optional<double> efficiency;           ///< throughput / (ranks x per-rank throughput of the base run)
  std::optional<double> comm_wait_fraction;   ///< rank 0's exposed all-reduce wait / its epoch time
  bool ok() const { return record && record->status == RunStatus::kOk; }
};

struct ScalingResult {
  std::vector<ScalingPoint> points;
  int64_t base_ranks = 0;  ///< the run efficiency is measured against (the first ok one; ideally 1 rank)
  bool all_ok() const;
};

/// Fills each ok point's throughput, efficiency and exposed communication share.
void compute_scaling(ScalingResult& result);

}  // namespace gpubench
