#include "gpubench/core/analysis/projection.hpp"

#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "gpubench/core/analysis/compare.hpp"

namespace gpubench {

namespace {

using text::num;

/// Ring all-reduce of `bytes` over `n` GPUs on one link class.
double ring(double bytes, int64_t n, const LinkModel& l) {
  if (n <= 1) return 0.0;
  const double steps = static_cast<double>(n - 1);
  return 2.0 * steps * l.latency_us * 1e-6 + 2.0 * steps / static_cast<double>(n) * bytes / (l.bandwidth_gb_s * 1e9);
}

/// Double binary tree all-reduce (NCCL's choice for many nodes): log-depth latency, twice the bytes per link.
double tree(double bytes, int64_t n, const LinkModel& l) {
  if (n <= 1) return 0.0;
  return 2.0 * std::ceil(std::log2(static_cast<double>(n))) * l.latency_us * 1e-6 + 2.0 * bytes / (l.bandwidth_gb_s * 1e9);
}

double median_step_ms(const RunRecord& r) {
  if (r.summary.step_time.count > 0 && r.summary.step_time.median_ms > 0) return r.summary.step_time.median_ms;
  throw std::invalid_argument("the record has no timed steps");
}

}  // namespace

const std::vector<Interconnect>& interconnect_presets() {
  // Bus bandwidths are what NCCL's all-reduce reaches, not link line rates (nccl-tests' busbw).
  static const std::vector<Interconnect> presets{
      {"nvlink4-ib400",
       "NVLink 4 in the node (H100/H200 SXM, 900 GB/s per GPU both ways: 360 GB/s all-reduce bus bandwidth, 8 us), "
       "400 Gb/s InfiniBand per GPU between nodes (45 GB/s, 15 us), 8 GPUs per node",
       {8.0, 360.0}, {15.0, 45.0}, 8},
      {"nvlink4-ib200",
       "NVLink 4 in the node (360 GB/s, 8 us), 200 Gb/s InfiniBand per GPU between nodes (22 GB/s, 15 us), 8 per node",
       {8.0, 360.0}, {15.0, 22.0}, 8},
      {"nvlink3-ib200",
       "NVLink 3 in the node (A100 SXM, 600 GB/s per GPU: 230 GB/s, 8 us), 200 Gb/s InfiniBand per GPU (22 GB/s, "
       "15 us), 8 per node",
       {8.0, 230.0}, {15.0, 22.0}, 8},
      {"pcie4-eth100",
       "PCIe 4.0 x16 in the node (20 GB/s, 10 us), 100 Gb/s Ethernet per node (10 GB/s shared by 8 GPUs: 1.2 GB/s "
       "each, 30 us), 8 per node",
       {10.0, 20.0}, {30.0, 1.2}, 8},
  };
  return presets;
}

const Interconnect* find_interconnect(const std::string& name) {
  for (const auto& p : interconnect_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

double allreduce_seconds(double bytes, int64_t gpus, const Interconnect& net) {
  if (gpus <= 1 || bytes <= 0) return 0.0;
  const int64_t g = std::max<int64_t>(1, net.gpus_per_node);
  if (gpus <= g) return ring(bytes, gpus, net.intra);
  const int64_t nodes = (gpus + g - 1) / g;
  // Hierarchical: reduce-scatter within the node, the node's 1/g share across nodes, all-gather within the node.
  const double in_node = ring(bytes, g, net.intra);  // reduce-scatter + all-gather = one ring all-reduce's cost
  const double share = bytes / static_cast<double>(g);
  return in_node + std::min(ring(share, nodes, net.inter), tree(share, nodes, net.inter));
}

Projection project_scaling(const RunRecord& base, const std::vector<int64_t>& gpus, const Interconnect& net,
                           const std::vector<RunRecord>& measured, bool calibrate) {
  if (base.status != RunStatus::kOk) throw std::invalid_argument("the base record's run did not finish ok");
  if (base.distributed && base.distributed->world_size > 1) {
    throw std::invalid_argument("the base record must be a 1-GPU run (this one used " +
                                std::to_string(base.distributed->world_size) + ")");
  }
  const auto gpu = [](const RunRecord& r) {
    return r.environment.device_type == "cuda" || r.environment.device_type == "rocm";
  };
  if (!gpu(base)) {
    throw std::invalid_argument("the base record ran on " +
                                (base.environment.device_type.empty() ? std::string("an unknown device")
                                                                      : "the " + base.environment.device_type) +
                                ", not a GPU: a projection onto GPU interconnects needs a GPU record");
  }
  if (!base.scenario.batch_size) throw std::invalid_argument("the base record has no batch size");
  if (base.model.parameters <= 0) throw std::invalid_argument("the base record has no parameter count");
  Projection p;
  p.model = base.scenario.model;
  p.precision = base.precision.resolved;
  p.device_name = base.environment.device_name;
  p.net = net;
  p.compute_ms = median_step_ms(base);
  p.backward_ms = p.compute_ms * 2.0 / 3.0;
  p.gradient_bytes = static_cast<double>(base.model.parameters) * 4.0;  // fp32 gradient buckets
  const double bucket_bytes = std::max(1.0, base.scenario.ddp_bucket_mb * 1024.0 * 1024.0);
  p.buckets = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p.gradient_bytes / bucket_bytes)));
  // A measured multi-GPU record knows how many buckets the parameters really made (they split at parameter bounds).
  for (const auto& m : measured) {
    if (m.distributed && m.distributed->buckets > 0) {
      p.buckets = m.distributed->buckets;
      break;
    }
  }
  p.batch_per_gpu = *base.scenario.batch_size * base.scenario.grad_accumulation;
  p.dataset_size = base.scenario.dataset_size;

