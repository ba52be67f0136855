// gpubench db: the results store's tools (core/store/store.hpp): add records, list runs, remove runs, prune old ones.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/interrupt.h"
#include "cli/store_filters.h"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

/// The runs table of `db list` and of what `db rm` / `db prune` remove (or would): identity, date, status.
Table runs_table(const std::vector<HistoryRow>& rows, const std::string& id) {
  std::vector<nlohmann::json> identities;
  for (const auto& r : rows) identities.push_back(nlohmann::json::parse(r.identity_json, nullptr, false));
  const std::vector<std::string> labels = scenario_labels(identities);
  Table t;
  t.id = id;
  t.add_column(Column::count("id", "id"));
  t.add_column(Column::text("start_time_utc", "start (UTC)"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column::text("scenario_id", "scenario id"));
  t.add_column(Column::text("scenario", "scenario"));
  // The rows' own unit when they share one (tokens/s for generation runs), else the generic samples/s.
  std::string unit;
  for (const auto& r : rows) {
    if (r.unit.empty()) continue;
    unit = unit.empty() || unit == r.unit ? r.unit : "samples/s";
  }
  t.add_column(Column{kThroughputTag, "throughput", unit.empty() ? "samples/s" : unit, Better::kNeither});
  t.add_column(Column::text("source", "record"));
  for (size_t i = 0; i < rows.size(); ++i) {
    const HistoryRow& r = rows[i];
    t.rows.push_back({Cell::num(static_cast<double>(r.id)), Cell::str(r.start_time_utc), Cell::str(r.status),
                      Cell::str(identity_id(identities[i])), Cell::str(labels[i]), Cell::num(r.value),
                      Cell::str(r.source)});
  }
  return t;
}

/// The store as `db add` and `db rm`/`prune` will write it, opened before any work: a file that is not a gpubench
/// store, one made by a newer gpubench, a truncated or a damaged one, a server that cannot be reached or refuses the
/// credentials is a usage error (exit 2), untouched. A missing or empty file is not opened here (`db add` creates it
/// at its first good record); a PostgreSQL database is opened (and its tables made) at once.
std::unique_ptr<ResultsStore> open_existing_for_writing(const StoreLocation& location) {
  std::error_code ec;
  if (!location.is_postgres() && (!std::filesystem::exists(location.path(), ec) ||
                                  std::filesystem::file_size(location.path(), ec) == 0)) {
    return nullptr;
  }
  try {
    return std::make_unique<ResultsStore>(location, ResultsStore::Access::kWrite);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

/// A run id as `db list` shows it: decimal digits only (`010` is run 10, never octal 8; `0x10`, `-1`, `+1` refused).
int64_t parse_run_id(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 18 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw UsageError("db rm: '" + text + "' is not a run id (decimal digits, as `gpubench db list` shows)");
  return std::stoll(text, nullptr, 10);
}

class DbCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.require_subcommand(1);
    add_ = cmd.add_subcommand("add", "Import records (files or folders); the same record twice is stored once");
    add_->add_option("STORE", store_, "A SQLite file (created when missing) or a postgresql:// URL (tables made when missing)")
        ->required()
        ->type_name("STORE");
    add_->add_option("RECORDS", paths_, "Record files or directories of records")->required()->type_name("RECORDS");

    list_ = cmd.add_subcommand("list", "The stored runs: id, start, status, scenario (with its id) and throughput");
    list_->add_option("STORE", store_, "A results store")->required()->type_name("STORE");
    list_filters_.declare(*list_);
    list_->add_option("--status", status_, "Only runs with this status (ok, failed, oom, nan, interrupted)")
        ->type_name("STATUS");

    rm_ = cmd.add_subcommand("rm", "Remove runs by id (`db list` shows them), all in one transaction");
    rm_->add_option("STORE", store_, "A results store")->required()->type_name("STORE");
    rm_->add_option("IDS", id_texts_, "Run ids (decimal, as `db list` shows them)")->required()->type_name("ID");
    rm_->add_flag("--dry-run", dry_run_, "Show what would be removed; change nothing");

    prune_ = cmd.add_subcommand("prune", "Keep the newest N runs of each scenario (and GPU model); remove the rest");
    prune_->add_option("STORE", store_, "A results store")->required()->type_name("STORE");
    prune_->add_option("--keep", keep_, "Runs to keep per scenario identity (at least 1)")
        ->required()
        ->check(CLI::Range(1, 1000000).description(""))
        ->type_name("N")->transform(decimal_whole());
    prune_filters_.declare(*prune_);
    prune_->add_flag("--dry-run", dry_run_, "Show what would be removed; change nothing");
    cmd.footer("`db add` writes; `db rm` and `db prune` remove in one transaction (all or nothing; --dry-run shows "
               "them first); `db list` reads. A STORE that is not a gpubench store, a newer, truncated or damaged one "
               "is exit 2, untouched. `gpubench export STORE` writes the stored records as a table.");
  }

  void files(FileRoles& roles) const override {
    if (add_->parsed()) {
      for (const auto& p : paths_) roles.input(p, "RECORDS", is_record_file);
      roles.output(store_, "STORE");
    } else {
      roles.store(store_, "STORE");
    }
  }

  int run(Context& ctx) override {
    if (list_->parsed()) return list(ctx);
    if (rm_->parsed() || prune_->parsed()) return remove(ctx);
    return add(ctx);
  }

 private:
  int add(Context& ctx) {
    const StoreLocation location = parse_store(store_, "STORE");
    std::unique_ptr<ResultsStore> db = open_existing_for_writing(location);  // an unusable store: exit 2, no work done
    if (!db && !location.is_postgres()) {
      try {
        check_output_location(location.path());  // the new file's folder exists (or is made) and takes files
      } catch (const std::exception& e) {
        throw UsageError("results store " + location.display() + ": " + e.what());
      }
    }
    // One record at a time (read, added, dropped): memory stays that of the largest record, not of all of them.
    std::vector<RecordFile> files;
    try {
      files = record_files(paths_);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    int added = 0, already = 0, skipped = 0;
    // Ctrl-C: the record in hand is finished (each is one transaction), then the command stops and says what is stored.
    const StopOnSignal stop;
    size_t seen = 0;
    for (const auto& f : files) {
      if (stop.requested()) break;
      ++seen;
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(f.path, ec);
      if (!ec && bytes > kMaxStoredRecordBytes) {
        spdlog::warn("skipped {}: {} MiB; the store keeps records of at most {} MiB (a 24-hour sustained run's is "
                     "about 5 MiB)", f.path, bytes >> 20, kMaxStoredRecordBytes >> 20);
        ++skipped;
        continue;
      }
      RunRecord r;
      try {
        r = read_record(f.path);
      } catch (const std::exception& e) {
        if (f.explicit_file) {
          throw UsageError(std::string(e.what()) +
                           (added > 0 ? " (" + std::to_string(added) + " record(s) before it were added)" : ""));
        }
        spdlog::warn("skipped {}", e.what());
        ++skipped;
        continue;
      }
      try {
        if (!db) db = std::make_unique<ResultsStore>(location);  // created at the first good record
        (db->add(r, f.path) ? added : already) += 1;
      } catch (const std::exception& e) {
        // A server lost mid-import: the records before this one are stored whole, this one not at all.
        throw OutputNotWritten(std::string(e.what()) + " (" + std::to_string(added) + " record(s) added before it)");
      }
    }
    const bool interrupted = stop.requested() && seen < files.size();  // a signal after the last file stopped nothing
    if (added + already == 0 && !interrupted) throw UsageError("no gpubench run records in the given paths");
    const int64_t total = db ? db->count() : 0;
    const std::string name = db ? db->name() : location.display();
    Document d;
    d.kind = "db_add";
    d.title = "gpubench db add " + name;
    d.paragraph(name + ": added " + std::to_string(added) + " record(s), " + std::to_string(already) +
                " already stored; " + std::to_string(total) + " in all" +
                (skipped > 0 ? "; " + std::to_string(skipped) + " file(s) skipped" : ""));
    if (interrupted) {
      d.paragraph("interrupted: " + std::to_string(files.size() - seen) + " of " + std::to_string(files.size()) +
                  " file(s) not read; every record added is stored whole, `db add` again adds only the rest");
      spdlog::error("db add interrupted after {} of {} file(s): {} record(s) added to {}", seen, files.size(), added,
                    name);
    }
    d.data = {{"store", name},         {"added", added}, {"already_stored", already}, {"skipped", skipped},
              {"total", total},        {"interrupted", interrupted},
              {"files_not_read", files.size() - seen}};
    ctx.print(d);
    return interrupted ? kExitInterrupted : kExitOk;
  }

  int list(Context& ctx) const {
    const std::unique_ptr<ResultsStore> store = open_store_for_reading(store_);
    std::vector<HistoryRow> rows = store->history(list_filters_.query(kThroughputTag, *store));
    if (!status_.empty()) {
      static const std::vector<std::string> statuses{"ok", "failed", "oom", "nan", "interrupted"};
      if (std::find(statuses.begin(), statuses.end(), status_) == statuses.end()) {
        throw UsageError("--status " + status_ + ": expected one of ok, failed, oom, nan, interrupted");
      }
      rows.erase(std::remove_if(rows.begin(), rows.end(), [this](const HistoryRow& r) { return r.status != status_; }),
                 rows.end());
    }
    Document d;
    d.kind = "db_list";
    d.title = "gpubench db list " + store->name();
    Table t = runs_table(rows, "runs");
    t.notes.push_back(std::to_string(rows.size()) + " of " + std::to_string(store->count()) + " stored run(s)");
    d.table(std::move(t));
    ctx.print(d);
    return kExitOk;
  }

  /// `db rm IDS` and `db prune --keep N`: what goes is chosen and shown, then removed in one transaction.
  int remove(Context& ctx) {
    const StoreLocation location = parse_store(store_, "STORE");
    std::vector<int64_t> wanted;  // db rm's ids, read before the store is opened
    for (const auto& text : id_texts_) wanted.push_back(parse_run_id(text));
    std::unique_ptr<ResultsStore> store =
        dry_run_ ? open_store_for_reading(store_) : open_existing_for_writing(location);
    if (!store) throw UsageError("results store " + location.display() + " does not exist");
    const bool prune = prune_->parsed();
    std::vector<HistoryRow> all = store->history(
        prune ? prune_filters_.query(kThroughputTag, *store) : StoreFilters{}.query(kThroughputTag, *store));
    std::vector<HistoryRow> going;
    if (prune) {
      // Newest first within each scenario identity (its GPU model included); the first N stay.
      std::map<std::string, int64_t> kept;
      for (auto it = all.rbegin(); it != all.rend(); ++it) {
        if (++kept[it->identity_json] > keep_) going.push_back(*it);
      }
      std::reverse(going.begin(), going.end());
    } else {
      std::vector<int64_t> missing;
      for (const int64_t id : wanted) {
        const auto it = std::find_if(all.begin(), all.end(), [id](const HistoryRow& r) { return r.id == id; });
        if (it == all.end()) {
          missing.push_back(id);
        } else if (std::none_of(going.begin(), going.end(), [id](const HistoryRow& r) { return r.id == id; })) {
          going.push_back(*it);
        }
      }
      if (!missing.empty()) {
        std::string list;
        for (const int64_t id : missing) list += (list.empty() ? "" : ", ") + std::to_string(id);
        throw UsageError("results store " + store->name() + " has no run " + list + " (nothing was removed; `gpubench "
                         "db list " + store->name() + "` shows the ids)");
      }
    }
    std::vector<int64_t> ids;
    for (const auto& r : going) ids.push_back(r.id);
    int64_t removed = 0;
    if (!dry_run_ && !ids.empty()) {
      try {
        removed = store->remove(ids);
      } catch (const std::exception& e) {
        throw OutputNotWritten(std::string(e.what()) + " (nothing was removed)");
      }
    }
    Document d;
    d.kind = prune ? "db_prune" : "db_rm";
    d.title = std::string("gpubench db ") + (prune ? "prune " : "rm ") + store->name();
    d.paragraph(dry_run_ ? "dry run: " + std::to_string(ids.size()) + " run(s) would be removed; nothing was changed"
                         : std::to_string(removed) + " run(s) removed; " + std::to_string(store->count()) + " left");
    Table t = runs_table(going, dry_run_ ? "would_remove" : "removed");
    d.table(std::move(t));
    d.data = {{"store", store->name()}, {"dry_run", dry_run_}, {"removed", removed}, {"ids", ids},
              {"left", store->count()}};
    ctx.print(d);
    return kExitOk;
  }

  CLI::App *add_ = nullptr, *list_ = nullptr, *rm_ = nullptr, *prune_ = nullptr;
  std::string store_, status_;
  std::vector<std::string> paths_;
  std::vector<std::string> id_texts_;
  StoreFilters list_filters_, prune_filters_;
  int64_t keep_ = 0;
  bool dry_run_ = false;
};

}  // namespace

CommandSpec db_command() {
  return {"db", "The results store (SQLite file or PostgreSQL): `db add STORE RECORDS...`, `db list`, `db rm`, `db prune --keep N`",
          {kExitOk, kExitUsage, kExitOutputNotWritten, kExitInterrupted}, "console",
          [] { return std::make_unique<DbCommand>(); }};
}

}  // namespace gpubench::cli
