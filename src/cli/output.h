#pragma once
// Where a command's output goes, in one vocabulary for every command:
//   --format F          the format of what is printed on standard output (console, md, html, csv, jsonl, json, junit)
//   --save [F:]FILE     also write it to FILE, in the format its extension names or F (repeatable)
//   --out PATH          the command's product: run's record, report's and sweep's folder, export's table, a data set
// Unknown formats and extensions are usage errors (exit 2) naming the known ones; every location is checked before
// the command works.

#include <string>
#include <vector>

namespace gpubench {
class PrinterMultiplex;
class FileRoles;
struct LoadedRecord;
}  // namespace gpubench

namespace gpubench::cli {

struct SaveTarget {
  std::string format;  ///< a printer format
  std::string path;
};

struct OutputOptions {
  std::string format;                 ///< standard output's format; empty = the command's default
  std::string default_format = "console";
  std::vector<std::string> save;      ///< as typed: FILE or FORMAT:FILE
  std::vector<SaveTarget> targets;    ///< `save` resolved (resolve_outputs)
};

/// The format of an output file: FORMAT:FILE's prefix, else its extension. Throws UsageError naming `flag`, the file
/// and the known formats and extensions when neither says one.
SaveTarget save_target(const std::string& spec, const std::string& flag);

/// Checks --format and every --save (format known, location writable, no two saves to one file) and fills
/// `targets`. Throws UsageError.
void resolve_outputs(OutputOptions& out);

/// Adds one more save target in `format` (an old flag such as compare's --junit FILE), checked as --save's are.
void add_save(OutputOptions& out, const std::string& format, const std::string& path, const std::string& flag);

/// The printers `out` asks for: standard output (or `stream_name` "-" / "stderr") in its format, then each target.
void add_outputs(PrinterMultiplex& mux, const OutputOptions& out, bool to_stderr);

/// "md, html, csv, jsonl, json, junit, console" and ".md .html .csv .jsonl .json .xml .txt" for messages.
std::string known_formats();
std::string known_extensions();

/// A folder a command writes into (sweep's and scaling's --out): made here, before any work, and a file can be made
/// in it; a path that is a file or a folder that cannot be made or written is a usage error naming `flag`.
void make_output_folder(const std::string& path, const std::string& flag);

/// Whether `path` is a gpubench run record (FileRoles' test of a file in a folder of records: a report's groups.json
/// beside the records is not one).
bool is_record_file(const std::string& path);

/// Records from files, folders and results stores (a SQLite file or a postgresql:// URL: every run it holds, oldest
/// first) for a command that needs at least one; skipped files are warned about. Throws UsageError when a path does not exist, a store
/// cannot be read, or nothing is a record.
std::vector<LoadedRecord> load_records_or_fail(const std::vector<std::string>& paths);

/// Declares `path` as what load_records_or_fail reads: a results store (no output may be it or its journals) or
/// record files and folders.
void record_input(FileRoles& roles, const std::string& path, const std::string& flag);

}  // namespace gpubench::cli
