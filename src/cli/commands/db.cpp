// gpubench db add: records into the results store (core/store/store.hpp).

#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/commands/commands.h"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

class DbCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.require_subcommand(1);
    add_ = cmd.add_subcommand("add", "Import records (files or folders); the same record twice is stored once");
    add_->add_option("STORE", store_, "SQLite file (created when missing)")->required()->type_name("STORE");
    add_->add_option("RECORDS", paths_, "Record files or directories of records")->required()->type_name("RECORDS");
  }

  void files(FileRoles& roles) const override {
    for (const auto& p : paths_) roles.input(p, "RECORDS", is_record_file);
    roles.output(store_, "STORE");
  }

  int run(Context& ctx) override {
    // One record at a time (read, added, dropped): memory stays that of the largest record, not of all of them.
    std::vector<RecordFile> files;
    try {
      files = record_files(paths_);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    std::unique_ptr<ResultsStore> db;  // opened at the first good record: bad inputs never create a store
    int added = 0, already = 0, skipped = 0;
    for (const auto& f : files) {
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
        if (!db) db = std::make_unique<ResultsStore>(store_);
        (db->add(r, f.path) ? added : already) += 1;
      } catch (const std::exception& e) {
        throw OutputNotWritten(store_ + ": " + e.what());
      }
    }
    if (!db) throw UsageError("no gpubench run records in the given paths");
    const int64_t total = db->count();
    Document d;
    d.kind = "db_add";
    d.title = "gpubench db add " + store_;
    d.paragraph(store_ + ": added " + std::to_string(added) + " record(s), " + std::to_string(already) +
                " already stored; " + std::to_string(total) + " in all" +
                (skipped > 0 ? "; " + std::to_string(skipped) + " file(s) skipped" : ""));
    d.data = {{"store", store_}, {"added", added}, {"already_stored", already}, {"skipped", skipped}, {"total", total}};
    ctx.print(d);
    return kExitOk;
  }

 private:
  CLI::App* add_ = nullptr;
  std::string store_;
  std::vector<std::string> paths_;
};

}  // namespace

CommandSpec db_command() {
  return {"db", "The results store (SQLite): `gpubench db add STORE RECORDS...`",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<DbCommand>(); }};
}

}  // namespace gpubench::cli
