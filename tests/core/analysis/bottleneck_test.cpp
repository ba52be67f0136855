// The bottleneck attribution: each factor's share on records built to show it, the former cascade's thresholds
// approached from both sides, the noise margin, and one verdict for every committed set of repeats.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "common/record_archive.h"
#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

/// One H200 training run with telemetry: a kernel always running, the clock at its maximum, no limit hit, model
/// FLOPs at `tflops` per device (the measured bf16 ceiling in the device table is 776.6 TFLOP/s).
RunRecord gpu_run(double tflops = 155.32) {
  RunRecord r;
  r.status = RunStatus::kOk;
  r.environment.device_type = "cuda";
  r.environment.device_name = "NVIDIA H200";
  r.precision.resolved = "bf16";
  r.scenario.batch_size = 256;
  r.summary.steps = 100;
  r.summary.achieved_tflops = tflops;
  r.summary.peak_tflops = 989.4;
  r.summary.mfu = tflops / 989.4;
  r.summary.step_time = StepTimeStats{100, 10.0, 0.1, 10.0, 9.9, 10.1, 9.8, 10.3};
  r.telemetry.max_sm_clock_mhz = 1980;
  EpochRecord e;
  e.steps = 100;
  EpochTelemetry t;
  t.gpu_util_avg_pct = 100;
  t.sm_clock_avg_mhz = 1980;
  e.telemetry = t;
  r.epochs = {e};
  return r;
}

EpochTelemetry& tel(RunRecord& r) { return *r.epochs[0].telemetry; }

ProfileRecord profile_with(double busy, std::vector<std::pair<std::string, double>> shares) {
  ProfileRecord p;
  p.steps = 5;
  p.busy_fraction = busy;
  p.wall_ms_per_step = 40;
  p.busy_ms_per_step = 40 * busy;
  p.idle_ms_per_step = 40 * (1 - busy);
  p.kernels_per_step = 900;
  for (auto& [c, f] : shares) p.categories.push_back(ProfileCategory{c, 40 * f, f, 10});
  return p;
}

void set_input_wait(RunRecord& r, double fraction) {
  set_metric(r.summary.metrics, Metric{kInputWaitTag, "input wait", "fraction", Better::kLower, fraction});
}

double share(const BottleneckVerdict& v, const std::string& factor) { return factor_share(v.factors, factor); }

/// The power cap set in every reading, the SM clock at `clock_mhz`, `watts` of a 700 W limit.
void power_capped(RunRecord& r, double clock_mhz, double watts) {
  tel(r).sm_clock_avg_mhz = clock_mhz;
  tel(r).clock_event_fraction = {{"sw_power_cap", 1.0}};
  tel(r).power_avg_w = watts;
  r.telemetry.power_limit_w = 700;
}

TEST(BottleneckTest, OutOfMemoryIsCapacityWithTheWholeStep) {
  RunRecord r = gpu_run();
  r.status = RunStatus::kOom;
  r.reason = "CUDA out of memory";
  const auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "capacity");
  EXPECT_NE(v.evidence.find("batch 256"), std::string::npos);
  EXPECT_DOUBLE_EQ(share(v, "capacity"), 1.0);
}

TEST(BottleneckTest, AFailedRunOrOneWithoutEvidenceGetsNoVerdictAndSaysWhy) {
  RunRecord r = gpu_run();
  r.status = RunStatus::kNan;
  EXPECT_EQ(diagnose_bottleneck(r).bounded_by, "");
  r = gpu_run();
  r.epochs[0].telemetry.reset();  // no telemetry reader and no profile
  const auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "");
  EXPECT_TRUE(v.factors.empty());
  EXPECT_NE(v.evidence.find("--profile"), std::string::npos) << v.evidence;
}

