// The results store: `run --db`, `history` and baselines from it.

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

TEST_F(CliTest, RunAddsToAResultsStoreAndHistoryListsIt) {
  const std::string db = (dir_ / "results.db").string(), rec = (dir_ / "a.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --output " + rec + " --db " + db);
  if (r.err.find("built without SQLite") != std::string::npos) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Result again = gpubench("db add " + db + " " + rec);  // already there: stored once
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("added 0 record(s), 1 already stored; 1 in all"), std::string::npos) << again.out;
  const Result h = gpubench("history " + db + " --model resnet50 --scenario batch_size=4 --format csv");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out.rfind("id,start_time_utc,scenario_id,scenario,model,", 0), 0u) << h.out;
  EXPECT_NE(h.out.find(",resnet50,"), std::string::npos) << h.out;
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 2) << h.out;  // header + the one run
  EXPECT_EQ(gpubench("history " + db + " --scenario batch_size=4096 --format csv").out.find(",resnet50,"),
            std::string::npos);
  EXPECT_EQ(gpubench("history " + db + " --scenario nonsense").exit_code, 2);
  // A store that cannot be opened stops the run before it trains.
  const Result bad = gpubench("run --config " + tiny() + " --epochs 1 --output " + rec + " --db /proc/gpubench-no/r.db");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST_F(CliTest, TheStoreGivesBaselinesAndFindsTheNightADriverMadeTrainingSlower) {
  const RunRecord base = read_record(kCommitted);
  const fs::path nights = dir_ / "nights";
  fs::create_directories(nights);
  // 12 nights on driver A, then 12 nights 5 % slower on driver B; 1 % night-to-night noise (a fixed pattern).
  const double wobble[] = {0.004, -0.009, 0.007, -0.002, 0.010, -0.006, 0.001, -0.008, 0.005, -0.003, 0.008, -0.005};
  for (int d = 0; d < 24; ++d) {
    write_record((nights / ("n" + std::to_string(100 + d) + ".json")).string(),
                 night(base, d, d < 12 ? 1.0 : 0.95, d < 12 ? "580.159.04" : "590.10.01", wobble[d % 12]));
  }
  const std::string db = (dir_ / "ci.db").string();
  const Result added = gpubench("db add " + db + " " + nights.string());
  if (added.err.find("built without SQLite") != std::string::npos) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const Result h = gpubench("history " + db + " --model resnet50 --detect");
  EXPECT_EQ(h.exit_code, 3) << h.out << h.err;  // a change for the worse
  EXPECT_NE(h.out.find("WORSE"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("driver 580.159.04 -> 590.10.01"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("2026-11-13"), std::string::npos) << h.out;  // the first night after the change
  // The same history without the slow nights: quiet, exit 0.
  const Result quiet = gpubench("history " + db + " --model resnet50 --since 2026-11-14 --detect");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_NE(quiet.out.find("none found"), std::string::npos) << quiet.out;

  // A new night 5 % slower than the last 5 like-for-like nights: a regression against the store's baseline.
  const std::string fast = (dir_ / "fast.json").string(), slow = (dir_ / "slow.json").string();
  write_record(fast, night(base, 30, 0.95, "590.10.01", 0.002));
  write_record(slow, night(base, 30, 0.90, "590.10.01", 0.002));
  const Result same = gpubench("compare db:" + db + ":last-5 " + fast);
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.err.find("baseline: 5 run(s)"), std::string::npos) << same.err;
  EXPECT_EQ(gpubench("compare db:" + db + " " + slow).exit_code, 3);
  EXPECT_EQ(gpubench("compare db:" + db + ":last-x " + slow).exit_code, 2);

  // The report draws the history as a trend chart, from the store alone.
  const fs::path rep = dir_ / "report";
  const Result r = gpubench("report --db " + db + " --out " + rep.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(rep / "trend.png")) << r.out << r.err;
  EXPECT_NE(slurp(rep / "report.md").find("(trend.png)"), std::string::npos);
  EXPECT_NE(slurp(rep / "report.md").find("24 run record(s)"), std::string::npos);
  EXPECT_NE(slurp(rep / "trend.csv").find(",590.10.01,"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