  const nlohmann::json scenario = comparable_scenario(base.scenario);
  for (const auto& m : measured) {
    nlohmann::json other = comparable_scenario(m.scenario);
    if (other != scenario) {
      throw std::invalid_argument("a measured record is of another scenario than the base record (" + m.scenario.model +
                                  ", batch " + std::to_string(m.scenario.batch_size.value_or(0)) + ")");
    }
    if (!m.distributed || m.distributed->world_size < 2 || m.status != RunStatus::kOk || !gpu(m)) {
      throw std::invalid_argument("a measured record must be an ok run on 2 or more GPUs");
    }
    if (m.environment.device_name != base.environment.device_name) {
      throw std::invalid_argument("a measured record ran on " + m.environment.device_name + ", the base record on " +
                                  base.environment.device_name + ": one GPU model cannot calibrate another's projection");
    }
  }

  auto model_step = [&](int64_t n, double* comm_ms, double* exposed_ms) {
    const double per_bucket = allreduce_seconds(p.gradient_bytes / static_cast<double>(p.buckets), n, net) * 1e3;
    const double total = per_bucket * static_cast<double>(p.buckets);
    const double hidden = p.backward_ms * static_cast<double>(p.buckets - 1) / static_cast<double>(p.buckets);
    *comm_ms = total;
    *exposed_ms = n <= 1 ? 0.0 : std::max(per_bucket, total - hidden);
    return p.compute_ms + *exposed_ms;
  };
  if (calibrate && !measured.empty()) {
    const RunRecord& m = measured.front();
    double c = 0, e = 0;
    p.calibrated_at = m.distributed->world_size;
    p.residual_ms = median_step_ms(m) - model_step(p.calibrated_at, &c, &e);
    if (!(p.residual_ms >= 0)) {  // faster than modelled: the link values are pessimistic; never add a negative step
      p.negative_residual_ms = p.residual_ms;
      p.residual_ms = 0;
    }
  }
  for (int64_t n : gpus) {
    if (n < 1) throw std::invalid_argument("GPU counts must be at least 1");
    ProjectionPoint pt;
    pt.gpus = n;
    pt.nodes = (n + std::max<int64_t>(1, net.gpus_per_node) - 1) / std::max<int64_t>(1, net.gpus_per_node);
    pt.step_ms = model_step(n, &pt.comm_ms, &pt.exposed_ms) + (n >= 2 ? p.residual_ms : 0.0);
    pt.efficiency = p.compute_ms / pt.step_ms;
    pt.samples_per_s = static_cast<double>(p.batch_per_gpu * n) / (pt.step_ms / 1e3);
    const int64_t steps = std::max<int64_t>(1, p.dataset_size / (p.batch_per_gpu * n));
    pt.epoch_s = static_cast<double>(steps) * pt.step_ms / 1e3;
    for (const auto& m : measured) {
      if (m.distributed->world_size == n) {
        pt.measured_efficiency = m.summary.samples_per_s / (static_cast<double>(n) * base.summary.samples_per_s);
      }
    }
    p.points.push_back(pt);
  }

  p.assumptions = {
      "compute per step = the 1-GPU record's median step, " + num("%.2f ms", p.compute_ms) +
          "; per-GPU batch fixed (weak scaling), so it does not change with N",
      "backward = 2/3 of the step (" + num("%.2f ms", p.backward_ms) + "): all but the last of " +
          std::to_string(p.buckets) + " gradient buckets (" + num("%.0f MiB", base.scenario.ddp_bucket_mb) +
          (measured.empty() ? ", counted from the bucket size" : ", as the measured record made them") +
          ") all-reduce while it runs",
      "gradients: " + num("%.1f MB", p.gradient_bytes / 1e6) + " per step (" + std::to_string(base.model.parameters) +
          " fp32 parameters)",
      "all-reduce: ring within a node, 2(N-1) alpha + 2(N-1)/N bytes/beta; across nodes hierarchical (reduce-scatter, "
      "the node's share by ring or double binary tree, all-gather)",
      "interconnect " + net.name + ": " + net.description,
      "ignored: stragglers, topology contention, compute slowed by concurrent communication, the optimizer's "
      "extra work per rank, the input pipeline",
  };
  if (p.calibrated_at > 0) {
    p.assumptions.push_back("calibrated: the measured " + std::to_string(p.calibrated_at) + "-GPU step exceeds the model's by " +
                            num("%.2f ms", p.residual_ms) +
                            "; that residual (synchronisation, stragglers, hook overhead) is added from 2 GPUs on");
  }
  if (p.negative_residual_ms < 0) {
    p.assumptions.push_back("not calibrated: the measured " + std::to_string(p.calibrated_at) + "-GPU step is " +
                            num("%.2f ms", -p.negative_residual_ms) +
                            " faster than the model's, so the link values are pessimistic for it; no residual is added "
                            "(pass measured --intra-bandwidth/--inter-bandwidth)");
  }
  return p;
}

}  // namespace gpubench