TEST(BottleneckTest, TheSharesSplitTheStepAndTheLargestIsTheVerdict) {
  // README's main job as the H200 ran it: 150 TFLOP/s of model FLOPs, NVML busy all the time, 1,921 of 1,980 MHz
  // under the power cap: a verdict without a profile, every share from the record.
  RunRecord r = gpu_run(150.0);
  power_capped(r, 1921, 645);
  const auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "kernels");
  EXPECT_NEAR(share(v, "compute"), 150.0 / 776.6, 1e-9);   // the measured bf16 ceiling, not the datasheet
  EXPECT_NEAR(share(v, "power"), 1.0 - 1921.0 / 1980.0, 1e-9);
  double sum = 0;
  for (const auto& f : v.factors) sum += f.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);  // busy all the time: the factors account for the whole step
  for (size_t i = 1; i < v.factors.size(); ++i) EXPECT_GE(v.factors[i - 1].share, v.factors[i].share);
  EXPECT_NE(v.evidence.find("kernels 78 %, compute 19 %, power 3 %"), std::string::npos) << v.evidence;
  EXPECT_NE(v.evidence.find("--profile splits them"), std::string::npos) << v.evidence;
  const auto& power = *std::find_if(v.factors.begin(), v.factors.end(), [](const auto& f) { return f.factor == "power"; });
  EXPECT_NE(power.evidence.find("645 W of a 700 W limit"), std::string::npos) << power.evidence;
  EXPECT_FALSE(power.method.empty());
}

TEST(BottleneckTest, TinyLlamaTrainingNamesPowerWithWhatTheClockDeficitCosts) {
  // bs 4 with fused kernels on the H200: 682-691 W of 700, the clock at 1,691 MHz (15 % below max), ~50 % MFU.
  RunRecord r = gpu_run(493.0);
  power_capped(r, 1691, 688);
  const auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "compute");
  EXPECT_NEAR(share(v, "power"), 1.0 - 1691.0 / 1980.0, 1e-9);  // up to 15 % of the step
  EXPECT_NE(v.evidence.find("power 15 %"), std::string::npos) << v.evidence;
}

TEST(BottleneckTest, DecodeFarFromItsRooflineIsLaunchWithPowerAtItsSmallShare) {
  // TinyLlama decode at batch 32: 29 % of its bandwidth bound, 1,913 of 1,980 MHz with the power cap set in every
  // reading. The cascade said power; the step is far from its roofline, and the clock costs ~3 %.
  RunRecord r = gpu_run(0);
  r.summary.achieved_tflops = 0;
  r.summary.mfu.reset();
  r.scenario.mode = "generate";
  r.execution.mode = "cuda_graph";
  tel(r).sm_clock_avg_mhz = 1913;
  tel(r).clock_event_fraction = {{"sw_power_cap", 1.0}};
  for (const auto& [tag, value] : std::vector<std::pair<std::string, double>>{{"decode_step_ms", 1.76},
                                                                              {"decode_memory_bound_ms", 0.51},
                                                                              {"decode_compute_bound_ms", 0.2},
                                                                              {"decode_step_bytes", 2.2e9},
                                                                              {"copy_bandwidth_gb_per_s", 4300},
                                                                              {kDecodeBoundFractionTag, 0.29}}) {
    set_metric(r.summary.metrics, Metric{tag, tag, "", Better::kNeither, value});
  }
  const auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "launch");
  EXPECT_NEAR(share(v, "memory"), 0.29, 1e-9);
  EXPECT_NEAR(share(v, "power"), 1.0 - 1913.0 / 1980.0, 1e-9);  // 3.4 %
  EXPECT_NEAR(share(v, "launch"), 1.0 - 0.29 - (1.0 - 1913.0 / 1980.0), 1e-9);
  EXPECT_NE(v.evidence.find("many small kernels"), std::string::npos) << v.evidence;
  // Near its bound, the bound's side.
  set_metric(r.summary.metrics, Metric{kDecodeBoundFractionTag, "", "", Better::kNeither, 0.8});
  EXPECT_EQ(diagnose_bottleneck(r).bounded_by, "memory");
  // NVML's idle time is part of the decode step's distance to the roofline, not a factor of its own.
  tel(r).gpu_util_avg_pct = 40;
  set_metric(r.summary.metrics, Metric{kDecodeBoundFractionTag, "", "", Better::kNeither, 0.35});
  const auto idle = diagnose_bottleneck(r);
  EXPECT_EQ(idle.bounded_by, "launch");
  EXPECT_NE(idle.evidence.find("idle 60 %"), std::string::npos) << idle.evidence;
}

