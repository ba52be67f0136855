#pragma once
// Writing and reading records without ever leaving a partial file behind.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench {



/// Serialises `record` (pretty JSON) and writes it atomically to `path`.
void write_record(const std::string& path, const RunRecord& record);

/// The largest record `read_record` accepts (a two-hour run's step times are a few MB).
inline constexpr size_t kMaxRecordBytes = size_t{256} << 20;
/// The note a record gets when some of its strings were not valid UTF-8.
extern const char* const kInvalidUtf8Note;


/// Reads a record written by write_record. Throws std::runtime_error naming the file on any problem: not a regular
/// file, over kMaxRecordBytes, not JSON, not a record, or impossible values (record_problems).
RunRecord read_record(const std::string& path);
/// The same for text already in memory; `source` names it in errors.
RunRecord parse_record(const std::string& text, const std::string& source);




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

/// A record with the file it came from.
struct LoadedRecord {
  std::string path;
  RunRecord record;
};

/// Reads records from files and directories (*.json that are gpubench run records; other JSON is skipped and named
/// in `skipped`). Throws std::runtime_error for a path that does not exist.
std::vector<LoadedRecord> load_records(const std::vector<std::string>& paths, std::vector<std::string>* skipped);

/// The files `paths` stand for, in the order load_records reads them: a file itself (explicit: an error in it is the
/// caller's error), a folder's `*.json` sorted (an error there skips the file). Throws for a path that does not exist.
struct RecordFile {
  std::string path;
  bool explicit_file = true;
};
std::vector<RecordFile> record_files(const std::vector<std::string>& paths);

}  // namespace gpubench
