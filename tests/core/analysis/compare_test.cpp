#include "gpubench/core/analysis/compare.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "gpubench/core/analysis/bottleneck.hpp"

namespace gpubench {
namespace {

/// A run of 200 steps whose step times are normal around `step_ms` with relative noise `step_noise`; the whole run
/// is shifted by a relative `run_shift` (run-to-run variation).
LoadedRecord run(const std::string& path, double step_ms, double step_noise, double run_shift, uint64_t seed,
                 int64_t batch = 256) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  RunRecord r;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.precision = "bf16";
  r.scenario.device = "cuda:0";
  r.environment.device_name = "NVIDIA H200";
  EpochRecord e;
  e.steps = 200;
  const double mean = step_ms * (1.0 + run_shift);
  for (int i = 0; i < 200; ++i) e.step_times_ms.push_back(mean * (1.0 + step_noise * noise(rng)));
  r.epochs.push_back(e);
  return LoadedRecord{path, r};
}

/// `n` runs with run-to-run variation `run_noise` (drawn with `seed`).
std::vector<LoadedRecord> runs(int n, double step_ms, double step_noise, double run_noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> shift(0.0, run_noise);
  std::vector<LoadedRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(run("r" + std::to_string(i) + ".json", step_ms, step_noise, shift(rng), seed * 100 + i));
  return out;
}

TEST(CompareTest, IdenticalRunsShowNoSignificantChange) {
  const auto r = compare_runs(runs(5, 54.0, 0.005, 0.002, 1), runs(5, 54.0, 0.005, 0.002, 2), {});
  ASSERT_EQ(r.comparisons.size(), 1u);
  const Comparison& c = r.comparisons[0];
  EXPECT_EQ(c.verdict, Verdict::kNoChange) << c.ratio << " [" << c.ci_low << ", " << c.ci_high << "]";
  EXPECT_LT(c.ci_low, 1.0);
  EXPECT_GT(c.ci_high, 1.0);
  EXPECT_EQ(c.base_paths.size(), 5u);
  EXPECT_EQ(c.interval_basis, "runs");  // the run is the unit: its interval includes run-to-run variation
  EXPECT_EQ(c.base_runs, 5);
  EXPECT_FALSE(r.any_regression());
}

TEST(CompareTest, APairIsNotLikeForLikeWhenPowerLimitClocksGpuModelOrCoRunningProcessesDiffer) {
  auto side = [](uint64_t seed) { return runs(3, 54.0, 0.005, 0.002, seed); };
  auto with = [](std::vector<LoadedRecord> v, const std::function<void(RunRecord&)>& change) {
    for (auto& r : v) change(r.record);
    return v;
  };
  auto base = with(side(1), [](RunRecord& r) {
    r.telemetry.power_limit_w = 700;
    r.telemetry.clocks_locked = false;
    r.telemetry.other_processes = std::vector<GpuProcess>{};
  });
  // Same conditions (unknown values on one side do not count): like-for-like.
  auto same = with(side(2), [](RunRecord& r) { r.telemetry.power_limit_w = 700; });
  EXPECT_TRUE(compare_runs(base, same, {}).comparisons[0].like_for_like());

  struct Case {
    std::function<void(RunRecord&)> change;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {[](RunRecord& r) { r.telemetry.power_limit_w = 500; }, "power_limit_w: 700 -> 500"},
           {[](RunRecord& r) { r.telemetry.clocks_locked = true; }, "clocks_locked: not locked -> locked"},
           {[](RunRecord& r) { r.environment.device_name = "NVIDIA H100"; }, "gpu_model: NVIDIA H200 -> NVIDIA H100"},
           {[](RunRecord& r) { r.telemetry.other_processes = std::vector<GpuProcess>{{77, "python3", 1024}}; },
            "co-running processes: none -> pid 77 python3"}}) {
    auto cand = with(side(3), [&](RunRecord& r) {
      r.telemetry.power_limit_w = 700;
      r.telemetry.clocks_locked = false;
      c.change(r);
    });
    // Another GPU model is another scenario unless the comparison leaves the device out on purpose (chips compared).
    CompareOptions chips;
    chips.ignore = {"device_model"};
    const Comparison cmp = compare_runs(base, cand, chips).comparisons.at(0);
    EXPECT_FALSE(cmp.like_for_like()) << c.expect;
    ASSERT_EQ(cmp.not_like_for_like.size(), 1u) << c.expect;
    EXPECT_EQ(cmp.not_like_for_like[0], c.expect);
  }
  auto h100 = with(side(3), [](RunRecord& r) { r.environment.device_name = "NVIDIA H100"; });
  const Comparison other = compare_runs(base, h100, {}).comparisons.at(0);
  EXPECT_EQ(other.verdict, Verdict::kNotComparable);
  EXPECT_EQ(other.differences, std::vector<std::string>{"device_model: NVIDIA H200 -> NVIDIA H100"});
}

