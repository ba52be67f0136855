// `gpubench validate` and the JSON Schemas: files checked without running.

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

TEST_F(CliTest, ValidateChecksWithoutRunning) {
  EXPECT_EQ(gpubench("validate " + tiny()).exit_code, 0);
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << "{\"epochs\": 0}";
  const Result r = gpubench("validate " + bad.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json:1:12: key 'epochs'"), std::string::npos) << r.err;
}

TEST_F(CliTest, EveryShippedScenarioValidatesAgainstTheModelRegistry) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(GPUBENCH_SOURCE_DIR) / "configs")) {
    const auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
    const Result r = gpubench("validate " + entry.path().string());
    EXPECT_EQ(r.exit_code, 0) << entry.path() << ": " << r.err;
    ++n;
  }
  EXPECT_GE(n, 6);
}

bool has_jsonschema() {
  return std::system("/usr/bin/python3 -c 'import jsonschema, yaml; jsonschema.Draft202012Validator' > /dev/null 2>&1") == 0;
}

TEST_F(CliTest, CommittedAndFreshRecordsAndShippedScenariosMatchTheJsonSchemas) {
  if (!has_jsonschema()) GTEST_SKIP() << "python3-jsonschema is not installed (scripts/bootstrap.sh installs it)";
  const std::string src = GPUBENCH_SOURCE_DIR;
  const std::string fresh = (dir_ / "fresh.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 2 --output " + fresh).exit_code, 0);
  const std::string sweep = (dir_ / "sweep").string();
  const std::string db = (dir_ / "sweep.db").string();
  const bool has_store = gpubench("db add " + db + " " + fresh).err.find("built without SQLite") == std::string::npos;
  ASSERT_EQ(gpubench("sweep resnet50 --config " + tiny() + " --epochs 1 --batch-size 2,4 --out-dir " + sweep +
                     (has_store ? " --db " + db : std::string()))
                .exit_code,
            0);
  if (has_store) {
    const Result h = gpubench("history " + db + " --format csv");  // the fresh run, then both sweep points
    EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 4) << h.out;
  }
  const std::string validate = "/usr/bin/python3 -W ignore " + src + "/scripts/validate_records.py ";
  const std::string out = (dir_ / "v.out").string();
  // Every record under tests/fixtures/ (schema 1, 2 and 3), the shipped scenarios, and what the commands write now.
  const std::string all = validate + GPUBENCH_FIXTURES + " " + src + "/configs " + fresh + " " + sweep + " > " + out + " 2>&1";
  EXPECT_EQ(std::system(all.c_str()), 0) << slurp(out);
  EXPECT_NE(slurp(out).find(" ok"), std::string::npos) << slurp(out);
  // And the schema is no formality: an impossible record fails, naming the file and the path in it.
  nlohmann::json broken = nlohmann::json::parse(slurp(fresh));
  broken["epochs"][0]["seconds"] = -1;
  broken["summary"]["metrics"][0]["better"] = "sideways";
  std::ofstream(dir_ / "broken.json") << broken.dump();
  const std::string bad = validate + (dir_ / "broken.json").string() + " > " + out + " 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(slurp(out).find("broken.json: epochs/0/seconds"), std::string::npos) << slurp(out);
  EXPECT_NE(slurp(out).find("summary/metrics/0/better"), std::string::npos) << slurp(out);
}

TEST_F(CliTest, FitPlansAScenarioOnTheTablesCardsWithoutADevice) {
  // No GPU here: fit needs none. ResNet-50 bs 128 in fp32 on seed 000's 12 GB RTX 4070 Ti does not fit.
  const Result r = gpubench("fit resnet50 --precision fp32 --batch-size 128 --devices \"NVIDIA GeForce RTX 4070 Ti,NVIDIA H200\" "
                            "--format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpubench.fit");
  ASSERT_EQ(j["cards"].size(), 2u);
  for (const auto& c : j["cards"]) {
    if (c["device"] == "NVIDIA GeForce RTX 4070 Ti") {
      EXPECT_FALSE(c["fits"].get<bool>());
      EXPECT_GT(c["largest_batch"].get<int64_t>(), 64);
      EXPECT_FALSE(c["remedies"].empty());
    } else {
      EXPECT_TRUE(c["fits"].get<bool>());
    }
  }
  const Result console = gpubench("fit resnet50 --precision fp32 --batch-size 128 --devices \"NVIDIA GeForce RTX 4070 Ti\"");
  EXPECT_NE(console.out.find("accumulated"), std::string::npos) << console.out;
  const Result unknown = gpubench("fit resnet50 --devices \"NVIDIA B200\"");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("NVIDIA H200 SXM"), std::string::npos) << unknown.err;
  EXPECT_EQ(gpubench("fit resnet50 --batch-size 0").exit_code, 2);  // a bad key as run refuses it
}

TEST_F(CliTest, FitUnderAMemoryLimitOrAnEmulatedCardPlansAsTheCappedRunWould) {
  const Result r = gpubench("fit resnet50 --amp --memory-limit 12GiB --devices \"NVIDIA H200\" --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cap_bytes"], int64_t{12} << 30);
  EXPECT_EQ(j["cards"][0]["usable_bytes"], int64_t{12} << 30);  // the H200's 139 GiB capped at 12
  const int64_t capped = j["cards"][0]["largest_batch"];
  EXPECT_EQ(j["cards"][0]["largest_ladder_batch"], 256);  // the H100 sweep's answer at 12 GiB
  const auto e = nlohmann::json::parse(
      gpubench("fit resnet50 --amp --emulate \"NVIDIA GeForce RTX 4070 Ti\" --devices \"NVIDIA H200\" --format json").out);
  EXPECT_NE(e["cap_source"].get<std::string>().find("RTX 4070 Ti"), std::string::npos);
  EXPECT_LT(e["cards"][0]["largest_batch"].get<int64_t>(), capped);  // 11.08 GiB usable, under 12
  EXPECT_EQ(gpubench("fit resnet50 --emulate \"NVIDIA B200\"").exit_code, 2);
}

TEST_F(CliTest, AMemoryCapOnTheCpuIsRefusedBeforeAnythingRuns) {
  // Nothing on the CPU caps memory the way the caching allocator does: refused rather than silently not applied.
  const Result r = gpubench("run resnet50 --device cpu --memory-limit 12GiB --dry-run");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("memory_limit"), std::string::npos) << r.err;
  const Result e = gpubench("run resnet50 --device cpu --emulate \"NVIDIA GeForce RTX 4070 Ti\" --dry-run");
  EXPECT_EQ(e.exit_code, 2) << e.err;
  EXPECT_NE(e.err.find("emulate"), std::string::npos) << e.err;
  EXPECT_EQ(gpubench("run resnet50 --memory-limit 12 --dry-run").exit_code, 2);  // a size needs its unit
}

}  // namespace
}  // namespace gpubench
