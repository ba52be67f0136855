// `gpubench sweep`: every point checked first, OOM points recorded, --batch-size max.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

TEST_F(CliTest, SweepRunsEveryPointAndGoesOnPastAnOom) {
  const fs::path out = dir_ / "sweep";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size 2,8 --precision fp32,bf16 --epochs 1 "
                            "--dataset-size 16 --out-dir " + out.string(),
                            "GPUBENCH_FAULT_INJECT=oom-above-batch:4");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;  // an OOM point is data, not a failed sweep
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 4u);
  EXPECT_EQ(j["points"][0]["point"], "batch_size=2,precision=fp32");
  for (const auto& p : j["points"]) {
    const bool big = p["point"].get<std::string>().find("batch_size=8") != std::string::npos;
    EXPECT_EQ(p["status"], big ? "oom" : "ok") << p.dump();
    EXPECT_TRUE(fs::exists(p["record"].get<std::string>()));
  }
  EXPECT_NE(r.out.find("oom: out of device memory at batch size 8"), std::string::npos) << r.out;
}

TEST_F(CliTest, SweepChecksEveryPointBeforeRunningAny) {
  const fs::path out = dir_ / "bad_sweep";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size 2,lots --out-dir " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("batch_size=lots"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("command line --batch-size"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CliTest, BatchSizeMaxFindsTheLargestBatchThatTrains) {
  const fs::path out = dir_ / "max";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size max --epochs 1 --dataset-size 16 "
                            "--out-dir " + out.string(),
                            "GPUBENCH_FAULT_INJECT=oom-above-batch:6");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["batch_size"], 6);
  EXPECT_EQ(j["points"][0]["status"], "ok");
  const RunRecord rec = read_record(j["points"][0]["record"].get<std::string>());
  EXPECT_NE(rec.notes.back().find("chosen by `--batch-size max`"), std::string::npos) << rec.notes.back();
}

TEST_F(CliTest, BatchSearchLadderAnswersTheLargestRungThatTrains) {
  // Training up to bs 7: the exact search says 7, the ladder 6 (1, 2, 3, 4, 6, 8, ...).
  const fs::path out = dir_ / "ladder";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size max --batch-search ladder --epochs 1 "
                            "--dataset-size 16 --out-dir " + out.string(),
                            "GPUBENCH_FAULT_INJECT=oom-above-batch:7");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["batch_size"], 6);
  const RunRecord rec = read_record(j["points"][0]["record"].get<std::string>());
  EXPECT_NE(rec.notes.back().find("on the ladder"), std::string::npos) << rec.notes.back();
  EXPECT_EQ(gpubench("sweep resnet50 --batch-size max --batch-search coarse").exit_code, 2);
}

TEST_F(CliTest, ASweepThisDeviceCannotRunIsRefusedBeforeAnyProbe) {
  // A memory cap on the CPU: refused up front (exit 2), not probed down to "not even batch size 1 fits".
  const fs::path out = dir_ / "capped";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --device cpu --batch-size max --memory-limit 12GiB "
                            "--out-dir " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("memory_limit"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "probes"));
}

}  // namespace
}  // namespace gpubench