TEST(CompareTest, FivePercentSlowerWithHalfAPercentNoiseIsARegression) {
  // 5% less throughput = step times 1/0.95 longer.
  const auto r = compare_runs(runs(5, 54.0, 0.005, 0.005, 3), runs(5, 54.0 / 0.95, 0.005, 0.005, 4), {});
  const Comparison& c = r.comparisons[0];
  EXPECT_EQ(c.verdict, Verdict::kRegression);
  EXPECT_NEAR(c.ratio, 0.95, 0.01);
  EXPECT_LT(c.ci_high, 0.98);
  EXPECT_TRUE(r.any_regression());
}

TEST(CompareTest, OnePercentSlowerWithThreePercentNoiseIsNotSignificant) {
  const auto r = compare_runs(runs(5, 54.0, 0.03, 0.03, 5), runs(5, 54.0 / 0.99, 0.03, 0.03, 6), {});
  const Comparison& c = r.comparisons[0];
  EXPECT_EQ(c.verdict, Verdict::kNoChange) << c.ratio << " [" << c.ci_low << ", " << c.ci_high << "]";
}

TEST(CompareTest, SignificantButSmallSlowdownIsSlowerNotARegression) {
  const auto r = compare_runs(runs(5, 54.0, 0.002, 0.001, 7), runs(5, 54.0 / 0.99, 0.002, 0.001, 8), {});
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kSlower);
  EXPECT_FALSE(r.any_regression());
}

TEST(CompareTest, FasterWhenTheIntervalIsAboveOne) {
  const auto r = compare_runs(runs(3, 54.0, 0.005, 0.002, 9), runs(3, 54.0 / 1.05, 0.005, 0.002, 10), {});
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kFaster);
}

TEST(CompareTest, AFoldersDataIsItsFilesWhereverItLiesAndHoweverItWasFed) {
  auto folder = [](const std::string& path, int64_t workers, const std::string& decoded, int64_t images,
                   const std::string& digest, uint64_t seed) {
    LoadedRecord lr = run("r.json", 54, 0.005, 0, seed);
    RunRecord& r = lr.record;
    r.scenario.data = "folder";
    r.scenario.data_path = path;
    r.scenario.data_workers = workers;
    r.data = DataRecord{};
    r.data->source = "folder";
    r.data->path = path;
    r.data->workers = workers;
    r.data->decode = decoded;
    r.data->images = images;
    r.data->bytes = images * 1000;
    r.data->listing_digest = digest;
    return lr;
  };
  // Another temporary folder, another thread count and another choice of decode: auto: the same scenario, those
  // named as conditions that differ.
  const auto same = compare_runs({folder("/tmp/a1/ds", 0, "cpu", 8, "00000000000000aa", 1)},
                                 {folder("/tmp/b2/ds", 3, "gpu", 8, "00000000000000aa", 2)}, {});
  ASSERT_EQ(same.comparisons.size(), 1u);
  EXPECT_NE(same.comparisons[0].verdict, Verdict::kNotComparable) << same.comparisons[0].differences.at(0);
  EXPECT_EQ(same.comparisons[0].not_like_for_like,
            (std::vector<std::string>{"decoder: cpu -> gpu", "data_workers: 0 -> 3"}));
  // Other files (one more image) are other data, wherever they lie.
  const auto other = compare_runs({folder("/data/ds", 0, "cpu", 8, "00000000000000aa", 1)},
                                  {folder("/data/ds", 0, "cpu", 9, "00000000000000bb", 2)}, {});
  EXPECT_EQ(other.comparisons.at(0).verdict, Verdict::kNotComparable);
  EXPECT_EQ(other.comparisons.at(0).differing_keys,
            (std::vector<std::string>{"data_bytes", "data_files", "data_listing"}));
  // A record from before the digest says which data only by its folder's name, and pairs only by it.
  const auto old = compare_runs({folder("/data/ds", 0, "cpu", 8, "", 1)}, {folder("/data/ds", 2, "cpu", 8, "", 2)}, {});
  EXPECT_NE(old.comparisons.at(0).verdict, Verdict::kNotComparable);
  EXPECT_EQ(compare_runs({folder("/data/ds", 0, "cpu", 8, "", 1)}, {folder("/data/ds2", 0, "cpu", 8, "", 2)}, {})
                .comparisons.at(0)
                .differing_keys,
            std::vector<std::string>{"data_path"});
}

