// Verdicts a CI job can act on: the scenario identity, run-to-run noise, and never a silent pass (issue #28).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

const std::string kScaling =
    std::string(GPUBENCH_FIXTURES) + "/records/ddp-scaling/";
const std::string kAa = std::string(GPUBENCH_FIXTURES) + "/records/aa-noise/";

TEST_F(CliTest, OneAndTwoGpuRunsAreNotTheSameScenario) {
  const Result r = gpubench("compare " + kScaling + "resnet50_gpus1.json " + kScaling + "resnet50_gpus2.json");
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("not the same scenario"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world_size: 1 -> 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REGRESSION"), std::string::npos) << r.out;
  EXPECT_EQ(gpubench("compare " + kScaling + "resnet50_gpus1.json " + kScaling + "resnet50_gpus2.json --allow-missing")
                .exit_code,
            0);
}

TEST_F(CliTest, DataOnlyAndInferenceRecordsAreNotTheSameScenarioAsTraining) {
  const std::string train = (dir_ / "train.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 -q --output " + train).exit_code, 0);
  const std::string infer = (dir_ / "infer.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --mode inference -q --output " + infer).exit_code, 0);
  const Result modes = gpubench("compare " + train + " " + infer + " --format json");
  EXPECT_EQ(modes.exit_code, 5) << modes.err;
  const nlohmann::json j = nlohmann::json::parse(modes.out);
  EXPECT_EQ(j["comparisons"][0]["verdict"], "not the same scenario");
  const auto keys = j["comparisons"][0]["differing_keys"];
  EXPECT_NE(std::find(keys.begin(), keys.end(), "mode"), keys.end()) << keys;
  // A data-only record (the loader timed alone) against a training one: another scenario, named by data_only.
  RunRecord loader = read_record(train);
  loader.scenario.data = "folder";
  loader.scenario.data_only = true;
  const std::string data_only = (dir_ / "data_only.json").string();
  write_record(data_only, loader);
  const Result d = gpubench("compare " + train + " " + data_only);
  EXPECT_EQ(d.exit_code, 5) << d.out;
  EXPECT_NE(d.out.find("data_only: false -> true"), std::string::npos) << d.out;
}

TEST_F(CliTest, HostBoundDifferencesAreInconclusiveNotRegressions) {
  // Back-to-back ResNet-50 bs 64 runs on the H200: the host slowed (GPU busy 75 -> 58 %), not the GPU.
  const Result r = gpubench("compare " + kAa + "resnet_amp_bs64_r1.json " + kAa + "resnet_amp_bs64_r3.json");
  EXPECT_EQ(r.exit_code, 8) << r.out << r.err;
  EXPECT_NE(r.out.find("inconclusive"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host-bound"), std::string::npos) << r.out;
  // GPU-bound single runs: within-run interval, and a difference inside the noise floor is no change.
  const Result gpu = gpubench("compare " + kAa + "resnet_amp_bs256_r1.json " + kAa + "resnet_amp_bs256_p2.json");
  EXPECT_EQ(gpu.exit_code, 0) << gpu.out << gpu.err;
  EXPECT_NE(gpu.out.find("within-run only"), std::string::npos) << gpu.out;
}

TEST_F(CliTest, ReadingCommandsNeverCreateAStoreAndFiltersNameTheValidChoices) {
  const std::string typo = (dir_ / "typo.db").string();
  const Result h = gpubench("history " + typo);
  EXPECT_EQ(h.exit_code, 2);
  EXPECT_NE(h.err.find("does not exist"), std::string::npos) << h.err;
  EXPECT_FALSE(fs::exists(typo));
  EXPECT_EQ(gpubench("compare db:" + typo + " " + kAa + "resnet_amp_bs256_r1.json").exit_code, 2);
  EXPECT_EQ(gpubench("report --db " + typo + " --out " + (dir_ / "rep").string()).exit_code, 2);
  EXPECT_FALSE(fs::exists(typo));
  const Result notdb = gpubench("history " + tiny());
  EXPECT_EQ(notdb.exit_code, 2);

  const std::string db = (dir_ / "s.db").string();
  const Result added = gpubench("db add " + db + " " + kAa);
  ASSERT_EQ(added.exit_code, 0) << added.err;
  struct Case {
    std::string flags, expect;
  };
  for (const Case& c : std::vector<Case>{{"--model resnet", "did you mean resnet50?"},
                                         {"--scenario bogus=1", "unknown scenario key"},
                                         {"--scenario batch_sise=64", "did you mean batch_size?"},
                                         {"--since yesterday", "expected a date"},
                                         {"--since 2026-13-01", "expected a date"},
                                         {"--metric bogus_metric", "no such metric"}}) {
    const Result r = gpubench("history " + db + " " + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.flags << ": " << r.err;
  }
  EXPECT_EQ(gpubench("history " + db + " --model resnet50 --since 2026-11-30 --metric step_time_p95_ms").exit_code, 0);
}

TEST_F(CliTest, DetectSaysPerSeriesHowManyRunsItHasAndNeeds) {
  const std::string db = (dir_ / "s.db").string();
  ASSERT_EQ(gpubench("db add " + db + " " + kAa).exit_code, 0);
  const Result r = gpubench("history " + db + " --detect --format json");
  EXPECT_EQ(r.exit_code, 7) << r.err;  // series of 1 to 8 runs: detection needs 10
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& series = j["tables"]["series"];
  ASSERT_GE(series.size(), 6u);
  for (const auto& s : series) {
    EXPECT_EQ(s["needed"], 10);
    EXPECT_EQ(s["detection"], "too few runs: not searched");
  }
  EXPECT_NE(r.err.find("fewer than 10 runs"), std::string::npos) << r.err;
  EXPECT_EQ(gpubench("history " + db + " --detect --allow-missing").exit_code, 0);
}

TEST_F(CliTest, TheMainRecordAgainstPublishedFiguresIsNotTheSameWorkAndGetsTheRecipesCommand) {
  // The README's main job on the H200 (fp16 AMP, batch 256, synthetic) beside seed 000's fp32 batch-128 JPEG epochs
  // and beside seed 004's BERT figure: neither a headline percentage nor exit 0.
  const std::string main_record =
      std::string(GPUBENCH_FIXTURES) + "/records/main-job/main_resnet50_amp.json";
  Result r = gpubench("compare published/seed000-rtx4090 " + main_record);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  for (const char* expected : {"**Not the same work**", "batch size: 256 here, 128 published",
                               "precision: fp16 here, fp32 published", "Different recipe:",
                               "gpubench run --config configs/published/recipes/seed000-resnet50-bs128-fp32.yaml"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("%**"), std::string::npos) << r.out;
  r = gpubench("compare published/seed004-rtx4070-bert " + main_record + " --format json");
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_FALSE(j[0]["same_work"].get<bool>());
  EXPECT_EQ(j[0]["recipe_command"], "gpubench run --config configs/published/recipes/seed004-bert-base-bs32.yaml");
  EXPECT_NE(j[0]["work_differences"].dump().find("model: resnet50 here, bert-base published"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
