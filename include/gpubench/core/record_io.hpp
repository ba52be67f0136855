#pragma once
// Writing and reading records without ever leaving a partial file behind.

#include <string>

#include "gpubench/core/run_record.hpp"

namespace gpubench {

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed and fsync'ed, then
/// renamed over `path`. Parent directories are created. On failure throws std::runtime_error and leaves
/// neither a temporary file nor a changed `path`.
void write_file_atomic(const std::string& path, const std::string& text);

/// Serialises `record` (pretty JSON) and writes it atomically to `path`.
void write_record(const std::string& path, const RunRecord& record);

/// Reads a record written by write_record. Throws std::runtime_error naming the file on any problem.
RunRecord read_record(const std::string& path);

/// Appends one JSON object as a line to `path` and flushes it (JSON Lines), creating the file if needed.
void append_json_line(const std::string& path, const nlohmann::json& line);

/// The JSON Lines companion of a record path: "runs/x.json" -> "runs/x.epochs.jsonl".
std::string epochs_stream_path(const std::string& record_path);

}  // namespace gpubench