TEST(CompareTest, DifferentBatchSizeIsNotComparableAndNamesTheKey) {
  std::vector<LoadedRecord> base{run("a.json", 54, 0.005, 0, 1, 256)};
  std::vector<LoadedRecord> cand{run("b.json", 30, 0.005, 0, 2, 128)};
  const auto r = compare_runs(base, cand, {});
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kNotComparable);
  EXPECT_EQ(r.comparisons[0].differing_keys, std::vector<std::string>{"batch_size"});
}

TEST(CompareTest, TheAtenAndFusedKernelPathsAreDifferentScenarios) {
  std::vector<LoadedRecord> base{run("aten.json", 40, 0.005, 0, 1)};
  std::vector<LoadedRecord> cand{run("fused.json", 24, 0.005, 0, 2)};
  cand[0].record.scenario.kernels = "fused";
  const auto r = compare_runs(base, cand, {});
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kNotComparable);
  EXPECT_EQ(r.comparisons[0].differing_keys, std::vector<std::string>{"kernels"});
  // A record written before the key existed reads as the ATen path, and pairs with a new one.
  nlohmann::json old = base[0].record.scenario;
  old.erase("kernels");
  EXPECT_EQ(old.get<Scenario>().kernels, "aten");
}

TEST(CompareTest, EnvironmentDifferencesAreListedAndHardwareBreaksLikeForLike) {
  auto base = runs(1, 54, 0.005, 0, 1);
  auto cand = runs(1, 54, 0.005, 0, 2);
  base[0].record.telemetry.driver_version = "580.159.04";
  cand[0].record.telemetry.driver_version = "590.10.01";
  auto r = compare_runs(base, cand, {});
  ASSERT_EQ(r.environment.differences.size(), 1u);
  EXPECT_EQ(r.environment.differences[0], "nvidia_driver: 580.159.04 -> 590.10.01");
  EXPECT_TRUE(r.environment.like_for_like);
  cand[0].record.environment.device_name = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(compare_runs(base, cand, {}).environment.like_for_like);
}

TEST(CompareTest, TwoRunsThatDifferOnlyInTheirLibTorchNameTheLibTorchChange) {
  auto base = runs(1, 54, 0.005, 0, 1);
  auto cand = runs(1, 54, 0.005, 0, 2);
  base[0].record.environment.libtorch_version = "2.11.0";
  base[0].record.environment.libtorch_build = "2.11.0, CUDA 13.0 build";
  cand[0].record.environment.libtorch_version = "2.15.0";
  cand[0].record.environment.libtorch_build = "2.15.0, CUDA 13.2 build";
  const auto r = compare_runs(base, cand, {});
  EXPECT_EQ(r.environment.differences, std::vector<std::string>{"libtorch: 2.11.0 -> 2.15.0"});
  EXPECT_TRUE(r.environment.like_for_like);  // software, like a driver: the comparison is what is asked
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_NE(r.comparisons[0].verdict, Verdict::kNotComparable);
  // The same release built for another backend is named by its build.
  cand[0].record.environment.libtorch_version = "2.11.0";
  cand[0].record.environment.libtorch_build = "2.11.0, CPU only";
  EXPECT_EQ(compare_runs(base, cand, {}).environment.differences,
            std::vector<std::string>{"libtorch_build: 2.11.0, CUDA 13.0 build -> 2.11.0, CPU only"});
}

