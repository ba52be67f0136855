#pragma once
// The filters of the commands that read a results store (`history`, `db list`, `db prune`): one declaration, one
// check (names that do not exist are usage errors with the valid choices, never an empty answer).

#include <memory>
#include <string>
#include <vector>

#include "cli/app.h"
#include "gpubench/core/store/store.hpp"

namespace gpubench::cli {

struct StoreFilters {
  std::string model, since;
  std::vector<std::string> scenario;  ///< KEY=VALUE

  /// --model, --scenario KEY=VALUE (repeatable), --since DATE.
  void declare(CLI::App& cmd);
  /// The query for `metric`, checked against the model catalog, the scenario keys and the store's metric tags.
  HistoryQuery query(const std::string& metric, const ResultsStore& store) const;
};

/// An existing gpubench store opened read-only; anything else is a usage error (exit 2) naming the file.
std::unique_ptr<ResultsStore> open_store_for_reading(const std::string& path);

/// `text` as a results store's location; an unusable name (empty, a malformed URL) is a usage error naming `flag`.
StoreLocation parse_store(const std::string& text, const std::string& flag);

/// A store a command will add records to, opened (and made, where missing) before any work: a file, server or store
/// that cannot take records is a usage error naming `flag` (exit 2), nothing run.
void check_takes_records(const StoreLocation& location, const std::string& flag);

}  // namespace gpubench::cli
