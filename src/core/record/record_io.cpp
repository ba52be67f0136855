#include "gpubench/core/record/record_io.hpp"

#include <ctime>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpubench {

namespace fs = std::filesystem;

const char* const kInvalidUtf8Note =
    "some text (a name, path or the command line) was not valid UTF-8: its invalid bytes are written as U+FFFD";




void write_record(const std::string& path, const RunRecord& record) {
  nlohmann::json j = record;
  bool replaced = false;
  std::string text = json_text(j, 2, &replaced);
  if (replaced) {
    j["notes"].push_back(kInvalidUtf8Note);
    text = json_text(j, 2, nullptr);
  }
  write_file_atomic(path, text + "\n");
}



/// A number no record field can hold: beyond the int64 range a float cannot be converted to an integer field without
/// undefined behaviour, and no measured value comes near it. Returns the JSON pointer of the first one.
std::string first_oversized_number(const nlohmann::json& j, const std::string& at) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    return std::isfinite(v) && std::fabs(v) <= 9.2e18 ? "" : at.empty() ? "/" : at;
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      std::string found = first_oversized_number(v, at + "/" + k);
      if (!found.empty()) return found;
    }
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string found = first_oversized_number(j[i], at + "/" + std::to_string(i));
      if (!found.empty()) return found;
    }
  }
  return "";
}


RunRecord parse_record(const std::string& text, const std::string& source) {
  RunRecord r;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const std::string oversized = first_oversized_number(j, "");
    if (!oversized.empty()) throw std::runtime_error("the number at " + oversized + " is beyond what a record holds");
    r = j.get<RunRecord>();
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + source + "' is not a readable gpubench record: " + e.what());
  }
  const std::vector<std::string> problems = record_problems(r);
  if (!problems.empty()) {
    std::string all;
    for (size_t i = 0; i < problems.size() && i < 5; ++i) all += (i ? "; " : "") + problems[i];
    if (problems.size() > 5) all += "; and " + std::to_string(problems.size() - 5) + " more";
    throw std::runtime_error("'" + source + "' holds impossible values: " + all);
  }
  return r;
}

RunRecord read_record(const std::string& path) {
  return parse_record(read_text_file(path, kMaxRecordBytes, "gpubench record"), path);
}



std::optional<RunRecord> recover_from_stream(const std::string& stream_path) {
  std::string text;
  try {
    text = read_text_file(stream_path, kMaxRecordBytes, "epochs stream");
  } catch (const std::exception&) {
    return std::nullopt;
  }
  RunRecord r;
  bool any = false;
  std::vector<double> all_step_ms;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("header")) {
        r = j.at("header").get<RunRecord>();
        r.epochs.clear();
        any = true;
      } else {
        EpochRecord e = j.get<EpochRecord>();
        all_step_ms.insert(all_step_ms.end(), e.step_times_ms.begin(), e.step_times_ms.end());
        r.epochs.push_back(std::move(e));
        any = true;
      }
    } catch (const std::exception&) {
      // A line that is not whole JSON (a writer killed mid-line before this version cut such lines back): skipped.
    }
  }
  if (!any) return std::nullopt;
  summarize_run(r, all_step_ms);
  return r;
}

namespace {
/// A companion file of a record: the record's path without ".json", plus `suffix`.
std::string beside_record(const std::string& record_path, const char* suffix) {
  fs::path p(record_path);
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + suffix;
}
}  // namespace

std::string epochs_stream_path(const std::string& record_path) { return beside_record(record_path, ".epochs.jsonl"); }

std::string profile_trace_path(const std::string& record_path) { return beside_record(record_path, ".trace.json"); }

std::vector<RecordFile> record_files(const std::vector<std::string>& paths) {
  std::vector<RecordFile> out;
  for (const auto& path : paths) {
    const fs::path p(path);
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(p)) {
        if (entry.path().extension() == ".json") files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) out.push_back(RecordFile{f.string(), false});
    } else if (fs::exists(p)) {
      out.push_back(RecordFile{path, true});
    } else {
      throw std::runtime_error("'" + path + "' does not exist");
    }
  }
  return out;
}

std::vector<LoadedRecord> load_records(const std::vector<std::string>& paths, std::vector<std::string>* skipped) {
  std::vector<LoadedRecord> out;
  for (const auto& f : record_files(paths)) {
    try {
      out.push_back(LoadedRecord{f.path, read_record(f.path)});
    } catch (const std::exception& e) {
      if (f.explicit_file) throw;
      if (skipped != nullptr) skipped->push_back(e.what());
    }
  }
  return out;
}

}  // namespace gpubench
