// gpubench validate: scenario files checked (and, with --resolved, resolved for this machine) without running them.

#include <spdlog/spdlog.h>

#include "cli/commands/commands.h"
#include "cli/scenario_flags.h"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/runner/resolve_here.hpp"

namespace gpubench::cli {

namespace {

class ValidateCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("FILES", files_, "Scenario files (YAML or JSON)")->required()->type_name("FILE...");
    cmd.add_flag("--resolved", resolved_,
                 "Print each scenario as a run here would resolve it: every key with its value and origin, the "
                 "device, the record path and the notes");
    flags_.declare(cmd, {ScenarioFlags::Values::kOne, "", false, false, false});
    cmd.footer("The scenario flags apply to every file, as `run --config FILE` would apply them. Checked: every key, "
               "the model's rules (head counts, sizes) and a data folder.\nWith --resolved and one file, --format json "
               "prints its resolved scenario (the layout of a record's `scenario`, under \"scenario\").");
  }

  void files(FileRoles& roles) const override {
    for (const auto& f : files_) roles.input(f, "FILES");
  }

  int run(Context& ctx) override {
    Document out;
    out.kind = "validate";
    out.title = "gpubench validate";
    Table t;
    t.id = "files";
    for (const char* k : {"file", "status", "model", "precision", "device", "keys_set", "errors"}) {
      const std::string key = k;
      t.add_column(key == "keys_set" ? Column::count(k, "keys set") : key == "errors" ? Column::count(k, k) : Column::text(k, k));
    }
    nlohmann::json files = nlohmann::json::array();
    std::vector<Document> resolved_docs;
    int rc = kExitOk;
    for (const auto& f : files_) {
      ScenarioInputs in = flags_.inputs();
      in.config = f;
      try {
        const ResolvedScenario r = resolve_here(in, RankInfo{}, 1, 1, true, ResolveFor::kCheckOnly);
        const Scenario& s = r.scenario;
        t.rows.push_back({Cell::str(f), Cell::str("ok"), Cell::str(s.model), Cell::str(s.precision), Cell::str(s.device),
                          Cell::num(static_cast<double>(s.origins.size())), Cell::num(0.0)});
        resolved_docs.push_back(resolved_document(r, f));
        files.push_back(resolved_docs.back().data);
      } catch (const ScenarioError& e) {  // every problem of the file, each with its place
        nlohmann::json errors = nlohmann::json::array();
        for (const auto& one : e.all()) {
          spdlog::error("{}", one.what());
          errors.push_back({{"message", one.what()}, {"source", one.origin().source}, {"line", one.origin().line},
                            {"column", one.origin().column}, {"key", one.key()}, {"problem", one.problem()}});
        }
        invalid(t, files, f, e.what(), errors);
        rc = kExitUsage;
      } catch (const std::exception& e) {  // anything else is still this file's problem
        spdlog::error("{}", e.what());
        invalid(t, files, f, e.what(), nlohmann::json::array({{{"message", e.what()}, {"source", f}}}));
        rc = kExitUsage;
      }
    }
    if (resolved_ && resolved_docs.size() == 1 && files_.size() == 1) {
      ctx.print(resolved_docs.front());
      return rc;
    }
    if (resolved_) {
      for (auto& d : resolved_docs) out.blocks.insert(out.blocks.end(), d.blocks.begin(), d.blocks.end());
    } else {
      out.table(std::move(t));
    }
    out.data = {{"schema", "gpubench.validate"}, {"files", files}};
    ctx.print(out);
    return rc;
  }

 private:
  static void invalid(Table& t, nlohmann::json& files, const std::string& f, const std::string& message,
                      const nlohmann::json& errors) {
    t.rows.push_back({Cell::str(f), Cell::str("invalid"), Cell::none(), Cell::none(), Cell::none(), Cell::none(),
                      Cell::num(static_cast<double>(errors.size()))});
    files.push_back({{"source", f}, {"error", message}, {"errors", errors}});
  }

  std::vector<std::string> files_;
  bool resolved_ = false;
  ScenarioFlags flags_;
};

}  // namespace

CommandSpec validate_command() {
  return {"validate", "Check scenario files without running them (--resolved: show what a run would use)",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<ValidateCommand>(); }};
}

}  // namespace gpubench::cli
