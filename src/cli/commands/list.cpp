// gpubench list: the models with their keys and defaults, the published references, and this machine's devices.
// `--format json` is the catalog scripts read (scripts/pytorch_reference.py takes the models' defaults from it).

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/published.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

Document list_document() {
  const ModelCatalog models = available_models();
  Document d;
  d.kind = "list";
  d.title = "gpubench list";
  Table m;
  m.id = "models";
  m.title = "Models:";
  for (const char* k : {"name", "description", "default_batch_size", "default_optimizer", "unit"}) {
    m.add_column(std::string(k) == "default_batch_size" ? Column::count(k, "default batch") : Column::text(k, k));
  }
  for (const auto& x : models) {
    m.rows.push_back({Cell::str(x.name), Cell::str(x.description), Cell::num(static_cast<double>(x.default_batch_size)),
                      Cell::str(x.default_optimizer), Cell::str(x.sample_unit)});
  }
  m.notes.push_back("`gpubench run MODEL --help` lists each model's own keys; `gpubench list --format json` gives "
                    "them with their types, ranges and defaults.");
  d.table(std::move(m));
  Table p;
  p.id = "published";
  p.title = "Published references (gpubench compare published/<id> RUN.json):";
  for (const char* k : {"id", "device", "model", "batch_size", "mode"}) {
    p.add_column(std::string(k) == "batch_size" ? Column::count(k, "batch") : Column::text(k, k));
  }
  nlohmann::json published = nlohmann::json::array();
  for (const auto& r : published_references()) {
    p.rows.push_back({Cell::str(r.id), Cell::str(r.device), Cell::str(r.model),
                      r.batch_size ? Cell::num(static_cast<double>(*r.batch_size)) : Cell::none(), Cell::str(r.mode)});
    published.push_back({{"id", r.id}, {"device", r.device}, {"model", r.model}, {"batch_size", r.batch_size},
                         {"mode", r.mode}, {"precision", r.precision}, {"source", r.source}});
  }
  d.table(std::move(p));
  Table v;
  v.id = "devices";
  v.title = "Devices:";
  for (const char* k : {"id", "available", "name", "memory_bytes", "compute_capability", "note"}) {
    v.add_column(std::string(k) == "memory_bytes" ? Column{k, "memory", "bytes", Better::kNeither} : Column::text(k, k));
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& x : list_devices()) {
    v.rows.push_back({Cell::str(x.id), Cell::str(x.available ? "yes" : "no"), Cell::str(x.name),
                      x.memory_bytes ? Cell::num(static_cast<double>(*x.memory_bytes)) : Cell::none(),
                      Cell::str(x.compute_capability), Cell::str(x.note)});
    devices.push_back({{"id", x.id}, {"available", x.available}, {"name", x.name}, {"memory_bytes", x.memory_bytes},
                       {"compute_capability", x.compute_capability}, {"note", x.note}});
  }
  d.table(std::move(v));
  d.data = catalog_json(models);
  d.data["published"] = published;
  d.data["devices"] = devices;
  return d;
}

class ListCommand final : public Command {
 public:
  void declare(CLI::App& /*cmd*/) override {}
  int run(Context& ctx) override {
    ctx.print(list_document());
    return kExitOk;
  }
};

}  // namespace

CommandSpec list_command() {
  return {"list", "List models (with their keys and defaults), published references and devices",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<ListCommand>(); }};
}

}  // namespace gpubench::cli
