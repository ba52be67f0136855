// gpubench db add / history: the results store (core/store.hpp) from the command line.

#include <spdlog/spdlog.h>

#include <cstdio>

#include "cli/commands.h"
#include "gpubench/core/compare.hpp"
#include "gpubench/core/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

int db_add_command(const std::string& store, const std::vector<std::string>& paths) {
  std::vector<std::string> skipped;
  std::vector<LoadedRecord> records;
  try {
    records = load_records(paths, &skipped);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  for (const auto& s : skipped) spdlog::warn("skipped {}", s);
  if (records.empty()) {
    spdlog::error("no gpubench run records in the given paths");
    return kExitUsage;
  }
  try {
    ResultsStore db(store);
    int added = 0;
    for (const auto& r : records) added += db.add(r.record, r.path) ? 1 : 0;
    std::printf("%s: added %d record(s), %zu already stored; %lld in all\n", store.c_str(), added,
                records.size() - static_cast<size_t>(added), static_cast<long long>(db.count()));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  return kExitOk;
}

int history_command(const HistoryArgs& a) {
  HistoryQuery q;
  q.model = a.model;
  q.metric = a.metric;
  q.since = a.since;
  for (const auto& kv : a.scenario) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      spdlog::error("--scenario: expected KEY=VALUE (e.g. batch_size=256), got '{}'", kv);
      return kExitUsage;
    }
    q.scenario[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<HistoryRow> rows;
  try {
    rows = ResultsStore(a.store).history(q);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  std::string unit;
  for (const auto& r : rows) {
    if (!r.unit.empty()) unit = r.unit;
  }
  Document d;
  d.kind = "history";
  d.title = "gpubench history " + a.store;
  Table t;
  t.id = "runs";
  const auto text = [](const char* key, const char* header) { return Column{key, header, "", Better::kNeither}; };
  t.add_column(Column{"id", "id", "count", Better::kNeither});
  t.add_column(text("start_time_utc", "start (UTC)"));
  t.add_column(text("model", "model"));
  t.add_column(text("device", "device"));
  t.add_column(text("precision", "precision"));
  t.add_column(Column{"batch_size", "batch", "count", Better::kNeither});
  t.add_column(text("status", "status"));
  t.add_column(Column{a.metric, a.metric, unit, Better::kNeither});
  t.add_column(text("driver_version", "driver"));
  t.add_column(text("cuda_runtime_version", "CUDA"));
  t.add_column(text("cudnn_version", "cuDNN"));
  t.add_column(text("libtorch_version", "LibTorch"));
  t.add_column(text("git_revision", "gpubench"));
  t.add_column(text("source", "record"));
  for (const auto& r : rows) {
    t.rows.push_back({Cell::num(static_cast<double>(r.id)), Cell::str(r.start_time_utc), Cell::str(r.model),
                      Cell::str(r.device_name), Cell::str(r.precision),
                      r.batch_size ? Cell::num(static_cast<double>(*r.batch_size)) : Cell::none(), Cell::str(r.status),
                      Cell::num(r.value), Cell::str(r.driver_version), Cell::str(r.cuda_runtime_version),
                      Cell::str(r.cudnn_version), Cell::str(r.libtorch_version), Cell::str(r.git_revision),
                      Cell::str(r.source)});
  }
  t.notes.push_back(std::to_string(rows.size()) + " run(s)");
  d.table(std::move(t));
  try {
    PrinterMultiplex mux;
    add_outputs(mux, a.output, "console");
    mux.print(d);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace gpubench::cli
