// The results store's logic, once for both databases (connection.h holds what differs between SQLite and PostgreSQL).

#include "gpubench/core/store/store.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "connection.h"

namespace gpubench {

namespace {

// The version of the tables; a store made by a later gpubench with another layout is refused, not misread.
// 1: the first; 2: runs.identity_json, the scenario identity that pairs runs (filled in for version-1 rows);
// 3: identity_json made again from each record (bert-base's and gpt2's `width` is `hidden` since 2026-12-04);
// 4: made again (a folder's data is its files, not its path, its workers or decode: auto's choice; 2026-12-07).
constexpr int kStoreVersion = 4;

// Metric rows per INSERT: a record's metrics travel in a few statements (one round trip each to a PostgreSQL server),
// far below both engines' parameter limits (SQLite 32,766; PostgreSQL 65,535) at six values a row.
constexpr size_t kMetricRowsPerInsert = 400;

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

ResultsStore::ResultsStore(const std::string& location, Access access)
    : ResultsStore(StoreLocation::parse(location), access) {}

ResultsStore::ResultsStore(const StoreLocation& location, Access access) {
  const bool read = access == Access::kRead;
  db_ = location.is_postgres() ? store::open_postgres(location, read) : store::open_sqlite(location.path(), read);
  const std::string& name = db_->name();
  bool in_transaction = false;
  try {
    // Whether a writer may set the store up, asked before its version: another writer makes the tables and sets the
    // version in one transaction, so tables seen here mean a version seen below (asked the other way round, a
    // writer that saw no version and then another writer's tables called the new store foreign).
    const bool fresh = db_->fresh();
    const int version = db_->version();
    if (version > kStoreVersion) {
      throw std::runtime_error("results store " + name + ": made by a newer gpubench (store version " +
                               std::to_string(version) + "); this one reads version " + std::to_string(kStoreVersion));
    }
    const bool ours = version >= 1 && db_->has_table("runs") && db_->has_column("runs", "record_json");
    if (!ours && read && fresh) {
      throw std::runtime_error("results store " + name + ": no gpubench results store here yet (reading commands "
                               "never make one; `gpubench db add` or `run --db` does)");
    }
    if (!ours && !(fresh && !read)) {
      // A foreign file or database (or anything else) is left exactly as it was.
      throw std::runtime_error("results store " + name + ": not a gpubench results store (no runs table of ours)");
    }
    if (read) {
      // An older store's identities are made from its records as they are read (what migrating it would store).
      has_identity_ = version >= kStoreVersion && db_->has_column("runs", "identity_json");
      return;
    }
    if (ours) {
      const std::string problem = db_->integrity(false);
      if (problem != "ok") throw std::runtime_error("results store " + name + " is damaged: " + problem);
    }
    db_->begin_write(true);
    in_transaction = true;
    const int now = db_->version();  // another writer may have set it up or migrated it while this one waited
    if (now != kStoreVersion) {
      db_->script(db_->schema());
      if (now >= 1) migrate(now);
      db_->set_version(kStoreVersion);
    }
    db_->commit();
    has_identity_ = true;
  } catch (...) {
    if (in_transaction) db_->rollback();
    throw;
  }
}

void ResultsStore::migrate(int from_version) {
  if (from_version < kStoreVersion) {
    if (!db_->has_column("runs", "identity_json")) db_->script("ALTER TABLE runs ADD COLUMN identity_json TEXT");
    if (!db_->has_column("runs", "busy_host")) db_->script("ALTER TABLE runs ADD COLUMN busy_host TEXT");
    for (const store::Row& row : db_->query("SELECT id, record_json, source FROM runs")) {
      const RunRecord r = parse_record(row.text(1), name() + " (" + row.text(2) + ")");
      db_->query("UPDATE runs SET identity_json = ?, busy_host = ? WHERE id = ?",
                 {scenario_identity(r).dump(), busy_host_evidence(r), row.integer(0).value_or(0)});
    }
  }
}

ResultsStore::~ResultsStore() = default;

const std::string& ResultsStore::name() const { return db_->name(); }

bool ResultsStore::add(const RunRecord& r, const std::string& source) {
  const EnvironmentRecord& e = r.environment;
  const std::vector<store::Value> run_values{
      record_fingerprint(r), utc_now_iso8601(), source, e.start_time_utc, to_string(r.status), r.scenario.model,
      e.device_name, e.device_type, r.precision.resolved.empty() ? r.scenario.precision : r.precision.resolved,
      r.scenario.batch_size ? store::Value{*r.scenario.batch_size} : store::Value{}, int64_t{r.distributed ? r.distributed->world_size : 1}, nvidia_driver_of(r),
      e.cuda_runtime_version, e.cudnn_version, e.libtorch_version, e.git_revision, e.hostname,
      comparable_scenario(r.scenario).dump(), nlohmann::json(e).dump(), json_text(r, -1),
      scenario_identity(r).dump(), busy_host_evidence(r)};
  std::vector<std::pair<std::optional<int64_t>, Metric>> metrics;
  for (const auto& m : run_metrics(r)) metrics.emplace_back(std::nullopt, m);
  for (const auto& ep : r.epochs) {
    for (const auto& m : epoch_metrics(r, ep)) metrics.emplace_back(ep.index, m);
  }
  db_->begin_write(false);  // SQLite takes the write lock up front: two writers queue instead of failing mid-way
  try {
    // The unique fingerprint settles duplicates, also between concurrent writers: the second inserts nothing.
    const std::vector<store::Row> inserted = db_->query(
        "INSERT INTO runs (fingerprint, added_utc, source, start_time_utc, status, model, device_name, device_type, "
        "precision, batch_size, world_size, driver_version, cuda_runtime_version, cudnn_version, libtorch_version, "
        "git_revision, hostname, scenario_json, environment_json, record_json, identity_json, busy_host) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (fingerprint) DO NOTHING RETURNING id",
        run_values);
    if (inserted.empty()) {  // already stored
      db_->commit();
      return false;
    }
    const int64_t id = inserted.front().integer(0).value_or(0);
    for (size_t first = 0; first < metrics.size(); first += kMetricRowsPerInsert) {
      const size_t last = std::min(metrics.size(), first + kMetricRowsPerInsert);
      std::string sql = "INSERT INTO metrics (run_id, epoch, tag, value, unit, better) VALUES ";
      std::vector<store::Value> args;
      for (size_t i = first; i < last; ++i) {
        const auto& [epoch, m] = metrics[i];
        sql += i == first ? "(?,?,?,?,?,?)" : ",(?,?,?,?,?,?)";
        args.insert(args.end(), {id, epoch ? store::Value{*epoch} : store::Value{}, m.tag, m.value, m.unit,
                                 to_string(m.better)});
      }
      db_->query(sql, args);
    }
    db_->commit();
  } catch (...) {
    db_->rollback();  // nothing half-written stays
    throw;
  }
  // The store as it is now, after the transaction: a damaged page is reported, not a silent "added".
  const std::string problem = db_->integrity(true);
  if (problem != "ok") throw std::runtime_error("results store " + name() + " is damaged after adding a record: " + problem);
  return true;
}

std::vector<HistoryRow> ResultsStore::history(const HistoryQuery& q) const {
  std::string sql =
      "SELECT r.id, r.start_time_utc, r.model, r.device_name, r.precision, r.status, r.driver_version, "
      "r.cuda_runtime_version, r.cudnn_version, r.libtorch_version, r.git_revision, r.source, r.batch_size, m.value, "
      "m.unit, m.better, r.scenario_json, " +
      std::string(has_identity_ ? "r.identity_json" : "r.record_json") + ", r.hostname, " +
      db_->json_field("r.record_json", "repeat_index") + (has_identity_ ? ", r.busy_host" : "") +
      " FROM runs r LEFT JOIN metrics m ON m.run_id = r.id AND m.epoch IS NULL AND m.tag = ? WHERE 1=1";
  std::vector<store::Value> args{q.metric};
  if (!q.model.empty()) {
    sql += " AND r.model = ?";
    args.emplace_back(q.model);
  }
  if (!q.since.empty()) {
    sql += " AND r.start_time_utc >= ?";
    args.emplace_back(q.since);
  }
  for (const auto& [key, value] : q.scenario) {
    // Scenario values as their JSON text: 256, "bf16" -> bf16, true.
    const store::Connection::Condition c = db_->json_key_is("r.scenario_json", key, value);
    sql += " AND " + c.sql;
    args.insert(args.end(), c.args.begin(), c.args.end());
  }
  sql += " ORDER BY r.start_time_utc, r.id";
  std::vector<HistoryRow> rows;
  for (const store::Row& s : db_->query(sql, args)) {
    HistoryRow h;
    h.id = s.integer(0).value_or(0);
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
    h.batch_size = s.integer(12);
    h.value = s.real(13);
    h.unit = s.text(14);
    h.better = s.text(15);
    h.scenario_json = s.text(16);
    // An older store opened read-only has neither column of today: both are derived from the record, as migration
    // would.
    if (has_identity_) {
      h.identity_json = s.text(17);
      h.busy_host = s.text(20);
    } else {
      const RunRecord r = parse_record(s.text(17), name());
      h.identity_json = scenario_identity(r).dump();
      h.busy_host = busy_host_evidence(r);
    }
    h.hostname = s.text(18);
    const std::string repeat = s.text(19);
    if (!repeat.empty() && repeat.find_first_not_of("0123456789") == std::string::npos && repeat.size() < 10) {
      h.repeat = std::stoll(repeat);
    }
    rows.push_back(std::move(h));
  }
  return rows;
}

RunRecord ResultsStore::record(int64_t id) const {
  const std::vector<store::Row> rows = db_->query("SELECT record_json, source FROM runs WHERE id = ?", {id});
  if (rows.empty()) throw std::runtime_error("results store " + name() + ": no run " + std::to_string(id));
  return parse_record(rows[0].text(0), name() + " run " + std::to_string(id) + " (" + rows[0].text(1) + ")");
}

std::vector<LoadedRecord> ResultsStore::loaded(const std::vector<std::pair<int64_t, std::string>>& ids) const {
  std::vector<LoadedRecord> out;
  out.reserve(ids.size());
  for (const auto& [id, source] : ids) {
    out.push_back(LoadedRecord{name() + ":" + std::to_string(id) + " (" + source + ")", record(id)});
  }
  return out;
}

std::vector<LoadedRecord> ResultsStore::records() const {
  std::vector<std::pair<int64_t, std::string>> ids;
  for (const store::Row& row : db_->query("SELECT id, source FROM runs ORDER BY start_time_utc, id")) {
    ids.emplace_back(row.integer(0).value_or(0), row.text(1));
  }
  return loaded(ids);
}

int64_t ResultsStore::remove(const std::vector<int64_t>& ids) {
  db_->begin_write(false);
  try {
    int64_t removed = 0;
    for (const int64_t id : ids) {
      if (db_->query("SELECT 1 FROM runs WHERE id = ?", {id}).empty()) {
        throw std::runtime_error("results store " + name() + ": no run " + std::to_string(id));
      }
      db_->query("DELETE FROM metrics WHERE run_id = ?", {id});
      removed += static_cast<int64_t>(db_->query("DELETE FROM runs WHERE id = ? RETURNING id", {id}).size());
    }
    db_->commit();
    return removed;
  } catch (...) {
    db_->rollback();  // all or none
    throw;
  }
}

std::vector<LoadedRecord> ResultsStore::baseline_for(const RunRecord& candidate, int last_n,
                                                     const std::vector<const RunRecord*>& night,
                                                     const std::vector<std::string>& ignore) const {
  // The earliest start among the candidate and its night, and every one of their fingerprints.
  std::string start = candidate.environment.start_time_utc;
  std::vector<std::string> excluded{record_fingerprint(candidate)};
  for (const RunRecord* r : night) {
    const std::string& t = r->environment.start_time_utc;
    if (!t.empty() && (start.empty() || t < start)) start = t;
    excluded.push_back(record_fingerprint(*r));
  }
  const std::vector<store::Row> rows = db_->query(
      "SELECT id, source, fingerprint, " + std::string(has_identity_ ? "identity_json" : "record_json") +
          " FROM runs WHERE model = ? AND status = 'ok' AND (? = '' OR start_time_utc < ?) "
          "ORDER BY start_time_utc DESC, id DESC",
      {candidate.scenario.model, start, start});
  const nlohmann::json identity = without_keys(scenario_identity(candidate), ignore);
  std::vector<std::pair<int64_t, std::string>> ids, nearest;
  for (const store::Row& row : rows) {
    if (static_cast<int>(ids.size()) >= last_n) break;
    if (std::find(excluded.begin(), excluded.end(), row.text(2)) != excluded.end()) continue;
    const nlohmann::json theirs = without_keys(
        has_identity_ ? nlohmann::json::parse(row.text(3), nullptr, false)
                      : scenario_identity(parse_record(row.text(3), name())),
        ignore);
    if (theirs == identity) {
      ids.emplace_back(row.integer(0).value_or(0), row.text(1));
    } else if (nearest.empty()) {
      nearest.emplace_back(row.integer(0).value_or(0), row.text(1));  // the newest of its model
    }
  }
  return loaded(ids.empty() ? nearest : ids);
}

std::vector<std::string> ResultsStore::metric_tags() const {
  std::vector<std::string> out;
  for (const store::Row& row : db_->query("SELECT DISTINCT tag FROM metrics WHERE epoch IS NULL ORDER BY tag")) {
    out.push_back(row.text(0));
  }
  return out;
}

std::string ResultsStore::integrity() const { return db_->integrity(false); }

int64_t ResultsStore::count() const { return db_->query("SELECT COUNT(*) FROM runs").front().integer(0).value_or(0); }

namespace store {

std::string Row::text(size_t i) const {
  const Value& v = cells.at(i);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&v)) return nlohmann::json(*d).dump();
  return {};
}

std::optional<int64_t> Row::integer(size_t i) const {
  const Value& v = cells.at(i);
  if (const auto* n = std::get_if<int64_t>(&v)) return *n;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return std::nullopt;
}

std::optional<double> Row::real(size_t i) const {
  const Value& v = cells.at(i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
  if (const auto* s = std::get_if<std::string>(&v)) return std::stod(*s);
  return std::nullopt;
}

}  // namespace store

}  // namespace gpubench
