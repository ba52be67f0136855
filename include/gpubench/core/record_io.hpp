#pragma once
// Writing and reading records without ever leaving a partial file behind.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "gpubench/core/run_record.hpp"

namespace gpubench {

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed and fsync'ed, then
/// renamed over `path`. Parent directories are created. On failure throws std::runtime_error and leaves
/// neither a temporary file nor a changed `path`.
void write_file_atomic(const std::string& path, const std::string& text);

/// Now, in UTC, as records write times: "2026-11-30T16:55:02Z".
std::string utc_now_iso8601();

/// Serialises `record` (pretty JSON) and writes it atomically to `path`.
void write_record(const std::string& path, const RunRecord& record);

/// The largest record `read_record` accepts (a two-hour run's step times are a few MB).
inline constexpr size_t kMaxRecordBytes = size_t{256} << 20;
/// The note a record gets when some of its strings were not valid UTF-8.
extern const char* const kInvalidUtf8Note;

/// `j` as JSON text (`indent` as nlohmann's dump). Strings that are not valid UTF-8 (a file name or command line
/// with arbitrary bytes) never make this throw: their bad bytes become U+FFFD, and `replaced` says so.
std::string json_text(const nlohmann::json& j, int indent = -1, bool* replaced = nullptr);

/// Reads a record written by write_record. Throws std::runtime_error naming the file on any problem: not a regular
/// file, over kMaxRecordBytes, not JSON, not a record, or impossible values (record_problems).
RunRecord read_record(const std::string& path);
/// The same for text already in memory; `source` names it in errors.
RunRecord parse_record(const std::string& text, const std::string& source);
/// A file that cannot be read as asked; what() is "'<path>' <problem>", problem() the part without the path.
class FileReadError : public std::runtime_error {
 public:
  FileReadError(const std::string& path, std::string problem);
  const std::string& problem() const { return problem_; }

 private:
  std::string problem_;
};

/// At most `max_bytes` of a regular file (FIFOs, devices and directories are refused, never read). `what` names
/// the kind of file in messages ("gpubench record", "scenario file"). Throws FileReadError.
std::string read_text_file(const std::string& path, size_t max_bytes, const std::string& what);

/// Appends one JSON object as a line to `path` and fsyncs it (JSON Lines), creating the file if needed. A write that
/// fails part-way (full disk, file-size limit) is cut back, so the file never ends in a partial line; the error
/// names the file and errno.
void append_json_line(const std::string& path, const nlohmann::json& line);

/// Before any training: `path` can become a record (not a directory, its folder exists or can be made, and a
/// temporary file can be created there for the atomic rename). Throws std::runtime_error saying what is wrong.
void check_output_location(const std::string& path);

/// What a run's epochs stream holds: its header line (`{"header": <record without epochs>}`, written at the start)
/// and every finished epoch, with the summary recomputed from them; empty when the file is missing or holds neither.
/// For a run whose process died before writing its record.
std::optional<RunRecord> recover_from_stream(const std::string& stream_path);

/// The JSON Lines companion of a record path: "runs/x.json" -> "runs/x.epochs.jsonl".
std::string epochs_stream_path(const std::string& record_path);
/// Where a record's `--profile` Chrome trace goes: "runs/x.json" -> "runs/x.trace.json".
std::string profile_trace_path(const std::string& record_path);

/// The largest Chrome trace `gpubench trace` reads (a few profiled steps of a large model are tens of MiB).
inline constexpr size_t kMaxTraceBytes = size_t{1} << 30;

}  // namespace gpubench
