#pragma once
// Where a results store lives, parsed once from what the user typed: a SQLite file (taken as a file name, whatever
// characters it holds: never a URI, never `:memory:`) or a PostgreSQL URL, its credentials held apart. Every message,
// record and child command line sees display(); only the connection sees the password.

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpubench {

/// A store name that cannot be used: empty, a malformed URL, a libpq key=value string. The message never holds a
/// password (a malformed URL is named by its scheme alone).
class StoreLocationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Whether `text` is a PostgreSQL URL: it starts with postgresql:// or postgres:// (the scheme in any case, as RFC 3986
/// allows). Everything else names a SQLite file.
bool is_postgres_url(const std::string& text);

class StoreLocation {
 public:
  enum class Kind { kSqliteFile, kPostgres };

  /// Parses `text`. A PostgreSQL URL follows libpq's URI grammar: postgresql://[user[:password]@][host[:port][,...]]
  /// [/dbname][?key=value&...], each part percent-decoded (an invalid escape or %00 is refused). The credentials end at
  /// the last '@' before the first '/' or '?'; an '@' anywhere after that part (a password holding '/', '?' or '@'
  /// unencoded) is refused as ambiguous rather than guessed. Registers the passwords (redact.hpp). Throws
  /// StoreLocationError.
  static StoreLocation parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is_postgres() const { return kind_ == Kind::kPostgres; }
  /// The SQLite file, exactly as typed.
  const std::string& path() const { return typed_; }
  /// What messages, records and child command lines show: the file, or the URL without its passwords.
  const std::string& display() const { return display_; }
  /// PostgreSQL: libpq's connection keywords and their decoded values, in order (later ones win), the password
  /// included; for PQconnectdbParams with expand_dbname = 0, so libpq never parses (or echoes) the URL itself.
  const std::vector<std::pair<std::string, std::string>>& connection_parameters() const { return params_; }
  /// What was typed, credentials included: only for a child process's environment (never its command line).
  const std::string& typed() const { return typed_; }

 private:
  Kind kind_ = Kind::kSqliteFile;
  std::string typed_, display_;
  std::vector<std::pair<std::string, std::string>> params_;
};

namespace store_url {

/// One PostgreSQL URL taken apart (what StoreLocation and the redaction share).
struct Parsed {
  bool ok = false;
  std::string problem;   ///< why not ok, naming the part, never its text
  std::string display;   ///< the URL without passwords (when ok)
  std::vector<std::pair<std::string, std::string>> params;  ///< libpq keywords, decoded
  std::vector<std::string> secrets;  ///< each password as typed and as decoded
};

/// Parses `url` (which starts with a PostgreSQL scheme); never throws.
Parsed parse(const std::string& url);

/// libpq's percent-decoding of `in` into `out`: %XX escapes; false for a broken escape or %00.
bool percent_decode(const std::string& in, std::string& out);

}  // namespace store_url

}  // namespace gpubench