TEST(BottleneckTest, ClockReasonsShareTheDeficitByHowOftenEachHeld) {
  RunRecord r = gpu_run();
  tel(r).sm_clock_avg_mhz = 1584;  // 20 % below max
  tel(r).clock_event_fraction = {{"sw_power_cap", 0.6}, {"hw_thermal_slowdown", 0.2}};
  tel(r).temperature_peak_c = 91;
  auto v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "power"), 0.2 * 0.75, 1e-9);
  EXPECT_NEAR(share(v, "thermal"), 0.2 * 0.25, 1e-9);
  // No reason from NVML: the deficit is still a cost, named `clock`.
  tel(r).clock_event_fraction.clear();
  v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "clock"), 0.2, 1e-9);
  EXPECT_EQ(share(v, "power"), 0.0);
  // Locked application clocks.
  tel(r).clock_event_fraction = {{"applications_clocks_setting", 1.0}};
  EXPECT_NEAR(share(diagnose_bottleneck(r), "clock"), 0.2, 1e-9);
}

TEST(BottleneckTest, InputCommunicationAndIdleAreTheirMeasuredShares) {
  RunRecord r = gpu_run();
  set_input_wait(r, 0.31);
  tel(r).gpu_util_avg_pct = 60;  // NVML's idle includes the input wait: 40 % idle, 31 of it waiting for batches
  auto v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "input"), 0.31, 1e-9);
  EXPECT_NEAR(share(v, "launch"), 0.09, 1e-9);
  r = gpu_run();
  DistributedRecord d;
  d.world_size = 2;
  d.backend = "nccl";
  d.rank_epoch_seconds = {{10.0, 10.0}};
  d.rank_comm_wait_seconds = {{2.5, 2.0}};
  r.distributed = d;
  r.summary.achieved_tflops = 2 * 155.32;  // the job's model FLOPs: 155 TFLOP/s on each device
  v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "communication"), 0.225, 1e-9);  // 4.5 of 20 rank-seconds
  EXPECT_NEAR(share(v, "compute"), 155.32 / 776.6, 1e-9);
}

TEST(BottleneckTest, AProfileTimesTheIdleGapsAndSplitsTheKernels) {
  RunRecord r = gpu_run(120);
  r.profile = profile_with(0.45, {{"gemm_conv", 0.7}, {"elementwise", 0.3}});
  r.profile->launch_api_ms_per_step = 9.5;
  r.profile->idle_gaps = {ProfileGap{"amax_kernel<float>", "nvjet_qqtst", 4.2, 22}};
  tel(r).gpu_util_avg_pct = 50;
  auto v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "launch");
  EXPECT_NEAR(share(v, "launch"), 0.55, 1e-9);
  EXPECT_NEAR(share(v, "memory"), 0.45 * 0.3, 1e-9);
  EXPECT_NE(v.evidence.find("after amax_kernel<float> and before nvjet_qqtst"), std::string::npos) << v.evidence;
  EXPECT_TRUE(v.disagreements.empty());  // NVML's 50 % idle is within 10 points of the profile's 55 %
  // The profiler slows the host; against the unprofiled step the same kernels fill 97 % of it.
  r.profile->timed_step_ms = 27.2;
  r.profile->busy_fraction_of_timed_step = 0.97;
  v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "launch"), 0.03, 1e-9);
  EXPECT_FALSE(v.disagreements.empty());  // NVML said 50 % idle, the profile 3 %
  EXPECT_NE(v.evidence.find("disagree"), std::string::npos);
  // Memory-bound kernels dominating.
  r.profile->categories = {ProfileCategory{"gemm_conv", 8, 0.3, 10}, ProfileCategory{"normalization", 8, 0.25, 10},
                           ProfileCategory{"elementwise", 12, 0.45, 10}};
  tel(r).gpu_util_avg_pct = 97;
  v = diagnose_bottleneck(r);
  EXPECT_EQ(v.bounded_by, "memory");
  EXPECT_NEAR(share(v, "memory"), 0.97 * 0.7, 1e-9);
  EXPECT_NE(v.evidence.find("elementwise/activation 45 %"), std::string::npos) << v.evidence;
}

TEST(BottleneckTest, MatrixKernelsFasterThanTheAchievablePeakAllowsAreADisagreement) {
  RunRecord r = gpu_run(600);  // the FLOPs alone need 77 % of the step at the measured ceiling
  r.profile = profile_with(0.99, {{"gemm_conv", 0.4}, {"elementwise", 0.6}});
  r.profile->busy_fraction_of_timed_step = 0.99;
  const auto v = diagnose_bottleneck(r);
  ASSERT_FALSE(v.disagreements.empty());
  EXPECT_NE(v.disagreements.front().find("the FLOP count or the ceiling is off"), std::string::npos);
}

