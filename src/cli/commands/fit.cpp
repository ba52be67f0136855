// gpubench fit: will a scenario fit on the cards of the device table? The calibrated peak per card, the largest batch
// that fits, and the remedies (with measured costs where records show them). Needs no device.

#include <spdlog/spdlog.h>

#include "cli/commands/commands.h"
#include "cli/output.h"
#include "cli/scenario_flags.h"
#include "gpubench/core/analysis/fit.hpp"
#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/scenario/sweep.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

std::string percent(double ratio) {
  return fmt::format("{:+.0f} % throughput", (ratio - 1.0) * 100.0);
}

nlohmann::json remedy_json(const FitRemedy& r) {
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [k, v] : r.keys) keys[k] = v;
  return {{"name", r.name},
          {"change", r.change},
          {"keys", keys},
          {"predicted_bytes", r.predicted_bytes},
          {"fits", r.fits},
          {"throughput_ratio", r.throughput_ratio ? nlohmann::json(*r.throughput_ratio) : nlohmann::json(nullptr)},
          {"cost_source", r.cost_source}};
}

Document fit_document(const FitResult& f) {
  Document d;
  d.kind = "fit";
  d.title = "gpubench fit";
  const Scenario& s = f.scenario;
  d.paragraph(fmt::format("{} {} bs {} in {}{}{}: the estimate corrected by the committed H200 peaks ({} x estimate + "
                          "{:.2f} GiB, {}); usable memory = the card's x {:.2f} - {:.1f} GiB (context and library "
                          "workspaces). docs/fit.md says how far to trust it.",
                          s.model, s.mode, s.batch_size.value_or(1), f.precision,
                          s.fused_kernels() ? ", kernels fused" : "",
                          s.option<bool>("gradient_checkpointing").value_or(false) ? ", gradient checkpointing" : "",
                          f.calibration.slope, f.calibration.intercept_gib,
                          f.calibration.records > 0
                              ? fmt::format("fitted on {} records of this model, mode and kernel path",
                                            f.calibration.records)
                              : std::string("no records of this model, mode and kernel path: the largest correction"),
                          kVisibleMemoryFraction, kContextGiB));
  if (f.cap_bytes) {
    d.paragraph(fmt::format("Usable memory capped at {:.2f} GiB ({}), as `run` with the same keys caps the caching "
                            "allocator on any larger card.",
                            static_cast<double>(*f.cap_bytes) / 1073741824.0, f.cap_source));
  }
  Table t;
  t.id = "cards";
  const Column card = Column::text("device", "card"), memory{"memory_bytes", "memory", "bytes", Better::kNeither},
               usable{"usable_bytes", "usable", "bytes", Better::kNeither},
               estimate{"estimate_bytes", "estimate", "bytes", Better::kNeither},
               predicted{"predicted_bytes", "predicted peak", "bytes", Better::kNeither},
               fits = Column::text("fits", "fits"), largest = Column::count("largest_batch", "largest batch"),
               remedies = Column::text("remedies", "what makes it fit");
  for (const Column& c : {card, memory, usable, estimate, predicted, fits, largest, remedies}) t.add_column(c);
  nlohmann::json cards = nlohmann::json::array();
  for (const auto& c : f.cards) {
    std::string what;
    nlohmann::json rj = nlohmann::json::array();
    for (const auto& r : c.remedies) {
      rj.push_back(remedy_json(r));
      if (!r.fits) continue;
      what += (what.empty() ? "" : "; ") + r.change + " (" +
              (r.throughput_ratio ? percent(*r.throughput_ratio) + ", measured" : std::string("cost unmeasured")) + ")";
    }
    if (!c.fits && what.empty()) what = "none of gpubench's remedies";
    t.rows.push_back({Cell::str(c.device), Cell::num(static_cast<double>(c.memory_bytes)),
                      Cell::num(static_cast<double>(c.usable_bytes)), Cell::num(static_cast<double>(c.estimate_bytes)),
                      Cell::num(static_cast<double>(c.predicted_bytes)), Cell::str(c.fits ? "yes" : "no"),
                      Cell::num(static_cast<double>(c.largest_batch)), Cell::str(c.fits ? "-" : what)});
    cards.push_back({{"device", c.device},
                     {"memory_bytes", c.memory_bytes},
                     {"usable_bytes", c.usable_bytes},
                     {"estimate_bytes", c.estimate_bytes},
                     {"predicted_bytes", c.predicted_bytes},
                     {"fits", c.fits},
                     {"largest_batch", c.largest_batch},
                     {"largest_ladder_batch", ladder_at_or_below(c.largest_batch)},
                     {"remedies", rj}});
  }
  t.notes.push_back("predicted peak: an upper bound on every committed H200 record of a calibrated group (a \"fits\" "
                    "that then runs out of memory is the costly mistake); largest batch: predicted, at this scenario's "
                    "other keys");
  d.table(std::move(t));
  d.data = {{"schema", "gpubench.fit"},
            {"scenario", s},
            {"precision", f.precision},
            {"calibration",
             {{"slope", f.calibration.slope},
              {"intercept_gib", f.calibration.intercept_gib},
              {"records", f.calibration.records}}},
            {"cap_bytes", f.cap_bytes ? nlohmann::json(*f.cap_bytes) : nlohmann::json(nullptr)},
            {"cap_source", f.cap_source},
            {"usable_fraction", kVisibleMemoryFraction},
            {"context_gib", kContextGiB},
            {"cards", cards}};
  return d;
}

class FitCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    flags_.declare(cmd, {ScenarioFlags::Values::kOne, "Model to plan (resnet50, bert-base, sd-unet, gpt2, llama)", false,
                         true, false});
    cmd.add_option("--devices", devices_,
                   "Cards of the device table to plan for, by name (default: every card with a memory size)")
        ->delimiter(',')
        ->type_name("NAME,...");
    cmd.add_option("--measured", measured_,
                   "Records or stores whose pairs (differing only in a remedy's keys) give each remedy's cost")
        ->type_name("PATH...");
    cmd.footer("Needs no GPU: the estimate, its calibration and the device table are compiled in. The scenario flags "
               "are run's (`gpubench fit llama --batch-size 8`, `--config FILE`). docs/fit.md.");
  }

  void files(FileRoles& roles) const override {
    if (flags_.config()) roles.input(*flags_.config(), "--config");
    for (const auto& p : measured_) record_input(roles, p, "--measured");
  }

  int run(Context& ctx) override {
    const Scenario requested = load_scenario(flags_.inputs(), model_options());
    std::vector<LoadedRecord> measured;
    for (const auto& path : measured_) {  // each a record, a folder of records or a store: none may be empty
      std::vector<LoadedRecord> some;
      try {
        some = load_records_or_fail({path});
      } catch (const std::exception& e) {
        throw UsageError("--measured " + path + ": " + e.what());
      }
      measured.insert(measured.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
    }
    FitResult f;
    try {
      f = plan_fit(requested, available_models(), devices_, measured);
    } catch (const std::invalid_argument& e) {
      spdlog::error("{}", e.what());
      return kExitUsage;
    }
    ctx.print(fit_document(f));
    return kExitOk;
  }

 private:
  ScenarioFlags flags_;
  std::vector<std::string> devices_, measured_;
};

}  // namespace

CommandSpec fit_command() {
  return {"fit", "Will a scenario fit on each card of the device table? Largest batch, and what makes it fit",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<FitCommand>(); }};
}

}  // namespace gpubench::cli
