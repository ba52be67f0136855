#include "gpubench/core/store/store.hpp"

#include "gpubench/core/record/metric_catalog.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ctime>
#include <stdexcept>

#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {

bool store_available() { return true; }


namespace {

/// One prepared statement, finalised on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail("preparing a query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, double v) {
    check(sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, const std::optional<int64_t>& v) {
    check(v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
    return *this;
  }
  /// Ready to run again with new values.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  /// true while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("running a query");
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
  }
  std::optional<int64_t> int_or_null(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(stmt_, col);
  }
  std::optional<double> double_or_null(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail("binding a value");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("results store " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// The version of the tables; a store made by a later gpubench with another layout is refused, not misread.
// 1: the first; 2: runs.identity_json, the scenario identity that pairs runs (filled in for version-1 rows);
// 3: identity_json made again from each record (bert-base's and gpt2's `width` is `hidden` since 2026-12-04).
constexpr int kStoreVersion = 3;

const char* kSchema = R"sql(
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
  identity_json TEXT                -- the scenario identity (analysis/identity.hpp): what pairs runs
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER,                    -- NULL: the run's value
  tag TEXT NOT NULL, value REAL NOT NULL, unit TEXT, better TEXT
);
CREATE INDEX IF NOT EXISTS metrics_by_tag ON metrics(tag, run_id);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs(model, start_time_utc);
)sql";

}  // namespace

std::string record_fingerprint(const RunRecord& r) {
  const std::string text = nlohmann::json(r).dump();  // objects are key-sorted: canonical
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

bool table_has_column(sqlite3* db, const std::string& path, const std::string& table, const std::string& column) {
  Statement s(db, "PRAGMA table_info(" + table + ")", path);
  while (s.step()) {
    if (s.text(1) == column) return true;
  }
  return false;
}

}  // namespace

