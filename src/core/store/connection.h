#pragma once
// What the results store asks of a database: SQL with `?` placeholders and typed cells back, transactions, and the
// few things the two engines say differently (the schema's DDL, where the store version lives, how a JSON value is
// read, how a writer takes the lock). store.cpp holds the store's logic once; sqlite_connection.cpp and
// postgres_connection.cpp hold the engines. No SQL is ever built from user input: values travel as parameters.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gpubench/core/store/location.hpp"

namespace gpubench::store {

/// A parameter or a cell: NULL, an integer, a floating-point number or text.
using Value = std::variant<std::monostate, int64_t, double, std::string>;

struct Row {
  std::vector<Value> cells;
  std::string text(size_t i) const;              ///< "" for NULL
  std::optional<int64_t> integer(size_t i) const;  ///< unset for NULL
  std::optional<double> real(size_t i) const;      ///< unset for NULL
};

/// One open database. Every method throws std::runtime_error naming the store (name()), never a password.
class Connection {
 public:
  virtual ~Connection() = default;
  /// What messages and record names call this store: the file, or the URL without its password.
  virtual const std::string& name() const = 0;
  /// Runs one statement with `?` placeholders bound to `args`, in order; its rows (none for most writes).
  virtual std::vector<Row> query(const std::string& sql, const std::vector<Value>& args = {}) = 0;
  /// Statements without parameters, one after the other (the schema).
  virtual void script(const std::string& sql) = 0;

  /// A write transaction. SQLite: BEGIN IMMEDIATE, the file's write lock from the start. PostgreSQL: BEGIN; with
  /// `schema_change`, after taking the store's advisory lock, so writers setting up or migrating one store queue and
  /// each then sees what the one before it committed.
  virtual void begin_write(bool schema_change) = 0;
  virtual void commit() = 0;
  /// Rolls back whatever transaction is open; never throws (a dead connection has nothing to roll back).
  virtual void rollback() noexcept = 0;

  /// The store version written by set_version; 0 in a database gpubench has not set up.
  virtual int version() = 0;
  virtual void set_version(int version) = 0;
  virtual bool has_table(const std::string& table) = 0;
  virtual bool has_column(const std::string& table, const std::string& column) = 0;
  /// The tables and indexes (CREATE ... IF NOT EXISTS), in this engine's types.
  virtual std::string schema() const = 0;
  /// A condition that `key` (dotted: a nested key) of the JSON object in `column` has `value` as typed by a user
  /// (256, bf16, true), with the parameters its `?`s take, in order.
  struct Condition {
    std::string sql;
    std::vector<Value> args;
  };
  virtual Condition json_key_is(const std::string& column, const std::string& key, const std::string& value) const = 0;
  /// An expression for the top-level `key` (a constant of gpubench's, never user input) of the JSON object in
  /// `column`, as text or NULL.
  virtual std::string json_field(const std::string& column, const std::string& key) const = 0;
  /// "ok", or what the engine's own check found (quick: the cheaper check run after every write).
  virtual std::string integrity(bool quick) = 0;
  /// Nothing of anyone's is here yet, so a writer may set the store up: an empty SQLite file; a PostgreSQL database
  /// (or search_path schema) without a `runs` table (other applications' tables may share it).
  virtual bool fresh() = 0;
};

/// Opens a SQLite file, always as a file (never a URI or `:memory:`, whatever its name holds): read-only (never
/// created; a file or folder this process cannot write is read as immutable) or for writing (created when missing).
std::unique_ptr<Connection> open_sqlite(const std::string& path, bool read_only);
/// Opens a PostgreSQL store by its parsed keywords (libpq never sees the URL); read-only sessions refuse every write
/// on the server's side too.
std::unique_ptr<Connection> open_postgres(const StoreLocation& location, bool read_only);

}  // namespace gpubench::store
