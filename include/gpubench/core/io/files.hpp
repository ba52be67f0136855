#pragma once
// Files without surprises: bounded reading that refuses what is not a regular file, atomic writes that never leave a
// partial file, JSON Lines appends that never end in a partial line, and the pre-flight check of an output location.
// Generic: records, scenarios, traces and every command's outputs use it.

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/io/redact.hpp"  // without_passwords: what a message may show of a store

namespace gpubench {

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed and fsync'ed, then
/// renamed over `path`. Parent directories are created. On failure throws std::runtime_error and leaves
/// neither a temporary file nor a changed `path`.
void write_file_atomic(const std::string& path, const std::string& text);

/// Now, in UTC, as records write times: "2026-11-30T16:55:02Z".
std::string utc_now_iso8601();

/// `j` as JSON text (`indent` as nlohmann's dump). Strings that are not valid UTF-8 (a file name or command line
/// with arbitrary bytes) never make this throw: their bad bytes become U+FFFD, and `replaced` says so.
std::string json_text(const nlohmann::json& j, int indent = -1, bool* replaced = nullptr);

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

/// read_text_file, and a gzip'd file (by its magic bytes, whatever its name: `x.trace.json.gz`) is decompressed,
/// with `max_bytes` bounding the decompressed text (a gzip bomb stops there). Throws FileReadError.
std::string read_text_file_or_gzip(const std::string& path, size_t max_bytes, const std::string& what);

/// Appends one JSON object as a line to `path` and fsyncs it (JSON Lines), creating the file if needed. A write that
/// fails part-way (full disk, file-size limit) is cut back, so the file never ends in a partial line; the error
/// names the file and errno.
void append_json_line(const std::string& path, const nlohmann::json& line);

/// Before any training: `path` can become a record (not a directory, its folder exists or can be made, and a
/// temporary file can be created there for the atomic rename). Throws std::runtime_error saying what is wrong.
void check_output_location(const std::string& path);

/// True when `a` and `b` are one file: the same device and inode when both exist (symlinks and hard links
/// included), else the same absolute path once the symlinks of the part that exists are resolved.
bool same_file(const std::string& a, const std::string& b);

/// Whether `path` is an SQLite file (its 16-byte header): commands given records read a results store there instead
/// of failing to parse it as JSON. Says nothing about whether it is a gpubench store (opening it does).
bool is_sqlite_file(const std::string& path);

/// Whether `location` names a PostgreSQL results store (a postgresql:// or postgres:// URL, the scheme in any case)
/// rather than a file (store/location.hpp).
bool is_store_url(const std::string& location);

/// What one command reads and writes, for the rule every command keeps: no output is the same file as an input, as
/// a results store (or its -wal, -shm and -journal files), or as another output. Inputs are named before outputs
/// are checked; a folder input stands for the `*.json` files directly in it that `member` accepts (the records the
/// record readers take; by default every `*.json`), asked only of an existing output that lies in that folder.
class FileRoles {
 public:
  /// A file (or a folder of records) the command reads; `flag` names it in messages ("RECORDS", "--config").
  void input(const std::string& path, const std::string& flag,
             std::function<bool(const std::string&)> member = nullptr);
  /// A SQLite results store: no output may be it or one of its journal files.
  void store(const std::string& path, const std::string& flag);
  /// A file the command writes. Empty paths are refused here (an empty name must never fall back to a default).
  void output(const std::string& path, const std::string& flag);
  /// Throws std::runtime_error naming both flags and files at the first clash.
  void check() const;

 private:
  struct Use {
    std::string path, flag;
    bool is_store = false;
    std::function<bool(const std::string&)> member;
  };
  std::vector<Use> inputs_, outputs_;
};

}  // namespace gpubench