TEST(BottleneckTest, ADeviceWithoutAMeasuredCeilingUsesTheDatasheetAndSaysSo) {
  RunRecord r = gpu_run(100);
  r.environment.device_name = "NVIDIA H100 80GB HBM3";
  const auto v = diagnose_bottleneck(r);
  EXPECT_NEAR(share(v, "compute"), 100.0 / 989.4, 1e-9);
  const auto& c = *std::find_if(v.factors.begin(), v.factors.end(), [](const auto& f) { return f.factor == "compute"; });
  EXPECT_NE(c.method.find("lower bound"), std::string::npos) << c.method;
}

TEST(BottleneckTest, FactorsWithinTheRunsNoiseTieAndTheFixedOrderDecides) {
  // 45 % idle and 45 % below-peak kernels (ResNet-50 bs 64 on the H200): whichever is a hair larger, one verdict.
  RunRecord r = gpu_run(62.0);  // compute 8 %
  tel(r).gpu_util_avg_pct = 55.5;
  const auto a = diagnose_bottleneck(r);
  tel(r).gpu_util_avg_pct = 53.5;
  const auto b = diagnose_bottleneck(r);
  EXPECT_GT(share(a, "kernels"), share(a, "launch"));
  EXPECT_LT(share(b, "kernels"), share(b, "launch"));
  EXPECT_EQ(a.bounded_by, "kernels");
  EXPECT_EQ(b.bounded_by, "kernels");
  EXPECT_EQ(b.tied, std::vector<std::string>{"launch"});
  EXPECT_NE(b.evidence.find("Within 5 %"), std::string::npos) << b.evidence;
  // The margin is the run's own step-time variation where that is larger (here 12 %), up to 15 points.
  tel(r).gpu_util_avg_pct = 45;  // launch 55 %, kernels 37 %
  EXPECT_EQ(diagnose_bottleneck(r).bounded_by, "launch");
  r.summary.step_time.stdev_ms = 1.9;  // 19 %: held at 15 points, so 18 points apart is still launch
  EXPECT_EQ(diagnose_bottleneck(r).margin, kMaximumShareMargin);
  EXPECT_EQ(diagnose_bottleneck(r).bounded_by, "launch");
  tel(r).gpu_util_avg_pct = 49;  // launch 51 %, kernels 41 %: 10 points, inside the margin
  EXPECT_EQ(diagnose_bottleneck(r).bounded_by, "kernels");
}

/// The record at `low` and at `high` of one input either side of a threshold the old cascade had: the attribution
/// has no step there, so both sides give one verdict and the shares move no more than the input did.
void expect_continuous(const std::function<void(RunRecord&, double)>& set, double low, double high,
                       const std::string& what) {
  RunRecord a = gpu_run(), b = gpu_run();
  set(a, low);
  set(b, high);
  const auto va = diagnose_bottleneck(a), vb = diagnose_bottleneck(b);
  EXPECT_EQ(va.bounded_by, vb.bounded_by) << what;
  for (const auto& name : bottleneck_factor_names()) {
    EXPECT_LE(std::abs(share(va, name) - share(vb, name)), 2 * (high - low) + 1e-9) << what << ": " << name;
  }
}

TEST(BottleneckTest, NoVerdictFlipsAtAnyThresholdOfTheFormerCascade) {
  expect_continuous([](RunRecord& r, double x) { set_input_wait(r, x); }, 0.049, 0.051, "input wait 5 %");
  expect_continuous(
      [](RunRecord& r, double x) {
        tel(r).clock_event_fraction = {{"hw_thermal_slowdown", x}};
        tel(r).sm_clock_avg_mhz = 1900;
      },
      0.19, 0.21, "thermal in 20 % of readings");
  expect_continuous(
      [](RunRecord& r, double x) {
        tel(r).clock_event_fraction = {{"sw_power_cap", x}};
        tel(r).sm_clock_avg_mhz = 1900;
      },
      0.49, 0.51, "power cap in half the readings");
  expect_continuous(
      [](RunRecord& r, double x) {
        tel(r).clock_event_fraction = {{"sw_power_cap", 1.0}};
        tel(r).sm_clock_avg_mhz = 1980.0 * (1.0 - x);
      },
      0.029, 0.031, "clock 3 % below max");
  expect_continuous(
      [](RunRecord& r, double x) {
        DistributedRecord d;
        d.world_size = 2;
        d.backend = "nccl";
        d.rank_epoch_seconds = {{10.0, 10.0}};
        d.rank_comm_wait_seconds = {{10.0 * x, 10.0 * x}};
        r.distributed = d;
      },
      0.099, 0.101, "exposed communication 10 %");
  expect_continuous(
      [](RunRecord& r, double x) {
        r.profile = profile_with(x, {{"gemm_conv", 0.6}, {"elementwise", 0.4}});
        r.profile->busy_fraction_of_timed_step = x;
      },
      0.74, 0.76, "profile busy 75 %");
  expect_continuous([](RunRecord& r, double x) { tel(r).gpu_util_avg_pct = 100.0 * x; }, 0.79, 0.81,
                    "NVML utilisation 80 %");
  expect_continuous(
      [](RunRecord& r, double x) {
        r.summary.mfu = x;
        r.summary.achieved_tflops = 989.4 * x;
      },
      0.349, 0.351, "MFU 35 %");
  expect_continuous(
      [](RunRecord& r, double x) {
        r.scenario.mode = "generate";
        r.summary.achieved_tflops = 0;
        set_metric(r.summary.metrics, Metric{kDecodeBoundFractionTag, "", "", Better::kNeither, x});
      },
      0.49, 0.51, "roofline 50 %");
}

