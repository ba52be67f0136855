#include "cli/output.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "cli/exit_codes.h"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/document.hpp"

namespace gpubench::cli {

std::string known_formats() {
  std::string out;
  for (const auto& f : printer_formats()) out += (out.empty() ? "" : ", ") + f;
  return out;
}

std::string known_extensions() { return ".md .html .csv .jsonl .json .xml (JUnit) .txt (console) .prom (openmetrics)"; }

SaveTarget save_target(const std::string& spec, const std::string& flag) {
  SaveTarget t{format_for_path(spec), spec};
  const auto colon = spec.find(':');
  if (colon != std::string::npos && colon > 0) {
    const std::string prefix = spec.substr(0, colon);
    const auto& known = printer_formats();
    if (std::find(known.begin(), known.end(), prefix) != known.end() || prefix == "markdown") {
      t.format = prefix == "markdown" ? "md" : prefix;
      t.path = spec.substr(colon + 1);
    }
  }
  if (t.path.empty()) throw UsageError(flag + " '" + spec + "': no file name");
  if (t.format.empty()) {
    const std::string ext = std::filesystem::path(t.path).extension().string();
    throw UsageError(flag + " " + spec + ": " +
                     (ext.empty() ? std::string("no extension to tell the format by")
                                  : "'" + ext + "' is not a format gpubench writes") +
                     "; use one of " + known_extensions() + ", or FORMAT:FILE with FORMAT one of " + known_formats());
  }
  return t;
}

void resolve_outputs(OutputOptions& out) {
  if (!out.format.empty()) {
    const auto& known = printer_formats();
    if (std::find(known.begin(), known.end(), out.format) == known.end() && out.format != "markdown") {
      throw UsageError("--format " + out.format + ": unknown; use one of " + known_formats());
    }
    if (out.format == "markdown") out.format = "md";
  }
  out.targets.clear();
  for (const auto& spec : out.save) {
    SaveTarget t = save_target(spec, "--save");
    for (const auto& other : out.targets) {
      if (std::filesystem::path(other.path).lexically_normal() == std::filesystem::path(t.path).lexically_normal()) {
        throw UsageError("--save " + t.path + " is given twice");
      }
    }
    try {
      check_output_location(t.path);
    } catch (const std::exception& e) {
      throw UsageError("--save " + spec + ": " + e.what());
    }
    out.targets.push_back(std::move(t));
  }
}

void add_save(OutputOptions& out, const std::string& format, const std::string& path, const std::string& flag) {
  if (path.empty()) throw UsageError(flag + ": no file name");
  try {
    check_output_location(path);
  } catch (const std::exception& e) {
    throw UsageError(flag + " " + path + ": " + e.what());
  }
  out.targets.push_back(SaveTarget{format, path});
}

void add_outputs(PrinterMultiplex& mux, const OutputOptions& out, bool to_stderr) {
  const std::string format = out.format.empty() ? out.default_format : out.format;
  if (to_stderr) {
    mux.add_stream(format, stderr);
  } else {
    mux.add(format, "-");
  }
  for (const auto& t : out.targets) mux.add(t.format, t.path);
}

void make_output_folder(const std::string& path, const std::string& flag) {
  try {
    // What a record in it needs: the folder made, and a temporary file (the atomic rename's) created there.
    check_output_location((std::filesystem::path(path) / "probe.json").string());
  } catch (const std::exception& e) {
    throw UsageError(flag + " " + path + ": " + e.what());
  }
}

bool is_record_file(const std::string& path) {
  try {
    (void)read_record(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void record_input(FileRoles& roles, const std::string& path, const std::string& flag) {
  if (is_store_url(path) || is_sqlite_file(path)) {
    roles.store(path, flag);
  } else {
    roles.input(path, flag, is_record_file);
  }
}

std::vector<LoadedRecord> load_records_or_fail(const std::vector<std::string>& paths) {
  std::vector<std::string> skipped;
  std::vector<LoadedRecord> out;
  try {
    for (const auto& p : paths) {
      std::vector<LoadedRecord> some;
      if (is_store_url(p) || is_sqlite_file(p)) {
        some = ResultsStore(p, ResultsStore::Access::kRead).records();  // a read never changes a store
      } else {
        some = load_records({p}, &skipped);
      }
      out.insert(out.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
    }
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  for (const auto& s : skipped) spdlog::warn("skipped {}", s);
  if (out.empty()) throw UsageError("no gpubench run records in the given paths");
  return out;
}

}  // namespace gpubench::cli
