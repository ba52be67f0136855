#pragma once
// `gpubench scaling --project`: data-parallel step time and efficiency for N GPUs, projected from a measured 1-GPU
// record with an alpha-beta cost model of the gradient all-reduce (docs/performance.md, "Scaling projection").
//
//   step(N)    = compute + exposed(N) [+ residual, when calibrated on a measured multi-GPU record]
//   compute    = the 1-GPU record's median step; backward = 2/3 of it (backward costs twice the forward)
//   allreduce(m bytes, N) within a node (ring):  2 (N-1) alpha + 2 (N-1)/N m / beta
//   across nodes (hierarchical, as NCCL): reduce-scatter in the node, all-reduce of m/g across nodes (ring or
//   tree, whichever is cheaper), all-gather in the node
//   exposed    = max(the last bucket's all-reduce, total all-reduce - (B-1)/B x backward): buckets all-reduce while
//                backward still runs, except the last one
// It ignores stragglers, topology contention, compute slowed by concurrent communication, and the input pipeline.

#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

struct LinkModel {
  double latency_us = 0;      ///< alpha: per message step
  double bandwidth_gb_s = 0;  ///< beta: all-reduce bus bandwidth per GPU (GB/s, 1e9 bytes)
};

struct Interconnect {
  std::string name, description;
  LinkModel intra;            ///< GPUs within a node
  LinkModel inter;            ///< between nodes
  int64_t gpus_per_node = 8;
};

/// Named presets (`--interconnect`), e.g. "nvlink4-ib400": NVLink 4 in the node, 400 Gb/s InfiniBand per GPU between.
const std::vector<Interconnect>& interconnect_presets();
const Interconnect* find_interconnect(const std::string& name);

/// Time (s) of one all-reduce of `bytes` over `gpus` GPUs on `net`.
double allreduce_seconds(double bytes, int64_t gpus, const Interconnect& net);

struct ProjectionPoint {
  int64_t gpus = 1, nodes = 1;
  double comm_ms = 0;        ///< all-reduce time per step, all buckets
  double exposed_ms = 0;     ///< the part backward does not hide
  double step_ms = 0;        ///< projected step (calibrated when a residual applies)
  double efficiency = 1;     ///< compute step / projected step
  double samples_per_s = 0;  ///< all GPUs
  double epoch_s = 0;        ///< the scenario's dataset_size over all GPUs
  std::optional<double> measured_efficiency;  ///< where a measured record of this GPU count was given
};

struct Projection {
  std::string model, precision, device_name;
  Interconnect net;
  double compute_ms = 0, backward_ms = 0;
  double gradient_bytes = 0;
  int64_t buckets = 1;
  int64_t batch_per_gpu = 0, dataset_size = 0;
  double residual_ms = 0;    ///< measured minus projected step at the calibration point (0 without one), >= 0
  double negative_residual_ms = 0;  ///< a measured step faster than the model's (then residual_ms is 0), else 0
  int64_t calibrated_at = 0; ///< GPU count of the measured record used for the residual; 0 = none
  std::vector<ProjectionPoint> points;
  std::vector<std::string> assumptions;
};

/// Projects `base` (a 1-GPU ok record) to each of `gpus`. `measured` are optional records of the same scenario on more
/// GPUs: each is shown beside its projection, and the first one calibrates a per-step residual applied from 2 GPUs on
/// when `calibrate` is set. Throws std::invalid_argument when `base` cannot be projected (not ok, more than one GPU,
/// no step times) or a measured record is of another scenario.
Projection project_scaling(const RunRecord& base, const std::vector<int64_t>& gpus, const Interconnect& net,
                           const std::vector<RunRecord>& measured, bool calibrate);

}  // namespace gpubench