TEST(BottleneckTest, TheRecordKeepsTheRankedListAndReadersGetTheSameAnswer) {
  RunRecord r = gpu_run(150.0);
  tel(r).sm_clock_avg_mhz = 1921;
  tel(r).clock_event_fraction = {{"sw_power_cap", 1.0}};
  set_bottleneck(r);
  EXPECT_EQ(r.summary.bounded_by, "kernels");
  ASSERT_EQ(r.summary.bottleneck_factors.size(), 3u);
  EXPECT_EQ(r.summary.bottleneck_factors.front().factor, "kernels");
  const RunRecord back = nlohmann::json(r).get<RunRecord>();
  EXPECT_EQ(back.summary.bottleneck_factors, r.summary.bottleneck_factors);
  // An old record carries no list; its attribution is decided from what it holds, as a new run's is.
  RunRecord old = r;
  old.summary.bounded_by.clear();
  old.summary.bottleneck_evidence.clear();
  old.summary.bottleneck_factors.clear();
  EXPECT_EQ(diagnose_bottleneck(old).factors, r.summary.bottleneck_factors);
}

TEST(BottleneckTest, OldRecordsStopReasonMovesToStoppedBy) {
  RunRecord r = gpu_run();
  nlohmann::json j = r;
  j["schema_version"] = 2;
  j["summary"]["bounded_by"] = "time_budget";
  const RunRecord back = j.get<RunRecord>();
  EXPECT_EQ(back.summary.stopped_by, "time_budget");
  EXPECT_EQ(back.summary.bounded_by, "");
}

TEST(BottleneckTest, EveryCommittedSetOfRepeatsHasOneVerdict) {
  // The A/A series (aa-noise: five scenarios, 5-8 runs each, back to back) and every repeat set the results/ folders
  // hold (repeats.tar.gz: 48 sets, copied with their step lists emptied; SOURCES.txt there names each record).
  std::map<std::string, std::vector<RunRecord>> sets;
  for (const auto& lr : load_records({std::string(GPUBENCH_FIXTURES) + "/records/aa-noise"}, nullptr)) {
    std::string name = std::filesystem::path(lr.path).stem().string();
    sets["aa-noise/" + name.substr(0, name.rfind('_'))].push_back(lr.record);
  }
  for (auto& [member, r] : testing::archive_records(std::string(GPUBENCH_FIXTURES) + "/repeats.tar.gz")) {
    sets[std::filesystem::path(member).parent_path().string()].push_back(std::move(r));
  }
  ASSERT_GE(sets.size(), 50u);
  size_t runs = 0;
  for (const auto& [name, records] : sets) {
    ASSERT_GE(records.size(), 2u) << name;
    std::set<std::string> verdicts;
    for (const auto& r : records) {
      const auto v = diagnose_bottleneck(r);
      const bool telemetry = !r.epochs.empty() && r.epochs.front().telemetry.has_value();
      EXPECT_EQ(v.bounded_by.empty(), !telemetry) << name << ": " << v.evidence;  // a verdict wherever telemetry ran
      verdicts.insert(v.bounded_by);
      ++runs;
    }
    EXPECT_EQ(verdicts.size(), 1u) << name << ": " << ::testing::PrintToString(verdicts);
  }
  EXPECT_GE(runs, 130u);
}

}  // namespace
}  // namespace gpubench
