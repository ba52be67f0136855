// gpubench export: records as one table, one row per epoch (or run), every metric a column; for pandas and
// spreadsheets.

#include <spdlog/spdlog.h>

#include "cli/commands/commands.h"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

class ExportCommand final : public Command {
 public:
  bool has_metrics() const override { return true; }
  void declare(CLI::App& cmd) override {
    cmd.add_option("RECORDS", paths_, "Record files or directories of records")->required()->type_name("RECORDS");
    cmd.add_option("--per", per_, "One row per epoch (default) or per run")
        ->check(CLI::IsMember({"epoch", "run"}).description(""))
        ->type_name("epoch|run");
    out_opt_ = cmd.add_option("-o,--out", out_,
                   "Write the table here instead of standard output (atomically), in the format its extension names "
                   "unless --format says")
        ->type_name("FILE");
    cmd.footer("Columns: the run's identity (record, model, device, precision, batch_size, world_size, ...), then "
               "one column per metric tag\nwith its unit in the name (samples_per_s, step_time_p95_ms, "
               "joules_per_sample, ...). Loads with pandas.read_csv or read_json(lines=True).");
  }

  void files(FileRoles& roles) const override {
    for (const auto& p : paths_) record_input(roles, p, "RECORDS");
    if (out_opt_->count() > 0) roles.output(out_, "--out");
  }

  int run(Context& ctx) override {
    PrinterMultiplex mux;
    if (out_.empty()) {
      add_outputs(mux, ctx.output, false);
    } else {
      std::string format = ctx.output.format;
      if (format.empty()) format = save_target(out_, "--out").format;  // an extension gpubench does not write: exit 2
      try {
        check_output_location(out_);
      } catch (const std::exception& e) {
        throw UsageError("--out " + out_ + ": " + e.what());
      }
      mux.add(format, out_);
      for (const auto& t : ctx.output.targets) mux.add(t.format, t.path);
    }
    const std::vector<LoadedRecord> records = load_records_or_fail(paths_);
    try {
      mux.print(export_document(records, per_ == "run" ? ExportPer::kRun : ExportPer::kEpoch));
    } catch (const std::exception& e) {
      throw OutputNotWritten(e.what());
    }
    if (!out_.empty()) spdlog::info("{} record(s) exported to {}", records.size(), out_);
    return kExitOk;
  }

 private:
  std::vector<std::string> paths_;
  std::string per_ = "epoch", out_;
  CLI::Option* out_opt_ = nullptr;
};

}  // namespace

CommandSpec export_command() {
  return {"export", "Records as a table: one row per epoch (or run), every metric a column",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "csv", [] { return std::make_unique<ExportCommand>(); }};
}

}  // namespace gpubench::cli
