// Builds users make against their own LibTorch (issue 58): a LibTorch change is named like a driver change, a build
// without the CUDA module refuses what only the module runs (exit 2, before anything runs), and `info` says which
// backends this build and its LibTorch have.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

bool no_store(const Result& r) { return r.err.find("built without SQLite") != std::string::npos; }

TEST_F(CliTest, CompareNamesALibTorchChangeBetweenTwoOtherwiseEqualRecords) {
  RunRecord a = read_record(kCommitted);
  a.environment.libtorch_version = "2.11.0";
  RunRecord b = a;
  b.environment.libtorch_version = "2.15.0";
  write_record((dir_ / "a.json").string(), a);
  write_record((dir_ / "b.json").string(), b);
  const Result r = gpubench("compare " + (dir_ / "a.json").string() + " " + (dir_ / "b.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the same numbers: no change, and the difference is said
  EXPECT_NE((r.out + r.err).find("libtorch: 2.11.0 -> 2.15.0"), std::string::npos) << r.out << r.err;
  const Result j = gpubench("compare " + (dir_ / "a.json").string() + " " + (dir_ / "b.json").string() +
                            " --format json");
  EXPECT_EQ(nlohmann::json::parse(j.out).at("environment_differences"),
            nlohmann::json::array({"libtorch: 2.11.0 -> 2.15.0"}))
      << j.out;
}

TEST_F(CliTest, HistoryDetectNamesTheLibTorchThatCameWithAStepChange) {
  const RunRecord base = read_record(kCommitted);
  fs::create_directories(dir_ / "nights");
  for (int d = 1; d <= 10; ++d) {
    RunRecord r = night(base, d - 1, d <= 5 ? 1.0 : 1.08, base.telemetry.driver_version, 0.002 * ((d * 7) % 5 - 2));
    r.environment.libtorch_version = d <= 5 ? "2.11.0" : "2.15.0";
    write_record((dir_ / "nights" / ("n" + std::to_string(d) + ".json")).string(), r);
  }
  const std::string db = (dir_ / "s.db").string();
  const Result added = gpubench("db add " + db + " " + (dir_ / "nights").string());
  if (no_store(added)) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const Result h = gpubench("history " + db + " --detect");
  EXPECT_NE(h.out.find("LibTorch 2.11.0 -> 2.15.0"), std::string::npos) << h.out << h.err;
  EXPECT_NE(h.out.find("2026-11-06"), std::string::npos) << h.out;  // the first run after the change
}

/// The build's own account of itself (`info --format json`'s "build").
nlohmann::json build_of(const Result& info) { return nlohmann::json::parse(info.out).at("build"); }

TEST_F(CliTest, InfoListsTheBackendsOfThisBuildAndItsLibTorchAndWhichWereNeverRun) {
  const Result r = gpubench("info --device cpu --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& b : doc.at("backends")) {
    names.push_back(b.at("name"));
    if (b.at("name") == "cpu") EXPECT_TRUE(b.at("available").get<bool>());
    if (b.at("name") == "rocm" || b.at("name") == "mps" || b.at("name") == "xpu") {
      EXPECT_FALSE(b.at("run_on_hardware").get<bool>()) << b;  // never run by gpubench: said so
    }
    if (b.at("available").get<bool>()) EXPECT_TRUE(b.at("in_libtorch").get<bool>()) << b;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cuda", "rocm", "mps", "xpu", "cpu"}));
  const auto build = doc.at("build");
  EXPECT_EQ(build.at("libtorch_version"), doc.at("environment").at("libtorch_version"));
  EXPECT_FALSE(doc.at("environment").at("libtorch_build").get<std::string>().empty());
  // Only a CUDA LibTorch has the cuda backend; the CUDA module needs one.
  if (build.at("cuda_module").get<bool>()) EXPECT_EQ(build.at("libtorch_kind"), "CUDA");
}

TEST_F(CliTest, ADeviceOfABackendThisLibTorchLacksIsRefusedNamingTheLibTorch) {
  const Result info = gpubench("info --device cpu --format json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  std::map<std::string, bool> has;
  const auto doc = nlohmann::json::parse(info.out);  // a named value: a range-for over a temporary's part dangles
  for (const auto& b : doc.at("backends")) {
    has[b.at("name").get<std::string>()] = b.at("in_libtorch").get<bool>();
  }
  const auto dry = [&](const std::string& device) {
    return gpubench("run --config " + tiny() + " --device " + device + " --dry-run", "cd " + dir_.string() + " &&");
  };
  if (!has.at("rocm")) {
    const Result r = dry("rocm:0");
    EXPECT_EQ(r.exit_code, 1) << r.err;  // as the run would fail
    EXPECT_NE(r.err.find("not a ROCm build"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("NVIDIA GPUs are device: cuda"), std::string::npos) << r.err;
  }
  if (!has.at("cuda") && !has.at("rocm")) {
    const Result r = dry("cuda");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("a LibTorch without CUDA"), std::string::npos) << r.err;
  }
  if (!has.at("xpu")) {
    const Result r = dry("xpu:1");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("has no XPU backend"), std::string::npos) << r.err;
  }
  if (!has.at("mps")) EXPECT_EQ(dry("mps").exit_code, 1);
  EXPECT_EQ(dry("xpu:99999").exit_code, 2);  // not a device name at all: a usage error
}

TEST_F(CliTest, ABuildWithoutTheCudaModuleRefusesItsOptionsBeforeAnythingRuns) {
  const Result info = gpubench("info --device cpu --format json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const bool module = build_of(info).at("cuda_module").get<bool>();
  const Result made = gpubench("dataset make --images 8 --classes 2 --out " + (dir_ / "jpegs").string());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string folder = " --data folder --data-path " + (dir_ / "jpegs").string() + " --dataset-size 8";
  const std::pair<std::string, std::string> asks[] = {{"--kernels fused", "kernels: fused"},
                                                      {"--precision fp8", "precision: fp8"},
                                                      {"--cuda-graph", "graph: true"},
                                                      {folder + " --decode gpu", "decode: gpu"},
                                                      {folder + " --decode mixed", "decode: mixed"}};
  for (const auto& [flags, named] : asks) {
    const Result r = gpubench("run --config " + tiny() + " --device cpu " + flags + (module ? " --dry-run" : ""),
                              "cd " + dir_.string() + " &&");
    if (module) {
      EXPECT_EQ(r.err.find("no CUDA support"), std::string::npos) << flags << ": " << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << flags << ": " << r.err;
    EXPECT_NE(r.err.find("this build has no CUDA support"), std::string::npos) << flags << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "runs")) << flags << ": refused before anything ran or was written";
  }
  if (module) GTEST_SKIP() << "this build has the CUDA module: the refusals are checked in a GPUBENCH_CUDA=OFF build";
}

}  // namespace
}  // namespace gpubench
