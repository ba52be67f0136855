// Output options shared by the commands that print documents, and `gpubench export`.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "cli/commands.h"
#include "gpubench/core/compare.hpp"
#include "gpubench/core/profile.hpp"
#include "gpubench/core/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

void add_outputs(PrinterMultiplex& mux, const OutputArgs& out, const std::string& default_format) {
  mux.add(out.format.empty() ? default_format : out.format, "-");
  for (const auto& f : out.files) {
    std::string format = format_for_path(f), path = f;
    const auto colon = f.find(':');
    if (colon != std::string::npos && colon > 0) {
      const std::string prefix = f.substr(0, colon);
      const auto& known = printer_formats();
      if (std::find(known.begin(), known.end(), prefix) != known.end() || prefix == "markdown") {
        format = prefix;
        path = f.substr(colon + 1);
      }
    }
    if (format.empty()) {
      throw std::invalid_argument("--save " + f + ": say the format by the extension (.md .html .csv .jsonl "
                                  ".json .xml .txt) or as FORMAT:FILE");
    }
    check_output_location(path);
    mux.add(format, path);
  }
}

bool print_summary(const Document& d, const OutputArgs& out, const std::string& dir, const std::string& stem) {
  try {
    PrinterMultiplex mux;
    add_outputs(mux, out, "console");
    mux.add("md", dir + "/" + stem + ".md");
    mux.add("json", dir + "/" + stem + ".json");
    mux.print(d);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return false;
  }
  std::printf("summary: %s/%s.md\n", dir.c_str(), stem.c_str());
  return true;
}

int load_records_for(const std::vector<std::string>& paths, std::vector<LoadedRecord>& out) {
  std::vector<std::string> skipped;
  try {
    out = load_records(paths, &skipped);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  for (const auto& s : skipped) spdlog::warn("skipped {}", s);
  if (out.empty()) {
    spdlog::error("no gpubench run records in the given paths");
    return kExitUsage;
  }
  return kExitOk;
}

int export_command(const ExportArgs& a) {
  if (a.per != "epoch" && a.per != "run") {
    spdlog::error("--per: expected epoch or run, got '{}'", a.per);
    return kExitUsage;
  }
  std::string format = a.format;
  if (format.empty()) format = a.out.empty() ? "csv" : format_for_path(a.out);
  if (format.empty()) format = "csv";
  PrinterMultiplex mux;
  try {
    if (!a.out.empty()) check_output_location(a.out);
    mux.add(format, a.out.empty() ? "-" : a.out);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  std::vector<LoadedRecord> records;
  if (const int rc = load_records_for(a.paths, records); rc != kExitOk) return rc;
  try {
    mux.print(export_document(records, a.per == "run" ? ExportPer::kRun : ExportPer::kEpoch));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  if (!a.out.empty()) spdlog::info("{} record(s) exported to {}", records.size(), a.out);
  return kExitOk;
}

int trace_command(const TraceArgs& a) {
  if (a.paths.empty() || a.paths.size() > 2) {
    spdlog::error("trace: give one trace, or two to compare");
    return kExitUsage;
  }
  PrinterMultiplex mux;
  try {
    add_outputs(mux, a.output, "console");
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  std::vector<std::pair<std::string, ProfileRecord>> traces;
  for (const auto& path : a.paths) {
    try {
      const std::vector<ProfileEvent> events =
          events_from_chrome_trace(nlohmann::json::parse(read_text_file(path, kMaxTraceBytes, "Chrome trace")));
      ProfileInputs inputs;
      inputs.steps = std::max<int64_t>(1, count_steps(events));
      inputs.top_kernels = SIZE_MAX;  // all of them: a comparison matches kernels by name
      ProfileRecord p = summarize_profile(events, inputs);
      if (p.wall_ms_per_step <= 0) throw std::runtime_error("it holds no kernels or operators");
      p.when = count_steps(events) > 0 ? std::to_string(inputs.steps) + " marked steps"
                                       : "no step markers: the whole trace as one step";
      p.source = "Chrome trace";
      p.trace_path = path;
      traces.emplace_back(path, std::move(p));
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", path, e.what());
      return kExitUsage;
    }
  }
  try {
    mux.print(trace_document(traces, a.top));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  return kExitOk;
}

int metrics_command() {
  std::printf("%-22s %-12s %-8s %-10s %s\n", "tag", "unit", "better", "per", "meaning");
  for (const auto& m : standard_metrics()) {
    const std::string per = m.per_epoch && m.per_run ? "epoch, run" : (m.per_epoch ? "epoch" : "run");
    const std::string unit = m.unit == "<samples>/s" ? "images/s, ..." : m.unit;
    std::printf("%-22s %-12s %-8s %-10s %s\n", m.tag.c_str(), unit.c_str(), to_string(m.better).c_str(), per.c_str(),
                m.help.c_str());
  }
  std::printf("Records may carry more (extra metrics added where they are measured); `gpubench export` shows them all.\n");
  return kExitOk;
}

}  // namespace gpubench::cli
