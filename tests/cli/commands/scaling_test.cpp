// `gpubench scaling`: rank counts run and projections from records.

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

TEST_F(CliTest, ScalingProjectionFromTheCommittedH200RecordsMatchesTheMeasuredTwoGpuEfficiency) {
  // Recorded inputs with a known answer: ResNet-50 bs 256 bf16 measured 97.7 % on 2xH200 (NVLink); the alpha-beta
  // model, from the 1-GPU record alone, must land within 3 points (it ignores synchronisation and stragglers, so it
  // is the optimistic side).
  const std::string dir =
      std::string(GPUBENCH_FIXTURES) + "/records/ddp-scaling/";
  const Result r = gpubench("scaling --project 1,2,8,64,1024 " + dir + "resnet50_gpus1.json " + dir +
                            "resnet50_gpus2.json --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpubench.scaling_projection");
  const auto& points = j["points"];
  ASSERT_EQ(points.size(), 5u);
  const double projected = points[1]["efficiency"], measured = points[1]["measured_efficiency"];
  EXPECT_NEAR(measured, 0.977, 0.002);
  EXPECT_NEAR(projected, measured, 0.03);
  EXPECT_GE(projected, measured);
  for (size_t i = 1; i < points.size(); ++i) {  // more GPUs never project a higher efficiency
    EXPECT_LE(points[i]["efficiency"].get<double>(), points[i - 1]["efficiency"].get<double>() + 1e-12);
  }
  EXPECT_EQ(points[4]["nodes"], 128);
  EXPECT_FALSE(j["assumptions"].empty());
  // Calibrated on the 2-GPU run, its 2-GPU projection is the measurement.
  const Result c = gpubench("scaling --project 2 --calibrate " + dir + "resnet50_gpus1.json " + dir +
                            "resnet50_gpus2.json --format json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const nlohmann::json cj = nlohmann::json::parse(c.out);
  EXPECT_NEAR(cj["points"][0]["efficiency"].get<double>(), 54.082 / 55.402, 0.001);
  // Usage errors: no 1-GPU record, an unknown preset.
  EXPECT_EQ(gpubench("scaling --project 8 " + dir + "resnet50_gpus2.json").exit_code, 2);
  EXPECT_EQ(gpubench("scaling --project 8 --interconnect carrier-pigeon " + dir + "resnet50_gpus1.json").exit_code, 2);
}

TEST_F(CliTest, ScalingRunsEachRankCountAndReportsEfficiency) {
  const fs::path out = dir_ / "scaling";
  const Result r = gpubench("scaling resnet50 --gpus 1,2 --out-dir " + out.string() + " --config " + tiny() +
                            " --device cpu --dataset-size 32 --ddp-timeout 60s");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "scaling.json"));
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["ranks"], 1);
  EXPECT_DOUBLE_EQ(j["points"][0]["scaling_efficiency"].get<double>(), 1.0);
  EXPECT_EQ(j["points"][1]["ranks"], 2);
  EXPECT_GT(j["points"][1]["scaling_efficiency"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(out / "resnet50_gpus2.json"));
  EXPECT_NE(r.out.find("scaling efficiency"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpubench
