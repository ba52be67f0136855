// The results store in a PostgreSQL database (connection.h): a fleet's shared store, named by a postgresql:// URL.
// Credentials and TLS are libpq's: the URL, PGPASSWORD, ~/.pgpass, a service file, sslmode. The password never
// appears in a message: libpq gets the URL's parts as keywords (store/location.hpp parsed it; libpq never parses or
// echoes the URL), name() is the URL without passwords, and libpq's own messages are scrubbed of every secret.

#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include "connection.h"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/store/store.hpp"

namespace gpubench {

bool postgres_store_available() { return true; }

namespace store {

namespace {

// pg_advisory_xact_lock's key for setting up and migrating the tables: writers opening a new store queue on it.
constexpr long long kSchemaLockKey = 0x67707562656e6368LL;  // "gpubench"

// Type OIDs (catalog/pg_type.h) of the columns the store reads: integers and floating-point numbers come back typed.
constexpr Oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701, kNumeric = 1700;

/// `sql` with its `?` placeholders numbered as PostgreSQL's $1, $2, ... (none inside quoted literals or names).
std::string numbered_placeholders(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  char quote = 0;
  int n = 0;
  for (const char c : sql) {
    if (quote != 0) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

std::string pg_param_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(const StoreLocation& location, bool read_only) : name_(location.display()) {
    // The URL's own settings win over these defaults (they come after them: libpq keeps a keyword's last value). A
    // server that cannot be reached fails in 10 s; one that vanishes mid-query (a cut link, a host gone: no reset
    // ever arrives) fails once 60 s of sent data go unacknowledged, or after 30 + 3 x 10 s of silence on an idle
    // connection, instead of the kernel's ~15-minute retransmission limit.
    std::vector<std::pair<std::string, std::string>> settings{
        {"connect_timeout", "10"}, {"client_encoding", "UTF8"}, {"fallback_application_name", "gpubench"},
        {"tcp_user_timeout", "60000"}, {"keepalives_idle", "30"}, {"keepalives_interval", "10"},
        {"keepalives_count", "3"}};
    for (const auto& kv : location.connection_parameters()) settings.push_back(kv);
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : settings) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), 0);  // 0: a dbname is a name, never a second URL
    if (conn_ == nullptr) throw std::runtime_error("results store " + name_ + ": cannot connect: out of memory");
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = libpq_message();
      PQfinish(conn_);
      throw std::runtime_error("results store " + name_ + ": cannot connect: " + why);
    }
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // "already exists, skipping" is not news
    // A reading command's session cannot write even by mistake: the server refuses it.
    try {
      if (read_only) script("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
    } catch (...) {
      PQfinish(conn_);
      throw;
    }
  }
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  const std::string& name() const override { return name_; }