ResultsStore::ResultsStore(const std::string& path, Access access) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool read = access == Access::kRead;
  if (read && !fs::exists(path, ec)) {
    throw std::runtime_error("results store " + path + " does not exist (reading commands never create one; "
                             "`gpubench db add` or `run --db` does)");
  }
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    throw std::runtime_error("results store " + path + " is not a regular file");
  }
  // Read-only: no creation, no WAL switch, no tables made; the URI's mode=ro holds even where the file is writable.
  const std::string uri = "file:" + path + (read ? "?mode=ro" : "");
  const int flags = SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX |
                    (read ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(uri.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("results store " + path + ": cannot open: " + why);
  }
  sqlite3_busy_timeout(db_, 30000);  // concurrent CI jobs on one file wait for each other
  try {
    int version = 0;
    bool has_runs = false;
    bool empty_file = fs::file_size(path, ec) == 0 || ec;
    {
      Statement v(db_, "PRAGMA user_version", path_);
      if (v.step()) version = static_cast<int>(v.int_or_null(0).value_or(0));
      Statement tables(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'", path_);
      has_runs = tables.step();
    }
    if (version > kStoreVersion) {
      throw std::runtime_error("results store " + path + ": made by a newer gpubench (store version " +
                               std::to_string(version) + "); this one reads version " + std::to_string(kStoreVersion));
    }
    const bool ours = version >= 1 && has_runs && table_has_column(db_, path_, "runs", "record_json");
    if (!ours && !(access == Access::kWrite && empty_file)) {
      // A foreign SQLite file (or anything else) is left exactly as it was.
      throw std::runtime_error("results store " + path + ": not a gpubench results store (no runs table of ours)");
    }
    if (read) {
      // An older store's identities are made from its records as they are read (what migrating it would store).
      has_identity_ = version >= kStoreVersion && table_has_column(db_, path_, "runs", "identity_json");
      return;
    }
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA foreign_keys=ON");
    if (ours) {
      const std::string problem = integrity();
      if (problem != "ok") throw std::runtime_error("results store " + path + " is damaged: " + problem);
    }
    exec("BEGIN IMMEDIATE");
    exec(kSchema);
    if (ours && version < kStoreVersion) migrate(version);
    exec("PRAGMA user_version=" + std::to_string(kStoreVersion));
    exec("COMMIT");
    has_identity_ = true;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void ResultsStore::migrate(int from_version) {
  if (from_version < 3) {
    if (!table_has_column(db_, path_, "runs", "identity_json")) exec("ALTER TABLE runs ADD COLUMN identity_json TEXT");
    std::vector<std::pair<int64_t, std::string>> rows;
    {
      Statement s(db_, "SELECT id, record_json, source FROM runs", path_);
      while (s.step()) {
        const RunRecord r = parse_record(s.text(1), path_ + " (" + s.text(2) + ")");
        rows.emplace_back(s.int_or_null(0).value_or(0), scenario_identity(r).dump());
      }
    }
    Statement u(db_, "UPDATE runs SET identity_json = ? WHERE id = ?", path_);
    for (const auto& [id, identity] : rows) {
      u.reset();
      u.bind(1, identity).bind(2, id);
      u.step();
    }
  }
}

ResultsStore::~ResultsStore() { sqlite3_close(db_); }

void ResultsStore::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err != nullptr ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw std::runtime_error("results store " + path_ + ": " + why);
  }
}

bool ResultsStore::add(const RunRecord& r, const std::string& source) {
  const std::string fingerprint = record_fingerprint(r);
  exec("BEGIN IMMEDIATE");  // the write lock up front: two writers queue instead of failing mid-transaction
  try {
    Statement insert(db_,
                     "INSERT OR IGNORE INTO runs (fingerprint, added_utc, source, start_time_utc, status, model, "
                     "device_name, device_type, precision, batch_size, world_size, driver_version, "
                     "cuda_runtime_version, cudnn_version, libtorch_version, git_revision, hostname, scenario_json, "
                     "environment_json, record_json, identity_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     path_);
    const EnvironmentRecord& e = r.environment;
    insert.bind(1, fingerprint).bind(2, utc_now_iso8601()).bind(3, source).bind(4, e.start_time_utc).bind(5, to_string(r.status));
    insert.bind(6, r.scenario.model).bind(7, e.device_name).bind(8, e.device_type);
    insert.bind(9, r.precision.resolved.empty() ? r.scenario.precision : r.precision.resolved);
    insert.bind(10, r.scenario.batch_size).bind(11, int64_t{r.distributed ? r.distributed->world_size : 1});
    insert.bind(12, nvidia_driver_of(r)).bind(13, e.cuda_runtime_version).bind(14, e.cudnn_version);
    insert.bind(15, e.libtorch_version).bind(16, e.git_revision).bind(17, e.hostname);
    insert.bind(18, comparable_scenario(r.scenario).dump()).bind(19, nlohmann::json(e).dump());
    insert.bind(20, json_text(r, -1)).bind(21, scenario_identity(r).dump());
    insert.step();
    if (sqlite3_changes(db_) == 0) {  // already stored
      exec("COMMIT");
      return false;
    }
    const int64_t id = sqlite3_last_insert_rowid(db_);
    Statement metric(db_, "INSERT INTO metrics (run_id, epoch, tag, value, unit, better) VALUES (?,?,?,?,?,?)", path_);
    auto put = [&](const std::optional<int64_t>& epoch, const Metric& m) {  // one prepared statement, reset per row
      metric.reset();
      metric.bind(1, id).bind(2, epoch).bind(3, m.tag).bind(4, m.value).bind(5, m.unit).bind(6, to_string(m.better));
      metric.step();
    };
    for (const auto& m : run_metrics(r)) put(std::nullopt, m);
    for (const auto& ep : r.epochs) {
      for (const auto& m : epoch_metrics(r, ep)) put(ep.index, m);
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // nothing half-written stays
    throw;
  }
  // The store as it is now, after the transaction: a damaged page is reported, not a silent "added".
  Statement check(db_, "PRAGMA quick_check", path_);
  if (check.step() && check.text(0) != "ok") {
    throw std::runtime_error("results store " + path_ + " is damaged after adding a record: " + check.text(0));
  }
  return true;
}

std::vector<HistoryRow> ResultsStore::history(const HistoryQuery& q) const {
  std::string sql =
      "SELECT r.id, r.start_time_utc, r.model, r.device_name, r.precision, r.status, r.driver_version, "
      "r.cuda_runtime_version, r.cudnn_version, r.libtorch_version, r.git_revision, r.source, r.batch_size, m.value, "
      "m.unit, m.better, r.scenario_json, " +
      std::string(has_identity_ ? "r.identity_json" : "r.record_json") +
      " FROM runs r LEFT JOIN metrics m ON m.run_id = r.id AND m.epoch IS NULL AND m.tag = ? WHERE 1=1";
  std::vector<std::string> args{q.metric};
  if (!q.model.empty()) {
    sql += " AND r.model = ?";
    args.push_back(q.model);
  }
  if (!q.since.empty()) {
    sql += " AND r.start_time_utc >= ?";
    args.push_back(q.since);
  }
  for (const auto& [key, value] : q.scenario) {
    // Scenario values as their JSON text: 256, "bf16" -> bf16, true.
    sql += " AND CAST(json_extract(r.scenario_json, ?) AS TEXT) = ?";
    args.push_back("$." + key);
    args.push_back(value == "true" ? "1" : value == "false" ? "0" : value);
  }
  sql += " ORDER BY r.start_time_utc, r.id";
  Statement s(db_, sql, path_);
  for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
  std::vector<HistoryRow> rows;
  while (s.step()) {
    HistoryRow h;
    h.id = s.int_or_null(0).value_or(0);
    h.start_time_utc = s.text(1);
    h.model = s.text(2);
    h.device_name = s.text(3);
    h.precision = s.text(4);
    h.status = s.text(5);
    h.driver_version = s.text(6);
    h.cuda_runtime_version = s.text(7);
    h.cudnn_version = s.text(8);
    h.libtorch_version = s.text(9);
    h.git_revision = s.text(10);
    h.source = s.text(11);
    h.batch_size = s.int_or_null(12);
    h.value = s.double_or_null(13);
    h.unit = s.text(14);
    h.better = s.text(15);
    h.scenario_json = s.text(16);
    // A version-1 store opened read-only has no identity column: it is derived from the record, as migration would.
    h.identity_json = has_identity_ ? s.text(17) : scenario_identity(parse_record(s.text(17), path_)).dump();
    rows.push_back(std::move(h));
  }
  return rows;
}

RunRecord ResultsStore::record(int64_t id) const {
  Statement s(db_, "SELECT record_json, source FROM runs WHERE id = ?", path_);
  s.bind(1, id);
  if (!s.step()) throw std::runtime_error("results store " + path_ + ": no run " + std::to_string(id));
  return parse_record(s.text(0), path_ + " run " + std::to_string(id) + " (" + s.text(1) + ")");
}

std::vector<LoadedRecord> ResultsStore::records() const {
  std::vector<std::pair<int64_t, std::string>> ids;
  {
    Statement s(db_, "SELECT id, source FROM runs ORDER BY start_time_utc, id", path_);
    while (s.step()) ids.emplace_back(s.int_or_null(0).value_or(0), s.text(1));
  }
  std::vector<LoadedRecord> out;
  out.reserve(ids.size());
  for (const auto& [id, source] : ids) {
    out.push_back(LoadedRecord{path_ + ":" + std::to_string(id) + " (" + source + ")", record(id)});
  }
  return out;
}

int64_t ResultsStore::remove(const std::vector<int64_t>& ids) {
  exec("BEGIN IMMEDIATE");
  try {
    Statement exists(db_, "SELECT 1 FROM runs WHERE id = ?", path_);
    Statement metrics(db_, "DELETE FROM metrics WHERE run_id = ?", path_);
    Statement run(db_, "DELETE FROM runs WHERE id = ?", path_);
    int64_t removed = 0;
    for (const int64_t id : ids) {
      exists.reset();
      exists.bind(1, id);
      if (!exists.step()) throw std::runtime_error("results store " + path_ + ": no run " + std::to_string(id));
      metrics.reset();
      metrics.bind(1, id);
      metrics.step();
      run.reset();
      run.bind(1, id);
      run.step();
      removed += sqlite3_changes(db_);
    }
    exec("COMMIT");
    return removed;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // all or none
    throw;
  }
}

std::vector<LoadedRecord> ResultsStore::baseline_for(const RunRecord& candidate, int last_n,
                                                     const std::vector<const RunRecord*>& night) const {
  // The earliest start among the candidate and its night, and every one of their fingerprints.
  std::string start = candidate.environment.start_time_utc;
  std::vector<std::string> excluded{record_fingerprint(candidate)};
  for (const RunRecord* r : night) {
    const std::string& t = r->environment.start_time_utc;
    if (!t.empty() && (start.empty() || t < start)) start = t;
    excluded.push_back(record_fingerprint(*r));
  }
  Statement s(db_,
              "SELECT id, source, fingerprint, " + std::string(has_identity_ ? "identity_json" : "record_json") +
                  " FROM runs WHERE model = ? AND status = 'ok' AND (? = '' OR start_time_utc < ?) "
                  "ORDER BY start_time_utc DESC, id DESC",
              path_);
  s.bind(1, candidate.scenario.model).bind(2, start).bind(3, start);
  const std::string identity = scenario_identity(candidate).dump();
  std::vector<std::pair<int64_t, std::string>> ids;
  while (s.step() && static_cast<int>(ids.size()) < last_n) {
    if (std::find(excluded.begin(), excluded.end(), s.text(2)) != excluded.end()) continue;
    const std::string theirs = has_identity_ ? s.text(3) : scenario_identity(parse_record(s.text(3), path_)).dump();
    if (theirs == identity) ids.emplace_back(s.int_or_null(0).value_or(0), s.text(1));
  }
  std::vector<LoadedRecord> out;
  for (const auto& [id, source] : ids) {
    out.push_back(LoadedRecord{path_ + ":" + std::to_string(id) + " (" + source + ")", record(id)});
  }
  return out;
}

std::vector<std::string> ResultsStore::metric_tags() const {
  Statement s(db_, "SELECT DISTINCT tag FROM metrics WHERE epoch IS NULL ORDER BY tag", path_);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::string ResultsStore::integrity() const {
  // SQLite's own check. A run and its metrics are one transaction, so a killed writer cannot leave a run without
  // them; a run with no metrics at all (a failed run with no epochs) is a legitimate record, not damage (the store
  // fuzzer found that the old "runs without metrics" check called such a store damaged and refused to write it).
  Statement s(db_, "PRAGMA integrity_check", path_);
  if (s.step() && s.text(0) != "ok") return "integrity check: " + s.text(0);
  return "ok";
}

int64_t ResultsStore::count() const {
  Statement s(db_, "SELECT COUNT(*) FROM runs", path_);
  s.step();
  return s.int_or_null(0).value_or(0);
}

}  // namespace gpubench