TEST(CompareTest, EachSideGetsItsAttributionAndADifferentTopFactorIsSaid) {
  // A driver that lets the power cap pull the clock from 1,980 to 1,485 MHz: the same kernels, now power-bound.
  auto base = runs(2, 54, 0.005, 0, 1);
  auto cand = runs(2, 62, 0.005, 0, 2);
  const auto set = [](std::vector<LoadedRecord>& side, double clock, double tflops) {
    for (auto& lr : side) {
      RunRecord& r = lr.record;
      r.status = RunStatus::kOk;
      r.precision.resolved = "bf16";
      r.summary.steps = 200;
      r.summary.achieved_tflops = tflops;
      r.telemetry.max_sm_clock_mhz = 1980;
      EpochTelemetry t;
      t.gpu_util_avg_pct = 100;
      t.sm_clock_avg_mhz = clock;
      t.clock_event_fraction = {{"sw_power_cap", clock < 1980 ? 1.0 : 0.0}};
      r.epochs[0].telemetry = t;
    }
  };
  set(base, 1980, 466);  // compute 60 %
  set(cand, 1485, 405);  // power 25 %, compute 52 %
  auto c = compare_runs(base, cand, {}).comparisons.at(0);
  EXPECT_EQ(c.base_bounded_by, "compute");
  EXPECT_EQ(c.new_bounded_by, "compute");
  EXPECT_TRUE(c.bottleneck_change.empty());
  EXPECT_NEAR(factor_share(c.new_factors, "power"), 0.25, 1e-9);
  set(cand, 990, 300);  // the clock halved: power 50 %, compute 39 %
  c = compare_runs(base, cand, {}).comparisons.at(0);
  EXPECT_EQ(c.new_bounded_by, "power");
  EXPECT_EQ(c.bottleneck_change, "bounded by compute -> power (power 0 % -> 50 %, compute 60 % -> 39 % of the step)");
}

TEST(CompareTest, SameSeedGivesTheSameInterval) {
  const auto a = compare_runs(runs(3, 54, 0.01, 0.01, 1), runs(3, 55, 0.01, 0.01, 2), {});
  const auto b = compare_runs(runs(3, 54, 0.01, 0.01, 1), runs(3, 55, 0.01, 0.01, 2), {});
  EXPECT_EQ(a.comparisons[0].ci_low, b.comparisons[0].ci_low);
  EXPECT_EQ(a.comparisons[0].ci_high, b.comparisons[0].ci_high);
}

TEST(CompareTest, FailedRunsAreLeftOutAndAModelWithoutBaselineIsSaidSo) {
  auto base = runs(2, 54, 0.005, 0, 1);
  base[1].record.status = RunStatus::kOom;
  auto cand = runs(1, 54, 0.005, 0, 2);
  cand[0].record.scenario.model = "bert-base";
  const auto r = compare_runs(base, cand, {});
  ASSERT_EQ(r.comparisons.size(), 1u);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kNoBaseline);
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

/// `n` runs with between-run coefficient of variation `run_cv`, GPU utilisation `util` (NVML, %), from `seed`.
std::vector<LoadedRecord> series(int n, double step_ms, double run_cv, double util, uint64_t seed) {
  auto out = runs(n, step_ms, 0.005, run_cv, seed);
  for (auto& r : out) {
    EpochTelemetry t;
    t.gpu_util_avg_pct = util;
    r.record.epochs[0].telemetry = t;
  }
  return out;
}

double regression_rate(int pairs, int per_side, double slowdown, double run_cv, double util) {
  int regressions = 0;
  for (int i = 0; i < pairs; ++i) {
    CompareOptions o;
    o.resamples = 400;
    const auto base = series(per_side, 50.0, run_cv, util, 1000 + 2 * i);
    const auto cand = series(per_side, 50.0 / (1.0 - slowdown), run_cv, util, 1001 + 2 * i);
    regressions += compare_runs(base, cand, o).any_regression() ? 1 : 0;
  }
  return static_cast<double>(regressions) / pairs;
}

