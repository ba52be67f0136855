// The results store on both databases: import, idempotence, concurrent writers, history filters, whole records back,
// migrations, and what a reader may never do. Every test runs on a SQLite file and on a fresh database of the
// PostgreSQL server ctest starts (tests/scripts/postgres_server.sh: fixture postgres_server); a build without libpq,
// or a run without the server's environment file, skips the PostgreSQL half and says why.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#include <sys/stat.h>

#ifdef GPUBENCH_TEST_WITH_LIBPQ
#include <libpq-fe.h>
#endif

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/temp_dir.h"
#include "gpubench/core/store/store.hpp"

namespace gpubench {
namespace {

enum class Backend { kSqlite, kPostgres };

/// The test server's settings (GPUBENCH_PG_* in the file GPUBENCH_TEST_POSTGRES_ENV names); empty when there is none.
std::map<std::string, std::string> postgres_server() {
  std::map<std::string, std::string> env;
  const char* file = std::getenv("GPUBENCH_TEST_POSTGRES_ENV");
  if (file == nullptr) return env;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

/// SQL run on the store's database behind the store's back (another job, an old gpubench, a foreign application).
class RawDb {
 public:
  RawDb(Backend b, const std::string& location) : backend_(b) {
    if (b == Backend::kSqlite) {
      if (sqlite3_open(location.c_str(), &sqlite_) != SQLITE_OK) throw std::runtime_error("sqlite3_open " + location);
#ifdef GPUBENCH_TEST_WITH_LIBPQ
    } else {
      pg_ = PQconnectdb(location.c_str());
      if (PQstatus(pg_) != CONNECTION_OK) throw std::runtime_error(std::string("libpq: ") + PQerrorMessage(pg_));
#endif
    }
  }
  ~RawDb() {
    if (sqlite_ != nullptr) sqlite3_close(sqlite_);
#ifdef GPUBENCH_TEST_WITH_LIBPQ
    if (pg_ != nullptr) PQfinish(pg_);
#endif
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  /// Runs `sql`; the first column of its first row ("" when none). Throws on an error.
  std::string exec(const std::string& sql) {
    if (backend_ == Backend::kSqlite) {
      std::string first;
      char* err = nullptr;
      const int rc = sqlite3_exec(
          sqlite_, sql.c_str(),
          [](void* out, int n, char** values, char**) {
            auto* s = static_cast<std::string*>(out);
            if (s->empty() && n > 0 && values[0] != nullptr) *s = values[0];
            return 0;
          },
          &first, &err);
      if (rc != SQLITE_OK) {
        const std::string why = err != nullptr ? err : "?";
        sqlite3_free(err);
        throw std::runtime_error("sqlite: " + why);
      }
      return first;
    }
#ifdef GPUBENCH_TEST_WITH_LIBPQ
    PGresult* res = PQexec(pg_, sql.c_str());
    const ExecStatusType st = PQresultStatus(res);
    std::string first = st == PGRES_TUPLES_OK && PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";
    PQclear(res);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw std::runtime_error(PQerrorMessage(pg_));
    return first;
#else
    throw std::runtime_error("no libpq");
#endif
  }

 private:
  Backend backend_;
  sqlite3* sqlite_ = nullptr;
#ifdef GPUBENCH_TEST_WITH_LIBPQ
  PGconn* pg_ = nullptr;
#endif
};

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

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (!store_available()) GTEST_SKIP() << "built without SQLite";
    if (GetParam() == Backend::kSqlite) {
      path_ = (tmp_.path() / "results.db").string();
      return;
    }
    if (!postgres_store_available()) GTEST_SKIP() << "built without libpq (Debian: libpq-dev)";
#ifndef GPUBENCH_TEST_WITH_LIBPQ
    GTEST_SKIP() << "the tests were built without libpq";
#endif
    server_ = postgres_server();
    if (server_.empty()) {
      GTEST_SKIP() << "no test PostgreSQL server (ctest starts one: tests/scripts/postgres_server.sh; "
                      "GPUBENCH_TEST_POSTGRES_ENV names its settings)";
    }
    static std::atomic<int> counter{0};
    database_ = "store_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    RawDb(Backend::kPostgres, admin_url()).exec("CREATE DATABASE " + database_ + " OWNER gpubench");
    path_ = url(database_);
  }
  void TearDown() override {
    if (database_.empty()) return;
    try {
      RawDb(Backend::kPostgres, admin_url()).exec("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  /// The store's login role over the server's Unix socket (trusted there).
  std::string url(const std::string& database) const {
    return "postgresql://gpubench@/" + database + "?host=" + server_.at("GPUBENCH_PG_SOCKET") +
           "&port=" + server_.at("GPUBENCH_PG_PORT");
  }
  std::string admin_url() const {
    return "postgresql://postgres@/postgres?host=" + server_.at("GPUBENCH_PG_SOCKET") +
           "&port=" + server_.at("GPUBENCH_PG_PORT");
  }
  bool sqlite() const { return GetParam() == Backend::kSqlite; }
  RawDb raw() const { return RawDb(GetParam(), path_); }

  testing::TempDir tmp_{"store"};
  std::string path_;
  std::map<std::string, std::string> server_;
  std::string database_;
};

TEST_P(StoreTest, TheSameRecordTwiceIsStoredOnceAndReadsBackWhole) {
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

TEST_P(StoreTest, HistoryFiltersByModelScenarioAndDateAndListsTheMetric) {
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

TEST_P(StoreTest, EightWritersAtOnceLoseAndDuplicateNothing) {
  // Eight CI jobs adding 50 records each at the same moment to a store none of them has set up yet (so they also
  // race to make its tables); each also adds 10 of its neighbour's records, which must be stored once.
  constexpr int kWriters = 8, kEach = 50, kOverlap = 10;
  pid_t children[kWriters];
  for (int w = 0; w < kWriters; ++w) {
    children[w] = ::fork();
    ASSERT_GE(children[w], 0);
    if (children[w] == 0) {
      int rc = 0;
      try {
        ResultsStore db(path_);
        // The neighbour's first, so that both orders happen: either may find the other's already stored.
        const int next = (w + 1) % kWriters;
        for (int i = 0; i < kOverlap; ++i) db.add(run(256, 4000 + i, "2026-11-01T00:00:00Z", "580.1", next * 1000 + i), "n");
        for (int i = 0; i < kEach; ++i) db.add(run(256, 4000 + i, "2026-11-01T00:00:00Z", "580.1", w * 1000 + i), "w");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", w, e.what());
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
  const ResultsStore db(path_, ResultsStore::Access::kRead);
  EXPECT_EQ(db.count(), kWriters * kEach);
  EXPECT_EQ(raw().exec("SELECT COUNT(DISTINCT fingerprint) FROM runs"), std::to_string(kWriters * kEach));
  // Every run has all its metrics: as many as one record alone stores.
  EXPECT_EQ(raw().exec("SELECT COUNT(*) FROM (SELECT run_id, COUNT(*) AS n FROM metrics GROUP BY run_id) AS per_run "
                       "WHERE n <> (SELECT COUNT(*) FROM metrics WHERE run_id = (SELECT MIN(id) FROM runs))"),
            "0");
  EXPECT_EQ(raw().exec("SELECT COUNT(DISTINCT run_id) FROM metrics"), std::to_string(kWriters * kEach));
}

TEST_P(StoreTest, ReadersNeitherWaitBehindAWriterNorNeedWriteAccess) {
  {
    ResultsStore db(path_);
    db.add(run(256, 4000, "2026-11-01T00:00:00Z", "580.1"), "a");
  }
  // A writer in the middle of a transaction (another CI job's `db add`), holding the write lock it takes.
  RawDb writer = raw();
  writer.exec(sqlite() ? "BEGIN IMMEDIATE; CREATE TABLE other_job(a); INSERT INTO other_job VALUES (1);"
                       : "BEGIN; LOCK TABLE runs IN EXCLUSIVE MODE; CREATE TABLE other_job(a int);");
  const auto start = std::chrono::steady_clock::now();
  const ResultsStore reader(path_, ResultsStore::Access::kRead);
  EXPECT_EQ(reader.history(HistoryQuery{}).size(), 1u);  // the reader sees the last commit and goes on
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0)
      << "a reader waited for the writer (the busy timeout is 30 s)";
  writer.exec("ROLLBACK");
  if (sqlite()) {
    // A store the reader may not write (a shared, read-only results file) still reads.
    ::chmod(path_.c_str(), 0444);
    EXPECT_EQ(ResultsStore(path_, ResultsStore::Access::kRead).count(), 1);
    ::chmod(path_.c_str(), 0644);
  } else {
    // A role that may only read (a dashboard's) still reads.
    RawDb(Backend::kPostgres, admin_url()).exec("CREATE ROLE " + database_ + "_reader LOGIN");
    raw().exec("GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + database_ + "_reader");
    const std::string as_reader = "postgresql://" + database_ + "_reader@/" + database_ + "?host=" +
                                  server_.at("GPUBENCH_PG_SOCKET") + "&port=" + server_.at("GPUBENCH_PG_PORT");
    EXPECT_EQ(ResultsStore(as_reader, ResultsStore::Access::kRead).count(), 1);
    EXPECT_THROW(ResultsStore(as_reader, ResultsStore::Access::kWrite).add(run(128, 1, "2026-11-02", "1"), "x"),
                 std::runtime_error);
    raw().exec("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM " + database_ + "_reader");
    RawDb(Backend::kPostgres, admin_url()).exec("DROP ROLE " + database_ + "_reader");
  }
}

TEST_P(StoreTest, ARunWithoutMetricsIsARecordNotDamage) {
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

TEST_P(StoreTest, AWriterKilledMidImportLeavesAConsistentStore) {
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

TEST_P(StoreTest, AnUnusableLocationIsAnErrorNamingItButNeverThePassword) {
  if (sqlite()) {
    try {
      ResultsStore db("/proc/gpubench-no/results.db");
      FAIL() << "opened";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("/proc/gpubench-no/results.db"), std::string::npos) << e.what();
    }
    return;
  }
  const std::string password = server_.at("GPUBENCH_PG_PASSWORD");
  const std::string port = server_.at("GPUBENCH_PG_PORT");
  // A wrong password, the right one in the URL for a database that does not exist, and a port nobody listens on.
  const std::vector<std::pair<std::string, std::string>> cases{
      {"postgresql://gpubench:not-" + password + "@127.0.0.1:" + port + "/" + database_, "password authentication failed"},
      {"postgresql://gpubench:" + password + "@127.0.0.1:" + port + "/no_such_db", "no_such_db"},
      {"postgresql://gpubench:" + password + "@127.0.0.1:1/" + database_, "127.0.0.1"}};
  for (const auto& [location, expected] : cases) {
    for (const auto access : {ResultsStore::Access::kRead, ResultsStore::Access::kWrite}) {
      try {
        ResultsStore db(location, access);
        ADD_FAILURE() << "opened";
      } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("127.0.0.1"), std::string::npos) << what;  // the host is named
        EXPECT_NE(what.find(expected), std::string::npos) << what;
        EXPECT_EQ(what.find(password), std::string::npos) << what;  // the password never
      }
    }
  }
  // The right password over TCP opens it, and the store's name for messages and records still has no password.
  ResultsStore db("postgresql://gpubench:" + password + "@127.0.0.1:" + port + "/" + database_ + "?sslmode=prefer");
  EXPECT_EQ(db.name(), "postgresql://gpubench@127.0.0.1:" + port + "/" + database_ + "?sslmode=prefer");
  db.add(run(256, 4000, "2026-11-01T00:00:00Z", "580.1"), "a");
  EXPECT_EQ(db.records().at(0).path.find(password), std::string::npos);
}

TEST_P(StoreTest, ReadingNeverCreatesOrChangesAStore) {
  using Access = ResultsStore::Access;
  if (sqlite()) {
    // A missing store is an error, and stays missing.
    EXPECT_THROW(ResultsStore(path_, Access::kRead), std::runtime_error);
    EXPECT_FALSE(std::filesystem::exists(path_));
  } else {
    // An empty database is no store: reading it is an error and makes no table.
    EXPECT_THROW(ResultsStore(path_, Access::kRead), std::runtime_error);
    EXPECT_EQ(raw().exec("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"), "0");
  }
  // A foreign store is refused untouched, by readers and writers alike (SQLite: no tables, no WAL, no user_version;
  // PostgreSQL: a `runs` table of another application).
  const std::string foreign = sqlite() ? (tmp_.path() / "other.sqlite").string() : path_;
  RawDb(GetParam(), foreign).exec(sqlite() ? "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine')"
                                           : "CREATE TABLE runs (x TEXT); INSERT INTO runs VALUES ('mine')");
  const auto size = sqlite() ? std::filesystem::file_size(foreign) : 0;
  for (const auto access : {Access::kRead, Access::kWrite}) {
    try {
      ResultsStore s(foreign, access);
      FAIL() << "opened a foreign store";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not a gpubench results store"), std::string::npos) << e.what();
    }
  }
  if (sqlite()) {
    EXPECT_EQ(std::filesystem::file_size(foreign), size);
    EXPECT_FALSE(std::filesystem::exists(foreign + "-wal"));
  } else {
    EXPECT_EQ(raw().exec("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"), "1");
    EXPECT_EQ(raw().exec("SELECT x FROM runs"), "mine");
    raw().exec("DROP TABLE runs");
  }
  {
    ResultsStore w(path_);
    w.add(run(256, 4700, "2026-11-01T00:00:00Z", "580.1"), "a");
  }
  // A reader cannot write, even by mistake: a read-only file (SQLite) or a read-only session (PostgreSQL).
  if (sqlite()) ::chmod(path_.c_str(), 0444);
  ResultsStore r(path_, Access::kRead);
  EXPECT_EQ(r.count(), 1);
  EXPECT_EQ(r.history(HistoryQuery{}).size(), 1u);
  EXPECT_THROW(r.add(run(256, 4800, "2026-11-02T00:00:00Z", "580.1"), "b"), std::runtime_error);
  EXPECT_EQ(r.count(), 1);
  if (sqlite()) ::chmod(path_.c_str(), 0644);
}

TEST_P(StoreTest, BothDatabasesGiveTheSameAnswers) {
  // The same records in a SQLite file and in this test's store: history (every filter), tags, baselines and whole
  // records come back equal, ids and the store's name aside.
  const std::string other = (tmp_.path() / "same.db").string();
  ResultsStore a(path_), b(other);
  std::vector<RunRecord> records;
  for (int i = 0; i < 12; ++i) {
    RunRecord r = run(i % 3 == 0 ? 128 : 256, 4000 + 37.25 * i, "2026-11-" + std::to_string(10 + i) + "T00:00:00Z",
                      i < 6 ? "580.1" : "590.2", i);
    if (i == 4) r.status = RunStatus::kFailed;
    if (i % 4 == 1) r.scenario.precision = "fp16";
    records.push_back(r);
    a.add(r, "r" + std::to_string(i) + ".json");
    b.add(r, "r" + std::to_string(i) + ".json");
  }
  auto strip = [](std::vector<HistoryRow> rows) {
    for (auto& r : rows) r.id = 0;
    return rows;
  };
  auto same = [&](const HistoryQuery& q) {
    const auto x = strip(a.history(q)), y = strip(b.history(q));
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].source, y[i].source);
      EXPECT_EQ(x[i].value, y[i].value) << x[i].source;  // bit for bit
      EXPECT_EQ(x[i].batch_size, y[i].batch_size);
      EXPECT_EQ(x[i].identity_json, y[i].identity_json);
      EXPECT_EQ(x[i].scenario_json, y[i].scenario_json);
      EXPECT_EQ(x[i].unit, y[i].unit);
      EXPECT_EQ(x[i].status, y[i].status);
    }
  };
  HistoryQuery q;
  same(q);
  q.scenario["batch_size"] = "256";
  same(q);
  q.scenario["precision"] = "fp16";
  same(q);
  q = HistoryQuery{};
  q.since = "2026-11-15";
  q.metric = "step_time_median_ms";
  same(q);
  EXPECT_EQ(a.metric_tags(), b.metric_tags());
  EXPECT_EQ(a.count(), b.count());
  const auto base_a = a.baseline_for(records.back(), 3), base_b = b.baseline_for(records.back(), 3);
  ASSERT_EQ(base_a.size(), base_b.size());
  for (size_t i = 0; i < base_a.size(); ++i) EXPECT_EQ(base_a[i].record, base_b[i].record);
  const auto all_a = a.records(), all_b = b.records();
  ASSERT_EQ(all_a.size(), all_b.size());
  for (size_t i = 0; i < all_a.size(); ++i) EXPECT_EQ(all_a[i].record, all_b[i].record);
}

TEST_P(StoreTest, BaselinesAndSeriesFollowTheScenarioIdentity) {
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

TEST_P(StoreTest, AVersionOneStoreIsMigratedOnWriteAndReadAsItIsOnRead) {
  {
    ResultsStore db(path_);
    db.add(run(256, 4700, "2026-11-01T00:00:00Z", "580.1"), "a.json");
  }
  // Make it a version-1 store: no identity column.
  raw().exec(sqlite() ? "ALTER TABLE runs DROP COLUMN identity_json; PRAGMA user_version=1"
                      : "ALTER TABLE runs DROP COLUMN identity_json; UPDATE gpubench_store SET version = 1");
  {
    ResultsStore r(path_, ResultsStore::Access::kRead);
    const auto rows = r.history(HistoryQuery{});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(rows[0].identity_json)["world_size"], 1);  // derived from the record
  }
  ResultsStore w(path_);  // a writer upgrades it in place
  EXPECT_EQ(w.history(HistoryQuery{})[0].identity_json,
            ResultsStore(path_, ResultsStore::Access::kRead).history(HistoryQuery{})[0].identity_json);
  EXPECT_EQ(raw().exec(sqlite() ? "PRAGMA user_version" : "SELECT version FROM gpubench_store"), "4");
}

TEST_P(StoreTest, AStoreFromANewerGpubenchIsRefusedUntouched) {
  { ResultsStore db(path_); }
  raw().exec(sqlite() ? "PRAGMA user_version=99" : "UPDATE gpubench_store SET version = 99");
  for (const auto access : {ResultsStore::Access::kRead, ResultsStore::Access::kWrite}) {
    try {
      ResultsStore s(path_, access);
      FAIL() << "opened";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("newer gpubench (store version 99)"), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Databases, StoreTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return p.param == Backend::kSqlite ? "SQLite" : "PostgreSQL";
                         });

}  // namespace
}  // namespace gpubench
