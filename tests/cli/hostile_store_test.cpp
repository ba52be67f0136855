// Hostile input on the store, credentials and the newer commands (issue 70): what the console says is where records
// went, no password leaves the process, every output is checked before any work, signals leave a clear account.
// Each test failed on the code before this change.

#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "cli/cli_fixture.h"

namespace gpubench {

namespace {

/// A committed record as `count` distinct runs (start times one minute apart), one file each, in `folder`.
void write_runs(const fs::path& folder, int count, const std::string& fixture = kCommitted) {
  fs::create_directories(folder);
  nlohmann::json base = nlohmann::json::parse(std::ifstream(fixture));
  for (int i = 0; i < count; ++i) {
    nlohmann::json r = base;
    char when[32];
    std::snprintf(when, sizeof when, "2026-11-%02dT%02d:%02d:00Z", 1 + i / 1440, (i / 60) % 24, i % 60);
    r["environment"]["start_time_utc"] = when;
    std::ofstream(folder / ("r" + std::to_string(1000 + i) + ".json")) << r.dump();
  }
}

/// The ids `db list --format json` shows.
std::vector<int64_t> stored_ids(const Result& list) {
  std::vector<int64_t> ids;
  const nlohmann::json doc = nlohmann::json::parse(list.out);  // named: a temporary's part would dangle in the loop
  for (const auto& row : doc.at("tables").at("runs")) ids.push_back(row.at("id"));
  return ids;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

class HostileStoreTest : public CliTest {};

// `#` and `?` in a file name were read as a SQLite URI (the store landed in another file, or in memory: "added 2
// record(s)" and nothing on disk); `:memory:` and `file:` likewise. A store name is a file name.
TEST_F(HostileStoreTest, SqliteStoreNamesAreFileNamesNeverUris) {
  const std::string cd = "cd " + quoted(dir_) + " &&";
  for (const std::string name : {"a#b.db", "c?mode=memory.db", ":memory:", "file:d.db?mode=ro", "e%41.db"}) {
    const Result add = gpubench("db add '" + name + "' " + kCommitted, cd);
    ASSERT_EQ(add.exit_code, 0) << name << "\n" << add.err;
    EXPECT_NE(add.out.find(name + ": added 1 record(s)"), std::string::npos) << add.out;
    ASSERT_TRUE(fs::is_regular_file(dir_ / name)) << name << " is where the console said";
    EXPECT_GT(fs::file_size(dir_ / name), 0u) << name;
    const Result history = gpubench("history '" + name + "' --format json", cd);
    ASSERT_EQ(history.exit_code, 0) << name << "\n" << history.err;
    EXPECT_EQ(nlohmann::json::parse(history.out).at("tables").at("runs").size(), 1u) << name;
  }
  // A libpq key=value string is not a file name to create.
  EXPECT_EQ(gpubench("db add 'host=h password=hunter22' " + kCommitted, cd).exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "host=h password=hunter22"));
}

// `db rm STORE 010` removed run 8 (CLI11 reads a leading zero as octal). Run ids are decimal.
TEST_F(HostileStoreTest, RunIdsAreDecimal) {
  write_runs(dir_ / "runs", 10);
  const std::string store = (dir_ / "s.db").string();
  ASSERT_EQ(gpubench("db add " + store + " " + (dir_ / "runs").string()).exit_code, 0);
  for (const std::string bad : {"0x1", "-1", "+1", "1e1", "0b1", "' 1'", "١"}) {
    const Result r = gpubench("db rm " + store + " " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
  }
  EXPECT_EQ(stored_ids(gpubench("db list " + store + " --format json")).size(), 10u) << "nothing removed";
  const Result rm = gpubench("db rm " + store + " 010");
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  const Result list = gpubench("db list " + store + " --format json");
  EXPECT_EQ(stored_ids(list), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9})) << "run 10 went, run 8 stayed\n"
                                                                                  << list.out << list.err;
  EXPECT_EQ(gpubench("db prune " + store + " --keep 08 --dry-run").exit_code, 0) << "08 is eight, not bad octal";
}

// A store the reader cannot write (a read-only folder, another user's file) was "attempt to write a readonly
// database". Run as an unprivileged user where this test runs as root.
TEST_F(HostileStoreTest, AReadOnlyStoreIsRead) {
  if (::geteuid() != 0 || std::system("command -v setpriv >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs root and setpriv to read as another user";
  }
  const fs::path folder = dir_ / "ro";
  fs::create_directories(folder);
  const std::string store = (folder / "s.db").string();
  ASSERT_EQ(gpubench("db add " + store + " " + kCommitted).exit_code, 0);
  ::chmod(dir_.c_str(), 0755);
  ::chmod(store.c_str(), 0444);
  ::chmod(folder.c_str(), 0555);
  const Result r = gpubench("history " + store + " --format json", "setpriv --reuid=65534 --regid=65534 --clear-groups");
  ::chmod(folder.c_str(), 0755);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("tables").at("runs").size(), 1u);
  EXPECT_EQ(gpubench("db list " + store, "setpriv --reuid=65534 --regid=65534 --clear-groups").exit_code, 0);
}

// Every output is checked before any work, whatever the command: exit 2, nothing made.
TEST_F(HostileStoreTest, UnusableOutputsAreExitTwoBeforeAnyWork) {
  const std::string b = (dir_ / "b.json").string();
  fs::copy_file(kCommitted, b);
  const std::vector<std::pair<std::string, std::string>> cases{
      {"compare " + kCommitted + " " + b + " --format openmetrics", "no metrics"},
      {"compare " + kCommitted + " " + b + " --save " + (dir_ / "c.prom").string(), "no metrics"},
      {"list --format openmetrics", "no metrics"},
      {"fit resnet50 --save openmetrics:" + (dir_ / "f.txt").string(), "no metrics"},
      {"run --config " + tiny() + " --dry-run --format openmetrics", "no metrics"},
      {"sweep resnet50 --config " + tiny() + " --epochs 1 --db /dev/null --out " + (dir_ / "sw").string(), "--db"},
      {"scaling resnet50 --config " + tiny() + " --gpus 1 --db /dev/null --out " + (dir_ / "sc").string(), "--db"},
      {"sweep resnet50 --config " + tiny() + " --out=", "empty"},
      {"scaling resnet50 --config " + tiny() + " --gpus 1 --out ''", "empty"},
      {"run --config " + tiny() + " --cuda-graph=", "empty"},
      {"run --config " + tiny() + " --telemetry '' --dry-run", "empty"},
      {"history " + kCommitted + " --min-after 2", "--detect"},
      {"history " + kCommitted + " --allow-missing", "--detect"},
      {"run --config " + tiny() + " --cooldown 1s", "--repeats"},
      {"sweep resnet50 --config " + tiny() + " --batch-search ladder", "--batch-size max"},
      {"run --config " + tiny() + " --memory-limit 8GiB --emulate 'NVIDIA GeForce RTX 4070' --dry-run", "both"},
      {"fit resnet50 --memory-limit 8GiB --emulate 'NVIDIA GeForce RTX 4070'", "both"},
      {"fit resnet50 --measured " + (dir_ / "empty").string(), "no gpubench run records"},
  };
  fs::create_directories(dir_ / "empty");
  for (const auto& [args, says] : cases) {
    const Result r = gpubench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
  for (const char* made : {"c.prom", "f.txt", "sw", "sc"}) EXPECT_FALSE(fs::exists(dir_ / made)) << made;
  EXPECT_FALSE(fs::exists(dir_ / "runs")) << "no run started";
  // A FIFO given as measured records is refused, not opened (opening one blocks until a writer comes).
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result r = gpubench("fit resnet50 --measured " + fifo.string(), "timeout 30");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// An unresolvable MASTER_ADDR printed LibTorch's exception (with its C++ frames): one line, exit 2, before any work.
TEST_F(HostileStoreTest, AnUnknownRendezvousHostIsOneClearLine) {
  const Result r = gpubench("run --config " + tiny() + " --out " + (dir_ / "r.json").string(),
                            "RANK=1 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT=29511");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("MASTER_ADDR='no-such-host.invalid'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Exception raised from"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));
}

// A `dataset make` that fails part-way (a file-size limit) or is interrupted leaves no `.part` file and no half
// data set.
TEST_F(HostileStoreTest, AFailedOrInterruptedDatasetLeavesNothing) {
  const fs::path out = dir_ / "data";
  const Result r = gpubench("dataset make --out " + out.string() + " --images 40 --classes 2 --threads 2",
                            "ulimit -f 64;");
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "the folder it made is gone";
  const std::string script = "( " + std::string(GPUBENCH_BINARY) + " dataset make --out " + out.string() +
                             " --images 200000 --threads 2 > /dev/null 2> " + (dir_ / "err").string() +
                             " & P=$!; for i in $(seq 300); do [ -d " + out.string() +
                             "/n00000000 ] && break; sleep 0.05; done; sleep 0.5; kill -INT $P; wait $P; echo $? > " +
                             (dir_ / "rc").string() + " )";
  ASSERT_EQ(std::system(script.c_str()), 0);
  EXPECT_EQ(slurp(dir_ / "rc"), "130\n") << slurp(dir_ / "err");
  EXPECT_FALSE(fs::exists(out)) << slurp(dir_ / "err");
}

// Two samples with the same name and labels make an invalid exposition (the same run in two files, exported).
TEST_F(HostileStoreTest, OpenMetricsExportNeverRepeatsASample) {
  const std::string b = (dir_ / "copy.json").string();
  fs::copy_file(kCommitted, b);
  const Result r = gpubench("export " + kCommitted + " " + b + " --per run --format openmetrics");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> samples;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(samples.insert(line.substr(0, line.rfind(' '))).second) << line;
  }
  EXPECT_FALSE(samples.empty());
}

// The store never reaches a child's command line (sweep's points get it in their environment): a password in its
// URL would be on every `ps` listing. (Killed while `run --db` waits for the store's lock, --quiet or not:
// nightly_test's ARunKilledWhileWaitingForTheStoresLockHasAlreadyNamedItsRecord.)
TEST_F(HostileStoreTest, TheStoreIsNoChildsArgument) {
  const fs::path store = dir_ / "secret-marker-store.db";
  ASSERT_EQ(gpubench("db add " + store.string() + " " + kCommitted).exit_code, 0);
  // Every process of the sweep, watched while it runs: no `run` child has the store on its command line. (The
  // patterns are bracketed so that this script's own command line does not match them.)
  const std::string watch = "( " + std::string(GPUBENCH_BINARY) + " sweep resnet50 --config " + tiny() +
                            " --epochs 1 --dataset-size 4 --batch-size 2,4 --out " + (dir_ / "sw").string() +
                            " --db " + store.string() + " -q > /dev/null 2>&1 & P=$!; seen=0; while kill -0 $P " +
                            "2>/dev/null; do for f in /proc/[0-9]*/cmdline; do cat $f 2>/dev/null | tr '\\0' ' ' | " +
                            "grep -q '[ ]run[ ].*secret[-]marker' && seen=1; done; sleep 0.02; done; wait $P; " +
                            "echo $? $seen > " + (dir_ / "sweep").string() + " )";
  std::system(watch.c_str());
  EXPECT_EQ(slurp(dir_ / "sweep"), "0 0\n") << "exit code, then 1 if a child had the store on its command line";
  EXPECT_EQ(stored_ids(gpubench("db list " + store.string() + " --format json")).size(), 3u)
      << "the first record and the two points";
}

// Ctrl-C during `db add`: the records added so far are whole, the console says how many, exit 130.
TEST_F(HostileStoreTest, InterruptedDbAddSaysWhatIsStored) {
  write_runs(dir_ / "runs", 600, std::string(GPUBENCH_FIXTURES) + "/records/main-job/main_resnet50_amp.json");
  const std::string store = (dir_ / "s.db").string();
  const std::string script = "( " + std::string(GPUBENCH_BINARY) + " db add " + store + " " + (dir_ / "runs").string() +
                             " > " + (dir_ / "out").string() + " 2> " + (dir_ / "err").string() +
                             " & P=$!; for i in $(seq 2000); do [ -s " + store + "-wal ] && break; sleep 0.005; done; " +
                             "kill -INT $P; wait $P; echo $? > " + (dir_ / "rc").string() + " )";
  ASSERT_EQ(std::system(script.c_str()), 0);
  const std::string out = slurp(dir_ / "out"), err = slurp(dir_ / "err");
  ASSERT_EQ(slurp(dir_ / "rc"), "130\n") << out << err;
  EXPECT_NE(out.find("interrupted"), std::string::npos) << out;
  const size_t n = stored_ids(gpubench("db list " + store + " --format json")).size();
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, 600u);
  EXPECT_NE(out.find("added " + std::to_string(n) + " record(s)"), std::string::npos) << out;
  // Adding again adds exactly the rest.
  const Result again = gpubench("db add " + store + " " + (dir_ / "runs").string());
  EXPECT_NE(again.out.find("added " + std::to_string(600 - n) + " record(s), " + std::to_string(n)), std::string::npos)
      << again.out;
}

}  // namespace gpubench
