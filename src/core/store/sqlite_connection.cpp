// The results store in a SQLite file (connection.h): the embedded default.

#include <sqlite3.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "connection.h"
#include "gpubench/core/store/store.hpp"

namespace gpubench {

bool store_available() { return true; }

namespace store {

namespace {

// How long a writer waits for another one (sqlite3_busy_timeout, and the retries of what it does not cover).
constexpr std::chrono::milliseconds kBusyWait{30000};

bool sqlite_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

/// `path` as a SQLite URI naming exactly that file: absolute, every byte but [A-Za-z0-9-._~/] percent-encoded, so a
/// name holding '?', '#', '%' or starting with "file:" or ":memory:" is a file name, never URI parameters.
std::string file_uri(const std::string& path) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).string();
  if (ec) abs = path;
  static const char* hex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const unsigned char c : abs) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri;
}

/// A reader that cannot write the file or its folder (a read-only mount, a store shipped with an artefact, another
/// user's file) cannot make the WAL's shared-memory file: it reads the file as immutable (no locks, no -shm).
bool cannot_write_beside(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  const fs::path dir = abs.has_parent_path() ? abs.parent_path() : fs::path(".");
  return ::access(path.c_str(), W_OK) != 0 || ::access(dir.c_str(), W_OK) != 0;
}

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(const std::string& path, bool read_only) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (read_only && !fs::exists(path, ec)) {
      throw std::runtime_error("results store " + path + " does not exist (reading commands never create one; "
                               "`gpubench db add` or `run --db` does)");
    }
    if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
      throw std::runtime_error("results store " + path + " is not a regular file");
    }
    empty_file_ = fs::file_size(path, ec) == 0 || ec;
    // Read-only: no creation, no WAL switch, no tables made; mode=ro holds even where the file is writable.
    open(file_uri(path) + (read_only ? (cannot_write_beside(path) ? "?mode=ro&immutable=1" : "?mode=ro") : "?mode=rwc"),
         read_only);
    if (read_only && !empty_file_) {
      // A WAL file this process cannot make the shared memory for ("attempt to write a readonly database", "unable
      // to open"): read it as immutable.
      const int rc = sqlite3_exec(db_, "SELECT COUNT(*) FROM sqlite_master", nullptr, nullptr, nullptr);
      const int primary = rc & 0xff;
      if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN) {
        sqlite3_close(db_);
        db_ = nullptr;
        open(file_uri(path) + "?mode=ro&immutable=1", true);
      }
    }
  }
  ~SqliteConnection() override { sqlite3_close(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  const std::string& name() const override { return path_; }

  std::vector<Row> query(const std::string& sql, const std::vector<Value>& args) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) fail("preparing a query");
    struct Finalize {
      sqlite3_stmt* s;
      ~Finalize() { sqlite3_finalize(s); }
    } finalize{stmt};
    for (size_t i = 0; i < args.size(); ++i) {
      const int at = static_cast<int>(i + 1);
      const Value& v = args[i];
      int rc = SQLITE_OK;
      if (const auto* s = std::get_if<std::string>(&v)) {
        rc = sqlite3_bind_text(stmt, at, s->c_str(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else if (const auto* n = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, at, *n);
      } else if (const auto* d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt, at, *d);
      } else {
        rc = sqlite3_bind_null(stmt, at);
      }
      if (rc != SQLITE_OK) fail("binding a value");
    }
    std::vector<Row> rows;
    const auto deadline = std::chrono::steady_clock::now() + kBusyWait;
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (sqlite_busy(rc) && rows.empty() && std::chrono::steady_clock::now() < deadline) {
        sqlite3_reset(stmt);  // not begun: run it again once the other connection is through
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (rc != SQLITE_ROW) fail("running a query");
      Row row;
      const int n = sqlite3_column_count(stmt);
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER: row.cells.emplace_back(int64_t{sqlite3_column_int64(stmt, c)}); break;
          case SQLITE_FLOAT: row.cells.emplace_back(sqlite3_column_double(stmt, c)); break;
          case SQLITE_NULL: row.cells.emplace_back(); break;
          default: {
            const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            row.cells.emplace_back(std::string(t, static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void script(const std::string& sql) override {
    char* err = nullptr;
    const auto deadline = std::chrono::steady_clock::now() + kBusyWait;
    int rc = SQLITE_OK;
    // Statements the busy timeout does not wait on (a file another writer is switching to WAL, or whose WAL it is
    // recovering, answers SQLITE_BUSY at once) wait here. The scripts are safe to run again: PRAGMAs, BEGIN
    // IMMEDIATE and COMMIT (which leaves the transaction open when busy), and DDL under the write lock.
    while (sqlite_busy(rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err)) &&
           std::chrono::steady_clock::now() < deadline) {
      sqlite3_free(err);
      err = nullptr;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (rc != SQLITE_OK) {
      const std::string why = err != nullptr ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw std::runtime_error("results store " + path_ + ": " + why);
    }
  }

  void begin_write(bool schema_change) override {
    if (schema_change && !writer_set_up_) {  // once per connection, before its first write
      script("PRAGMA journal_mode=WAL");
      script("PRAGMA foreign_keys=ON");
      writer_set_up_ = true;
    }
    script("BEGIN IMMEDIATE");  // the write lock up front: two writers queue instead of failing mid-transaction
  }

  void commit() override { script("COMMIT"); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

  int version() override { return static_cast<int>(query("PRAGMA user_version", {}).at(0).integer(0).value_or(0)); }
  void set_version(int version) override { script("PRAGMA user_version=" + std::to_string(version)); }

  bool has_table(const std::string& table) override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", {table}).empty();
  }
  bool has_column(const std::string& table, const std::string& column) override {
    for (const Row& r : query("SELECT name FROM pragma_table_info(?)", {table})) {
      if (r.text(0) == column) return true;
    }
    return false;
  }

  std::string schema() const override {
    return R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  added_utc TEXT NOT NULL,
  source TEXT NOT NULL,
  start_time_utc TEXT, status TEXT, model TEXT, device_name TEXT, device_type TEXT, precision TEXT,
  batch_size INTEGER, world_size INTEGER,
  driver_version TEXT, cuda_runtime_version TEXT, cudnn_version TEXT, libtorch_version TEXT, git_revision TEXT,
  hostname TEXT,
  scenario_json TEXT NOT NULL,      -- the comparable resolved scenario (compare.hpp)
  environment_json TEXT NOT NULL,
  record_json TEXT NOT NULL,        -- the whole record: nothing is lost
  identity_json TEXT,               -- the scenario identity (analysis/identity.hpp): what pairs runs
  busy_host TEXT                    -- why its host was busy while timed (record/host_activity.hpp), '' if quiet
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER,                    -- NULL: the run's value
  tag TEXT NOT NULL, value REAL NOT NULL, unit TEXT, better TEXT
);
CREATE INDEX IF NOT EXISTS metrics_by_tag ON metrics(tag, run_id);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs(model, start_time_utc);
)sql";
  }

  // json_extract gives a JSON boolean as the integer 1 or 0.
  Condition json_key_is(const std::string& column, const std::string& key, const std::string& value) const override {
    return {"CAST(json_extract(" + column + ", ?) AS TEXT) = ?",
            {"$." + key, value == "true" ? "1" : value == "false" ? "0" : value}};
  }

  std::string json_field(const std::string& column, const std::string& key) const override {
    return "CAST(json_extract(" + column + ", '$." + key + "') AS TEXT)";
  }

  std::string integrity(bool quick) override {
    // SQLite's own check. A run and its metrics are one transaction, so a killed writer cannot leave a run without
    // them; a run with no metrics at all (a failed run with no epochs) is a legitimate record, not damage (the store
    // fuzzer found that an old "runs without metrics" check called such a store damaged and refused to write it).
    const std::vector<Row> r = query(quick ? "PRAGMA quick_check" : "PRAGMA integrity_check", {});
    if (!r.empty() && r[0].text(0) != "ok") return (quick ? "quick check: " : "integrity check: ") + r[0].text(0);
    return "ok";
  }

  // No table of anyone's: a new or empty file, or one another writer is setting up right now (it has switched the
  // file to WAL, so it is no longer empty, but its tables are not committed yet).
  bool fresh() override { return empty_file_ || query("SELECT COUNT(*) FROM sqlite_master", {}).at(0).text(0) == "0"; }

 private:
  void open(const std::string& uri, bool read_only) {
    const int flags = SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX |
                      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(uri.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw std::runtime_error("results store " + path_ + ": cannot open: " + why);
    }
    sqlite3_busy_timeout(db_, static_cast<int>(kBusyWait.count()));  // concurrent CI jobs on one file queue
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("results store " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }
  std::string path_;
  sqlite3* db_ = nullptr;
  bool empty_file_ = false;
  bool writer_set_up_ = false;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path, bool read_only) {
  return std::make_unique<SqliteConnection>(path, read_only);
}

}  // namespace store
}  // namespace gpubench