TEST(CompareNoiseTest, AaPairsWithRealisticRunToRunVarianceRarelyRegress) {
  // GPU-bound single runs vary by 0.1-0.5 % between runs on the H200 (results/2026-12-01-h200-aa-noise); repeats of a
  // busier step by 2 %. At the default settings compare calls a regression in at most 5 % of A/A pairs.
  EXPECT_LE(regression_rate(200, 1, 0.0, 0.005, 100), 0.05);
  EXPECT_LE(regression_rate(200, 3, 0.0, 0.02, 100), 0.05);
  EXPECT_LE(regression_rate(200, 2, 0.0, 0.02, 100), 0.05);
}

TEST(CompareNoiseTest, AFivePercentSlowdownWithThreeRunsPerSideIsCaught) {
  EXPECT_GE(regression_rate(100, 3, 0.05, 0.01, 100), 0.90);
  EXPECT_GE(regression_rate(100, 3, 0.05, 0.005, 100), 0.99);
}

TEST(CompareNoiseTest, OneRunPerSideSaysItsIntervalIsWithinRunAndKeepsTheNoiseFloor) {
  // Step noise alone makes a 1 % difference "significant" within each run; one run per side cannot tell it from the
  // difference between two runs, so it stays below the noise floor.
  const auto base = series(1, 50.0, 0.0, 100, 1), cand = series(1, 50.0 / 0.99, 0.0, 100, 2);
  const Comparison c = compare_runs(base, cand, {}).comparisons.at(0);
  EXPECT_EQ(c.interval_basis, "steps");
  EXPECT_EQ(c.verdict, Verdict::kNoChange);
  EXPECT_NE(c.note.find("noise floor"), std::string::npos) << c.note;
  const auto slow = series(1, 50.0 / 0.95, 0.0, 100, 3);
  EXPECT_EQ(compare_runs(base, slow, {}).comparisons.at(0).verdict, Verdict::kRegression);  // beyond it: said
}

TEST(CompareNoiseTest, HostBoundRunsWithoutRepeatsOnBothSidesAreInconclusive) {
  // Three back-to-back ResNet-50 bs 64 runs: the host slowed (GPU busy 89 -> 65 %), not the GPU.
  const auto base = series(1, 50.0, 0.0, 89, 1), cand = series(1, 50.0 / 0.80, 0.0, 65, 2);
  const Comparison c = compare_runs(base, cand, {}).comparisons.at(0);
  EXPECT_EQ(c.verdict, Verdict::kInconclusive);
  EXPECT_NE(c.note.find("host-bound"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("GPU busy 65"), std::string::npos) << c.note;
  // Repeats on both sides that separate the two: the run-level test decides.
  const auto b3 = series(3, 50.0, 0.01, 80, 3), c3 = series(3, 50.0 / 0.80, 0.01, 80, 4);
  EXPECT_EQ(compare_runs(b3, c3, {}).comparisons.at(0).verdict, Verdict::kRegression);
}

TEST(CompareNoiseTest, TheCommittedH200AaRepeatsGiveNoRegression) {
  const std::vector<LoadedRecord> all =
      load_records({std::string(GPUBENCH_FIXTURES) + "/records/aa-noise"}, nullptr);
  ASSERT_GE(all.size(), 30u);
  int pairs = 0, regressions = 0, inconclusive = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      if (i == j) continue;
      const auto r = compare_runs({all[i]}, {all[j]}, {});
      for (const auto& c : r.comparisons) {
        if (c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline) continue;
        ++pairs;
        regressions += c.verdict == Verdict::kRegression ? 1 : 0;
        inconclusive += c.verdict == Verdict::kInconclusive ? 1 : 0;
      }
    }
  }
  EXPECT_GE(pairs, 100);
  EXPECT_LE(regressions, pairs / 20) << regressions << " of " << pairs;
  EXPECT_GT(inconclusive, 0) << "the launch-bound families (BERT bs 32, ResNet bs 64) swing by up to 27 %";
}

TEST(CompareNoiseTest, StudentQuantilesMatchTheTables) {
  EXPECT_NEAR(student_t_quantile(0.95, 1), 12.706, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 2), 4.303, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 4), 2.776, 5e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 10), 2.228, 2e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 1000), 1.962, 1e-3);
}

}  // namespace
}  // namespace gpubench