  std::vector<Row> query(const std::string& sql, const std::vector<Value>& args) override {
    std::vector<std::string> texts(args.size());
    std::vector<const char*> params(args.size(), nullptr);
    for (size_t i = 0; i < args.size(); ++i) {
      const Value& v = args[i];
      if (const auto* s = std::get_if<std::string>(&v)) {
        texts[i] = *s;
      } else if (const auto* n = std::get_if<int64_t>(&v)) {
        texts[i] = std::to_string(*n);
      } else if (const auto* d = std::get_if<double>(&v)) {
        texts[i] = pg_param_text(*d);
      } else {
        continue;  // NULL
      }
      params[i] = texts[i].c_str();
    }
    Result res(PQexecParams(conn_, numbered_placeholders(sql).c_str(), static_cast<int>(params.size()), nullptr,
                            params.data(), nullptr, nullptr, 0));
    check(res.get(), "running a query");
    std::vector<Row> rows;
    const int n_rows = PQntuples(res.get()), n_cols = PQnfields(res.get());
    rows.reserve(static_cast<size_t>(n_rows));
    for (int r = 0; r < n_rows; ++r) {
      Row row;
      for (int c = 0; c < n_cols; ++c) {
        if (PQgetisnull(res.get(), r, c) != 0) {
          row.cells.emplace_back();
          continue;
        }
        const char* t = PQgetvalue(res.get(), r, c);
        switch (PQftype(res.get(), c)) {
          case kInt8: case kInt4: case kInt2: row.cells.emplace_back(int64_t{std::strtoll(t, nullptr, 10)}); break;
          case kFloat8: case kFloat4: case kNumeric: row.cells.emplace_back(std::strtod(t, nullptr)); break;
          case kBool: row.cells.emplace_back(int64_t{t[0] == 't' ? 1 : 0}); break;
          default: row.cells.emplace_back(std::string(t, static_cast<size_t>(PQgetlength(res.get(), r, c))));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void script(const std::string& sql) override {
    Result res(PQexec(conn_, sql.c_str()));
    check(res.get(), "running a statement");
  }

  void begin_write(bool schema_change) override {
    // Writers setting up (or migrating) one store queue on a session-level advisory lock taken before their
    // transaction starts, so the transaction's first look at the catalog sees the tables the writer before it made
    // (taken inside it, a waiter went on to make them again: a deadlock with that writer's first inserts). Adding
    // records needs no lock: the unique fingerprint settles two writers adding the same record.
    if (schema_change) {
      script("SELECT pg_advisory_lock(" + std::to_string(kSchemaLockKey) + ")");
      schema_locked_ = true;
    }
    script("BEGIN");
  }

  void commit() override {
    script("COMMIT");
    unlock_schema();
  }

  void rollback() noexcept override {
    if (PQstatus(conn_) != CONNECTION_OK) return;
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
    try {
      unlock_schema();
    } catch (...) {
      // The lock goes with the session when the connection closes.
    }
  }

  int version() override {
    if (!has_table("gpubench_store")) return 0;
    return static_cast<int>(query("SELECT MAX(version) FROM gpubench_store", {}).at(0).integer(0).value_or(0));
  }
  void set_version(int version) override {
    query("DELETE FROM gpubench_store", {});
    query("INSERT INTO gpubench_store (version) VALUES (?)", {int64_t{version}});
  }

  bool has_table(const std::string& table) override {
    return !query("SELECT 1 WHERE to_regclass(?::text) IS NOT NULL", {table}).empty();
  }
  bool has_column(const std::string& table, const std::string& column) override {
    return !query("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(?::text) AND attname = ? AND attnum > 0 "
                  "AND NOT attisdropped",
                  {table, column})
                .empty();
  }

  std::string schema() const override {
    // SQLite's tables in PostgreSQL's types. Text compares and sorts byte-wise (COLLATE "C"), as SQLite does, so
    // dates, tags and identities order the same in both whatever the database's locale.
    return R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  fingerprint TEXT COLLATE "C" NOT NULL UNIQUE,
  added_utc TEXT COLLATE "C" NOT NULL,
  source TEXT COLLATE "C" NOT NULL,
  start_time_utc TEXT COLLATE "C", status TEXT COLLATE "C", model TEXT COLLATE "C", device_name TEXT COLLATE "C",
  device_type TEXT COLLATE "C", precision TEXT COLLATE "C",
  batch_size BIGINT, world_size BIGINT,
  driver_version TEXT COLLATE "C", cuda_runtime_version TEXT COLLATE "C", cudnn_version TEXT COLLATE "C",
  libtorch_version TEXT COLLATE "C", git_revision TEXT COLLATE "C",
  hostname TEXT COLLATE "C",
  scenario_json TEXT NOT NULL,
  environment_json TEXT NOT NULL,
  record_json TEXT NOT NULL,
  identity_json TEXT COLLATE "C",
  busy_host TEXT
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch BIGINT,
  tag TEXT COLLATE "C" NOT NULL, value DOUBLE PRECISION NOT NULL, unit TEXT, better TEXT
);
CREATE INDEX IF NOT EXISTS metrics_by_tag ON metrics(tag, run_id);
CREATE INDEX IF NOT EXISTS metrics_by_run ON metrics(run_id);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs(model, start_time_utc);
CREATE TABLE IF NOT EXISTS gpubench_store (version INTEGER NOT NULL);
)sql";
  }

  // #>> gives a JSON boolean as the text true or false, which is what a user types.
  Condition json_key_is(const std::string& column, const std::string& key, const std::string& value) const override {
    std::string path = "{\"";
    for (const char c : key) {
      if (c == '.') {
        path += "\",\"";
      } else {
        if (c == '"' || c == '\\') path += '\\';
        path += c;
      }
    }
    return {"(" + column + "::jsonb #>> ?::text[]) = ?", {path + "\"}", value}};
  }

  std::string json_field(const std::string& column, const std::string& key) const override {
    return "(" + column + "::jsonb ->> '" + key + "')";
  }

  // The server keeps its own pages consistent (write-ahead log, constraints): a run and its metrics are one
  // transaction and metrics cannot outlive their run (the foreign key), so there is nothing for a client to check.
  std::string integrity(bool) override { return "ok"; }

  bool fresh() override { return !has_table("runs"); }

 private:
  struct Result {
    explicit Result(PGresult* r) : res(r) {}
    ~Result() { PQclear(res); }
    Result(const Result&) = delete;
    Result& operator=(const Result&) = delete;
    PGresult* get() const { return res; }
    PGresult* res;
  };

  void check(PGresult* res, const std::string& what) const {
    const ExecStatusType s = res == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return;
    throw std::runtime_error("results store " + name_ + ": " + what + ": " + libpq_message());
  }

  /// libpq's last message on one line, without the password (libpq does not print it; this makes sure).
  std::string libpq_message() const {
    std::string m = PQerrorMessage(conn_);
    for (char& c : m) {
      if (c == '\n' || c == '\t') c = ' ';
    }
    while (!m.empty() && m.back() == ' ') m.pop_back();
    const char* pass = PQpass(conn_);  // the password libpq used, wherever it found it (PGPASSWORD, ~/.pgpass)
    if (pass != nullptr) register_secret(pass);
    return m.empty() ? "no message from libpq" : without_passwords(m);
  }

  void unlock_schema() {
    if (!schema_locked_) return;
    schema_locked_ = false;
    script("SELECT pg_advisory_unlock(" + std::to_string(kSchemaLockKey) + ")");
  }

  std::string name_;
  PGconn* conn_ = nullptr;
  bool schema_locked_ = false;
};

}  // namespace

std::unique_ptr<Connection> open_postgres(const StoreLocation& location, bool read_only) {
  return std::make_unique<PostgresConnection>(location, read_only);
}

}  // namespace store
}  // namespace gpubench
