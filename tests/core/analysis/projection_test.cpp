// The scaling projection: the all-reduce cost model and the projection, on known answers and on the committed 2xH200
// records.

#include <gtest/gtest.h>

#include <cmath>

#include "gpubench/core/analysis/projection.hpp"

namespace gpubench {
namespace {

Interconnect simple_net() {
  Interconnect n;
  n.name = "test";
  n.intra = {8.0, 360.0};
  n.inter = {15.0, 45.0};
  n.gpus_per_node = 8;
  return n;
}

TEST(AllReduceModelTest, RingWithinANode) {
  const Interconnect n = simple_net();
  EXPECT_EQ(allreduce_seconds(1e8, 1, n), 0.0);
  // 2 GPUs, 100 MB: 2 x 1 x 8 us + 2 x 1/2 x 1e8 / 3.6e11 s.
  EXPECT_NEAR(allreduce_seconds(1e8, 2, n), 16e-6 + 1e8 / 3.6e11, 1e-12);
  // 8 GPUs: 2 x 7 x 8 us + 2 x 7/8 x 1e8 / 3.6e11 s.
  EXPECT_NEAR(allreduce_seconds(1e8, 8, n), 112e-6 + 1.75e8 / 3.6e11, 1e-12);
}

TEST(AllReduceModelTest, AcrossNodesTheNodesShareGoesOverTheNetwork) {
  const Interconnect n = simple_net();
  const double in_node = allreduce_seconds(1e8, 8, n);
  // 16 GPUs = 2 nodes: the in-node all-reduce plus a 2-node ring over 1/8 of the bytes.
  EXPECT_NEAR(allreduce_seconds(1e8, 16, n), in_node + 2 * 15e-6 + (1e8 / 8) / 45e9, 1e-12);
  // 1024 GPUs = 128 nodes: the tree's log-depth latency beats the ring's 254 steps.
  const double share = 1e8 / 8;
  const double ring = 2 * 127 * 15e-6 + 2 * 127.0 / 128 * share / 45e9;
  const double tree = 2 * 7 * 15e-6 + 2 * share / 45e9;
  EXPECT_LT(tree, ring);
  EXPECT_NEAR(allreduce_seconds(1e8, 1024, n), in_node + tree, 1e-12);
  EXPECT_GT(allreduce_seconds(1e8, 1024, n), allreduce_seconds(1e8, 16, n));
}

RunRecord one_gpu(double step_ms, int64_t params, int64_t batch = 256) {
  RunRecord r;
  r.status = RunStatus::kOk;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.dataset_size = 25600;
  r.scenario.ddp_bucket_mb = 25;
  r.model.parameters = params;
  r.precision.resolved = "bf16";
  r.environment.device_type = "cuda";
  r.environment.device_name = "NVIDIA H200";
  r.summary.step_time.count = 100;
  r.summary.step_time.median_ms = step_ms;
  r.summary.samples_per_s = static_cast<double>(batch) / (step_ms / 1e3);
  return r;
}

TEST(ProjectionTest, KnownAnswerForABackwardThatHidesAllButTheLastBucket) {
  // 50 MB of gradients (12.5M fp32 parameters) in 2 buckets of 25 MiB; 30 ms step, 20 ms backward.
  const RunRecord base = one_gpu(30.0, 12'500'000);
  const Interconnect n = simple_net();
  const Projection p = project_scaling(base, {1, 2, 8}, n, {}, false);
  EXPECT_EQ(p.buckets, 2);
  EXPECT_NEAR(p.backward_ms, 20.0, 1e-9);
  ASSERT_EQ(p.points.size(), 3u);
  EXPECT_NEAR(p.points[0].efficiency, 1.0, 1e-12);
  const double bucket_ms = allreduce_seconds(25e6, 2, n) * 1e3;
  EXPECT_NEAR(p.points[1].comm_ms, 2 * bucket_ms, 1e-9);
  EXPECT_NEAR(p.points[1].exposed_ms, bucket_ms, 1e-9);  // the backward hides the first bucket, not the last
  EXPECT_NEAR(p.points[1].step_ms, 30.0 + bucket_ms, 1e-9);
  EXPECT_NEAR(p.points[1].efficiency, 30.0 / (30.0 + bucket_ms), 1e-12);
  EXPECT_NEAR(p.points[2].samples_per_s, 8 * 256 / ((30.0 + p.points[2].exposed_ms) / 1e3), 1e-6);
  EXPECT_DOUBLE_EQ(p.points[2].epoch_s, 12 * p.points[2].step_ms / 1e3);  // 25600 / (256 x 8) = 12 whole steps
  EXPECT_FALSE(p.assumptions.empty());
}

TEST(ProjectionTest, CommunicationLongerThanTheBackwardIsExposed) {
  // A slow network: the all-reduce outlasts the backward, and the excess is exposed.
  RunRecord base = one_gpu(3.0, 25'000'000);
  Interconnect slow = simple_net();
  slow.intra = {10.0, 1.0};  // 1 GB/s
  const Projection p = project_scaling(base, {2}, slow, {}, false);
  const double total = p.points[0].comm_ms;
  EXPECT_NEAR(p.points[0].exposed_ms, total - 2.0 * static_cast<double>(p.buckets - 1) / static_cast<double>(p.buckets),
              1e-9);
  EXPECT_LT(p.points[0].efficiency, 0.1);
}

TEST(ProjectionTest, AMeasuredRecordIsShownAndCalibratesTheResidual) {
  const RunRecord base = one_gpu(30.0, 12'500'000);
  RunRecord two = base;
  DistributedRecord d;
  d.world_size = 2;
  d.buckets = 3;
  two.distributed = d;
  two.summary.step_time.median_ms = 31.0;
  two.summary.samples_per_s = 2 * 256 / 0.031;
  const Interconnect n = simple_net();
  const Projection raw = project_scaling(base, {2, 16}, n, {two}, false);
  EXPECT_EQ(raw.buckets, 3);  // as the measured run made them
  ASSERT_TRUE(raw.points[0].measured_efficiency.has_value());
  EXPECT_NEAR(*raw.points[0].measured_efficiency, 30.0 / 31.0, 1e-9);
  EXPECT_EQ(raw.residual_ms, 0.0);
  const Projection cal = project_scaling(base, {2, 16}, n, {two}, true);
  EXPECT_EQ(cal.calibrated_at, 2);
  EXPECT_NEAR(cal.points[0].step_ms, 31.0, 1e-9);  // calibrated on it: the 2-GPU projection is the measurement
  EXPECT_NEAR(cal.points[1].step_ms - raw.points[1].step_ms, cal.residual_ms, 1e-9);
}

TEST(ProjectionTest, RefusesWhatItCannotProject) {
  const Interconnect n = simple_net();
  RunRecord failed = one_gpu(30.0, 1000);
  failed.status = RunStatus::kOom;
  EXPECT_THROW(project_scaling(failed, {2}, n, {}, false), std::invalid_argument);
  RunRecord two = one_gpu(30.0, 1000);
  two.distributed = DistributedRecord{};
  two.distributed->world_size = 2;
  EXPECT_THROW(project_scaling(two, {4}, n, {}, false), std::invalid_argument);  // the base must be 1 GPU
  RunRecord other = two;
  other.scenario.batch_size = 128;
  EXPECT_THROW(project_scaling(one_gpu(30.0, 1000), {4}, n, {other}, false), std::invalid_argument);
  RunRecord cpu = one_gpu(30.0, 1000);
  cpu.environment.device_type = "cpu";
  EXPECT_THROW(project_scaling(cpu, {4}, n, {}, false), std::invalid_argument);  // not a GPU
  RunRecord a100 = one_gpu(30.0, 1000);
  a100.distributed = DistributedRecord{};
  a100.distributed->world_size = 2;
  a100.environment.device_name = "NVIDIA A100-SXM4-80GB";
  EXPECT_THROW(project_scaling(one_gpu(30.0, 1000), {4}, n, {a100}, true), std::invalid_argument);  // another GPU
  EXPECT_EQ(find_interconnect("nvlink4-ib400")->gpus_per_node, 8);
  EXPECT_EQ(find_interconnect("no-such-net"), nullptr);
}

}  // namespace
}  // namespace gpubench
