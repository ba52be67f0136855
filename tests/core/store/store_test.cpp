// The results store: import, idempotence, concurrent writers, history filters, whole records back.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "common/temp_dir.h"
#include "gpubench/core/store/store.hpp"

namespace gpubench {
namespace {

RunRecord run(int64_t batch, double rate, const std::string& start, const std::string& driver, int salt = 0) {
  RunRecord r;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.precision = "bf16";
  r.scenario.seed = static_cast<uint64_t>(salt);  // makes otherwise equal records different
  r.precision.resolved = "bf16";
  r.model = ModelRecord{"resnet50", 25557032, 24.5e9, 0, "images"};
  r.environment.device_name = "NVIDIA H200";
  r.environment.start_time_utc = start;
  r.telemetry.driver_version = driver;
  r.environment.nvidia_driver_version = driver;  // as the runner writes it
  EpochRecord e;
  e.steps = 10;
  e.samples = 10 * batch;
  e.seconds = static_cast<double>(e.samples) / rate;
  e.samples_per_s = rate;
  e.step_times_ms = std::vector<double>(10, 1000.0 * static_cast<double>(batch) / rate);
  e.step_time = summarize_step_times(e.step_times_ms);
  r.epochs.push_back(e);
  summarize_run(r, e.step_times_ms);
  return r;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!store_available()) GTEST_SKIP() << "built without SQLite";
  }
  testing::TempDir tmp_{"store"};
  std::string path_ = (tmp_.path() / "results.db").string();
};

