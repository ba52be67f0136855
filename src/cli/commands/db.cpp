// gpubench db add: records into the results store (core/store/store.hpp).

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

  int run(Context& ctx) override {
    const std::vector<LoadedRecord> records = load_records_or_fail(paths_);
    int added = 0;
    int64_t total = 0;
    try {
      ResultsStore db(store_);
      for (const auto& r : records) added += db.add(r.record, r.path) ? 1 : 0;
      total = db.count();
    } catch (const std::exception& e) {
      throw OutputNotWritten(store_ + ": " + e.what());
    }
    Document d;
    d.kind = "db_add";
    d.title = "gpubench db add " + store_;
    d.paragraph(store_ + ": added " + std::to_string(added) + " record(s), " +
                std::to_string(records.size() - static_cast<size_t>(added)) + " already stored; " +
                std::to_string(total) + " in all");
    d.data = {{"store", store_}, {"added", added}, {"already_stored", records.size() - static_cast<size_t>(added)},
              {"total", total}};
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
