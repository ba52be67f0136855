// `gpubench compare`: regressions, published references, metrics by tag.

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

TEST_F(CliTest, CompareExitsThreeOnARegressionAndWritesItsReports) {
  // A real record whose step times are replaced by a steady series (a loaded CPU is too noisy to call anything),
  // and a copy 20% slower.
  const std::string base = (dir_ / "base").string(), cand = (dir_ / "new").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --output " + base + "/a.json").exit_code, 0);
  RunRecord steady = read_record(base + "/a.json");
  for (auto& e : steady.epochs) {
    e.step_times_ms.clear();
    for (int i = 0; i < 100; ++i) e.step_times_ms.push_back(50.0 + 0.1 * (i % 7));
    e.host.reset();  // times made up here: not the (perhaps busy) host's that ran the test
  }
  write_record(base + "/a.json", steady);
  for (auto& e : steady.epochs) {
    for (auto& t : e.step_times_ms) t *= 1.25;
  }
  write_record(cand + "/a.json", steady);
  const std::string md = (dir_ / "c.md").string(), junit = (dir_ / "c.xml").string();
  const Result r = gpubench("compare " + base + " " + cand + " --markdown " + md + " --junit " + junit);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("regression"), std::string::npos) << r.out;
  EXPECT_NE(slurp(md).find("| REGRESSION |"), std::string::npos) << slurp(md);
  EXPECT_NE(slurp(junit).find("failures=\"1\""), std::string::npos);
  EXPECT_EQ(gpubench("compare " + base + " " + base).exit_code, 0);
  EXPECT_EQ(gpubench("compare " + base + " " + (dir_ / "missing").string()).exit_code, 2);
  EXPECT_EQ(gpubench("compare " + base + " " + cand + " --threshold lots").exit_code, 2);
}

TEST_F(CliTest, ComparePublishedShowsThePercentAndTheRecipeDifferences) {
  const std::string run = (dir_ / "tiny.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --output " + run).exit_code, 0);
  const std::string md = (dir_ / "published.md").string();
  const Result r = gpubench("compare published/seed000-rtx4090 " + run + " --markdown " + md);
  ASSERT_EQ(r.exit_code, 5) << r.err;  // a tiny CPU run is not the publication's work
  for (const char* expected : {"**Not the same work**", "Different recipe:", "of the published figure",
                               "batch size: 4 here, 128 published", "data pipeline: one synthetic batch",
                               "does not follow from its own epoch time",
                               "gpubench run --config configs/published/recipes/seed000-resnet50-bs128-fp32.yaml",
                               "gpubench dataset make --out data/imagenet-like-100k --images 100000"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("%**"), std::string::npos) << r.out;  // a different recipe's percentage is never bold
  EXPECT_NE(r.err.find("not the same work as published/seed000-rtx4090"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(md), r.out);
  EXPECT_EQ(gpubench("compare published/seed000-rtx4090 " + run + " --allow-missing").exit_code, 0);
  const Result unknown = gpubench("compare published/seed999 " + run);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("seed000-rtx4090"), std::string::npos) << unknown.err;  // lists the known ids
}

TEST_F(CliTest, CompareTakesAMetricByTagAndRefusesAnUnknownOne) {
  const Result energy = gpubench("compare " + kCommitted + " " + kCommitted + " --metric joules_per_sample --format md");
  EXPECT_EQ(energy.exit_code, 0) << energy.err;
  EXPECT_NE(energy.out.find("energy per sample (joules_per_sample, J/sample), lower is better"), std::string::npos)
      << energy.out;
  EXPECT_NE(energy.out.find("no significant change"), std::string::npos) << energy.out;
  const Result unknown = gpubench("compare " + kCommitted + " " + kCommitted + " --metric warp_speed");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--metric warp_speed"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("step_time_p95_ms"), std::string::npos) << unknown.err;  // lists what there is
  const Result listed = gpubench("metrics");
  EXPECT_EQ(listed.exit_code, 0);
  EXPECT_NE(listed.out.find("joules_per_sample"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