TEST_F(StoreTest, TheSameRecordTwiceIsStoredOnceAndReadsBackWhole) {
  ResultsStore db(path_);
  const RunRecord a = run(256, 4700, "2026-11-01T00:00:00Z", "580.1");
  EXPECT_TRUE(db.add(a, "runs/a.json"));
  EXPECT_FALSE(db.add(a, "elsewhere/a.json"));  // same content, another path: still once
  EXPECT_TRUE(db.add(run(256, 4710, "2026-11-02T00:00:00Z", "580.1"), "runs/b.json"));
  EXPECT_EQ(db.count(), 2);
  const auto rows = db.history(HistoryQuery{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(db.record(rows[0].id), a);  // nothing lost: the whole record comes back equal
  EXPECT_EQ(rows[0].source, "runs/a.json");
  // Reopening finds everything (and the tables are not made twice).
  ResultsStore again(path_);
  EXPECT_EQ(again.count(), 2);
}

TEST_F(StoreTest, HistoryFiltersByModelScenarioAndDateAndListsTheMetric) {
  ResultsStore db(path_);
  db.add(run(256, 4700, "2026-11-01T00:00:00Z", "580.1"), "a");
  db.add(run(128, 4300, "2026-11-02T00:00:00Z", "580.1"), "b");
  db.add(run(256, 4500, "2026-11-03T00:00:00Z", "590.2"), "c");
  HistoryQuery q;
  q.model = "resnet50";
  q.scenario["batch_size"] = "256";
  auto rows = db.history(q);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*rows[0].value, 4700);  // oldest first
  EXPECT_DOUBLE_EQ(*rows[1].value, 4500);
  EXPECT_EQ(rows[1].driver_version, "590.2");
  EXPECT_EQ(rows[1].unit, "images/s");
  q.since = "2026-11-02";
  EXPECT_EQ(db.history(q).size(), 1u);
  q = HistoryQuery{};
  q.scenario["precision"] = "bf16";
  q.metric = "step_time_median_ms";
  rows = db.history(q);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NEAR(*rows[1].value, 1000.0 * 128 / 4300, 1e-9);
  q.model = "bert-base";
  EXPECT_TRUE(db.history(q).empty());
}

TEST_F(StoreTest, TwoWritersAtOnceLoseNothing) {
  { ResultsStore create(path_); }
  constexpr int kEach = 25;
  pid_t children[2];
  for (int w = 0; w < 2; ++w) {
    children[w] = ::fork();
    ASSERT_GE(children[w], 0);
    if (children[w] == 0) {
      int rc = 0;
      try {
        ResultsStore db(path_);
        for (int i = 0; i < kEach; ++i) {
          if (!db.add(run(256, 4000 + i, "2026-11-01T00:00:00Z", "580.1", w * 1000 + i), "w")) rc = 2;
        }
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
  }
  for (pid_t c : children) {
    int status = 0;
    ::waitpid(c, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(ResultsStore(path_).count(), 2 * kEach);
}

TEST_F(StoreTest, ReadersNeitherWaitBehindAWriterNorNeedWriteAccess) {
  {
    ResultsStore db(path_);
    db.add(run(256, 4000, "2026-11-01T00:00:00Z", "580.1"), "a");
  }
  // A writer in the middle of a transaction (another CI job's `db add`).
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer, "BEGIN IMMEDIATE; CREATE TABLE other_job(a); INSERT INTO other_job VALUES (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  const ResultsStore reader(path_, ResultsStore::Access::kRead);
  EXPECT_EQ(reader.history(HistoryQuery{}).size(), 1u);  // WAL: the reader sees the last commit and goes on
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0)
      << "a reader waited for the writer (the busy timeout is 30 s)";
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
  // A store the reader may not write (a shared, read-only results file) still reads.
  ::chmod(path_.c_str(), 0444);
  EXPECT_EQ(ResultsStore(path_, ResultsStore::Access::kRead).count(), 1);
  ::chmod(path_.c_str(), 0644);
}

TEST_F(StoreTest, ARunWithoutMetricsIsARecordNotDamage) {
  // Found by fuzz/store_fuzzer: a failed run with no epochs has no metrics, and the store called itself damaged
  // (and refused every later write) because of it.
  RunRecord failed;
  failed.scenario.model = "resnet50";
  failed.status = RunStatus::kFailed;
  failed.reason = "no CUDA device is visible";
  {
    ResultsStore db(path_);
    EXPECT_TRUE(db.add(failed, "failed.json"));
    EXPECT_EQ(db.integrity(), "ok");
  }
  ResultsStore again(path_);  // opening for writing checks integrity first
  EXPECT_TRUE(again.add(run(256, 4000, "2026-11-01T00:00:00Z", "580.1"), "ok.json"));
  EXPECT_EQ(again.count(), 2);
}

TEST_F(StoreTest, AWriterKilledMidImportLeavesAConsistentStore) {
  { ResultsStore create(path_); }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ResultsStore db(path_);
    for (int i = 0; i < 100000; ++i) db.add(run(256, 4000 + i % 500, "2026-11-01T00:00:00Z", "580.1", i), "w");
    ::_exit(0);
  }
  // Let it write for a while, then kill it wherever it is (inside a transaction, most likely).
  for (int i = 0; i < 200; ++i) {
    ::usleep(10000);
    if (ResultsStore(path_).count() >= 20) break;
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ResultsStore after(path_);
  EXPECT_GE(after.count(), 1);
  EXPECT_EQ(after.integrity(), "ok");  // every stored run is whole: the killed transaction left nothing
  const int64_t before = after.count();
  EXPECT_TRUE(after.add(run(128, 4100, "2026-11-02T00:00:00Z", "580.1", -1), "after"));  // and it still takes writes
  EXPECT_EQ(after.count(), before + 1);
}

TEST_F(StoreTest, AnUnusableFileIsAnErrorNamingIt) {
  try {
    ResultsStore db("/proc/gpubench-no/results.db");
    FAIL() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/gpubench-no/results.db"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, ReadingNeverCreatesOrChangesAFile) {
  using Access = ResultsStore::Access;
  // A missing store is an error, and stays missing.
  EXPECT_THROW(ResultsStore(path_, Access::kRead), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(path_));
  // A foreign SQLite file is refused untouched, by readers and writers alike (no tables, no WAL, no user_version).
  const std::string foreign = (tmp_.path() / "other.sqlite").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine')", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  const auto size = std::filesystem::file_size(foreign);
  for (const auto access : {Access::kRead, Access::kWrite}) {
    try {
      ResultsStore s(foreign, access);
      FAIL() << "opened a foreign file";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not a gpubench results store"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(std::filesystem::file_size(foreign), size);
  EXPECT_FALSE(std::filesystem::exists(foreign + "-wal"));
  // A read-only file (and folder) can be read.
  {
    ResultsStore w(path_);
    w.add(run(256, 4700, "2026-11-01T00:00:00Z", "580.1"), "a");
  }
  ::chmod(path_.c_str(), 0444);
  ResultsStore r(path_, Access::kRead);
  EXPECT_EQ(r.count(), 1);
  EXPECT_EQ(r.history(HistoryQuery{}).size(), 1u);
  EXPECT_THROW(r.add(run(256, 4800, "2026-11-02T00:00:00Z", "580.1"), "b"), std::runtime_error);
  ::chmod(path_.c_str(), 0644);
}

TEST_F(StoreTest, BaselinesAndSeriesFollowTheScenarioIdentity) {
  ResultsStore db(path_);
  RunRecord one = run(256, 4700, "2026-11-01T00:00:00Z", "580.1");
  RunRecord two = run(256, 9300, "2026-11-02T00:00:00Z", "580.1");
  two.distributed = DistributedRecord{};
  two.distributed->world_size = 2;  // the same scenario file on two GPUs: another scenario
  db.add(one, "one.json");
  db.add(two, "two.json");
  RunRecord next = run(256, 4690, "2026-11-03T00:00:00Z", "580.1", 1);
  next.scenario.seed = 0;
  const auto base = db.baseline_for(next, 5);
  ASSERT_EQ(base.size(), 1u);
  EXPECT_NE(base[0].path.find("one.json"), std::string::npos) << base[0].path;
  const auto rows = db.history(HistoryQuery{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].identity_json, rows[1].identity_json);
  EXPECT_EQ(nlohmann::json::parse(rows[1].identity_json)["world_size"], 2);
}

TEST_F(StoreTest, AVersionOneStoreIsMigratedOnWriteAndReadAsItIsOnRead) {
  {
    ResultsStore db(path_);
    db.add(run(256, 4700, "2026-11-01T00:00:00Z", "580.1"), "a.json");
  }
  // Make it a version-1 store: no identity column.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "ALTER TABLE runs DROP COLUMN identity_json; PRAGMA user_version=1", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  {
    ResultsStore r(path_, ResultsStore::Access::kRead);
    const auto rows = r.history(HistoryQuery{});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(rows[0].identity_json)["world_size"], 1);  // derived from the record
  }
  ResultsStore w(path_);  // a writer upgrades it in place
  EXPECT_EQ(w.history(HistoryQuery{})[0].identity_json,
            ResultsStore(path_, ResultsStore::Access::kRead).history(HistoryQuery{})[0].identity_json);
}

}  // namespace
}  // namespace gpubench
