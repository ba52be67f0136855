#pragma once
// Run records inside a committed .tar.gz (tests/fixtures): a ustar stream, each member a 512-byte header naming it
// and giving its size in octal, the member padded to 512 bytes. Members that are not run records are skipped.

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench::testing {

/// {member name, record} for every .json member of the archive that reads as a run record.
inline std::vector<std::pair<std::string, RunRecord>> archive_records(const std::string& path) {
  std::vector<std::pair<std::string, RunRecord>> out;
  const std::string tar = read_text_file_or_gzip(path, 256u << 20, "records archive");
  for (size_t at = 0; at + 512 <= tar.size();) {
    const std::string name = tar.substr(at, 100).c_str();
    if (name.empty()) break;  // the archive's closing zero blocks
    const size_t size = std::strtoul(tar.substr(at + 124, 12).c_str(), nullptr, 8);
    const char type = tar[at + 156];
    if ((type == '0' || type == '\0') && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      try {
        out.emplace_back(name, nlohmann::json::parse(tar.substr(at + 512, size)).get<RunRecord>());
      } catch (const std::exception&) {
        // not a record (a summary, a compare result)
      }
    }
    at += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

/// Every run record under tests/fixtures/records/: the JSON files, and those inside .tar.gz archives (h200-peaks.tar.gz
/// holds one H200 record per distinct scenario from the measurements of 2026-11-29 to 12-03).
inline std::vector<std::pair<std::string, RunRecord>> committed_records() {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, RunRecord>> out;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(GPUBENCH_FIXTURES) / "records")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".json" && entry.file_size() <= (4u << 20)) {
      try {
        out.emplace_back(path, read_record(path));
      } catch (const std::exception&) {
        // not a record (a summary, a compare result)
      }
    } else if (path.size() > 7 && path.compare(path.size() - 7, 7, ".tar.gz") == 0) {
      for (auto& [name, r] : archive_records(path)) out.emplace_back(path + ":" + name, std::move(r));
    }
  }
  return out;
}

}  // namespace gpubench::testing
