#pragma once
// The results store: run records in a SQLite file (one machine's, the default) or a PostgreSQL database (a fleet's,
// named by a postgresql:// URL), for CI jobs that run every night and ask for history. Both hold the same tables and
// answer the same way (one store, two connections: src/core/store/connection.h). Each record is stored whole (its
// JSON) beside the columns history needs (identity, environment, per-run and per-epoch metrics), so nothing is lost.
// Adding the same record twice stores it once. Writers may run concurrently (SQLite: WAL, a busy timeout, one
// immediate transaction per record; PostgreSQL: one transaction per record, duplicates settled by the unique
// fingerprint), and a crash or a lost server mid-write leaves the store as it was.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/record/run_record.hpp"
#include "gpubench/core/store/location.hpp"

namespace gpubench {

namespace store {
class Connection;
}

/// The largest record `db add` stores (the store keeps the whole JSON): a 24-hour sustained run's is about 5 MiB, and
/// what one import holds in memory stays a few hundred MiB.
inline constexpr size_t kMaxStoredRecordBytes = size_t{32} << 20;

/// Whether this build has the store (SQLite was found at build time).
bool store_available();
/// Whether this build can open postgresql:// stores (libpq was found at build time).
bool postgres_store_available();

struct HistoryQuery {
  std::string model;                              ///< empty = any
  std::map<std::string, std::string> scenario;    ///< resolved scenario key -> value, e.g. batch_size -> 256
  std::string metric = kThroughputTag;            ///< the run-level metric to list
  std::string since;                              ///< ISO 8601 date or time; runs that started at or after it
};

struct HistoryRow {
  int64_t id = 0;
  std::string start_time_utc, model, device_name, precision, status, driver_version, cuda_runtime_version,
      cudnn_version, libtorch_version, git_revision, source;
  std::optional<int64_t> batch_size;
  std::optional<double> value;  ///< the metric's run-level value (unset when the run has none, e.g. failed)
  std::string unit, better;     ///< the metric's unit hint and direction ("higher", "lower", "neither")
  std::string scenario_json;    ///< the comparable resolved scenario
  std::string identity_json;    ///< the run's scenario identity (analysis/identity.hpp): runs with equal ones are one series
  std::string hostname;         ///< the machine it ran on
  std::optional<int64_t> repeat;  ///< its repeat index (1 for a single run)
  std::string busy_host;        ///< why its host was busy while timed (busy_host_evidence), "" when it was quiet
};

class ResultsStore {
 public:
  /// kRead: an existing gpubench store, opened read-only (never created, never changed: no WAL switch, no tables
  /// made; a PostgreSQL session is also read-only on the server's side); a missing file, a database without the
  /// store's tables or one that is not a gpubench store is refused untouched. kWrite: opened or created for adding,
  /// its integrity checked first.
  enum class Access { kRead, kWrite };
  /// `location`: a SQLite file, or a postgresql:// URL whose credentials come from libpq's own sources (the URL,
  /// PGPASSWORD, ~/.pgpass, a service file) and whose TLS is what libpq negotiates (sslmode). Throws
  /// std::runtime_error naming the file or the URL without its password (StoreLocationError for a bad name).
  explicit ResultsStore(const StoreLocation& location, Access access = Access::kWrite);
  /// The same, parsing `location` first (StoreLocation::parse).
  explicit ResultsStore(const std::string& location, Access access = Access::kWrite);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  /// Stores `record` (read from `source`); false when the same record is already there. The store's integrity is
  /// checked after the transaction; a problem is thrown (the record is then not counted as added).
  bool add(const RunRecord& record, const std::string& source);
  /// The metric tags the stored runs hold (run level), for filters and messages.
  std::vector<std::string> metric_tags() const;
  /// Runs matching `q`, oldest first.
  std::vector<HistoryRow> history(const HistoryQuery& q) const;
  /// The stored record with `id`.
  RunRecord record(int64_t id) const;
  /// Every stored record, oldest first, each named "STORE:ID (its source)".
  std::vector<LoadedRecord> records() const;
  /// Removes the runs `ids` and their metrics in one transaction: all or none. Throws, changing nothing, when an id
  /// is not stored. Returns how many were removed.
  int64_t remove(const std::vector<int64_t>& ids);
  /// The baseline for `candidate`: the last `last_n` finished runs (status ok) of the same scenario identity (its GPU
  /// model included; the identity keys in `ignore` left out, as compare --ignore pairs), started before it and before
  /// every run of `night` (the other candidates of its scenario: a night's repeats are never each other's baseline),
  /// newest first; no candidate (same fingerprint) is part of it. When no run has its identity, the newest finished run
  /// of its model started before it (one), so that compare names the keys that differ whatever else it was given;
  /// empty when the store has no earlier finished run of the model.
  std::vector<LoadedRecord> baseline_for(const RunRecord& candidate, int last_n,
                                         const std::vector<const RunRecord*>& night = {},
                                         const std::vector<std::string>& ignore = {}) const;
  int64_t count() const;
  /// "ok", or what the database's integrity check found (a run and its metrics are one transaction: never
  /// half-written).
  std::string integrity() const;
  /// The file, or the URL without its password: what messages and record names call this store.
  const std::string& name() const;

 private:
  void migrate(int from_version);
  std::vector<LoadedRecord> loaded(const std::vector<std::pair<int64_t, std::string>>& ids) const;
  std::unique_ptr<store::Connection> db_;
  bool has_identity_ = false;  ///< the runs table has identity_json (store version 2)
};

/// A stable 64-bit fingerprint (FNV-1a) of a record's canonical JSON: the same record always gets the same one.
std::string record_fingerprint(const RunRecord& r);

}  // namespace gpubench
