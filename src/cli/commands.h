#pragma once
// The gpubench subcommands. Each returns the process exit code (docs/cli.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpubench {
struct RunRecord;
}  // namespace gpubench

namespace gpubench::cli {

/// "20261130-024512": local time, for default output names.
std::string local_timestamp();

/// `text` as part of a file name: letters, digits and `. - _ =` stay, anything else becomes '-'
/// ("cuda:0" -> "cuda-0", "batch_size=64,precision=bf16" -> "batch_size=64-precision=bf16").
std::string file_name_part(std::string text);

/// Moves a `--profile` trace from where the engine wrote it to beside the record, and points the record at it.
void place_profile_trace(RunRecord& record, const std::string& record_path);

/// Exit codes shared by all subcommands.
/// 4: the run ended but its record could not be written where asked (the console says where it went, if anywhere).
enum ExitCode : int { kExitOk = 0, kExitRunFailed = 1, kExitUsage = 2, kExitRegression = 3, kExitRecordNotWritten = 4 };

struct RunArgs {
  std::optional<std::string> model;                 ///< positional MODEL
  std::optional<std::string> config;                ///< --config FILE
  std::map<std::string, std::string> overrides;     ///< scenario key -> flag text, in flag order of the key table
  std::map<std::string, std::string> override_flag; ///< scenario key -> the flag's name, for messages
  bool amp = false;
  bool channels_last = false;
  bool quiet = false;
  int repeats = 1;            ///< run the scenario this many times, one record each (_r1, _r2, ...)
  std::string cooldown = "0"; ///< pause between repeats: seconds or 10s/1m
  int nproc_per_node = 1;     ///< >1: start that many local ranks of this command (data-parallel)
  std::string db;             ///< results store to add each finished record to (empty: none)
  std::string command_line;
  std::vector<std::string> argv;  ///< this process's arguments, argv[0] included (the launcher re-runs them)
};

int run_command(const RunArgs& args);

/// `gpubench dataset make`: an ImageNet-like JPEG ImageFolder (data/synthetic_images.hpp).
struct DatasetMakeArgs {
  int64_t images = 25600;
  int64_t classes = 100;
  uint64_t seed = 0;
  int quality = 90;
  int threads = 0;
  std::string out;
};
int dataset_make_command(const DatasetMakeArgs& args);
int list_command();
struct InfoArgs {
  bool measure_peak = false;
  std::string device;  ///< empty = the first available GPU, else the CPU
};
int info_command(const InfoArgs& args);
int validate_command(const std::vector<std::string>& files);

/// Where a command's document goes: `--format` for standard output, and `--save FILE` (repeatable) for files in
/// the format their extension names (.md .html .csv .jsonl .json .xml .txt) or given as FORMAT:FILE.
struct OutputArgs {
  std::string format;                 ///< standard output's format; empty = the command's default
  std::vector<std::string> files;     ///< FILE or FORMAT:FILE
};

struct ScalingArgs {
  std::string model;                     ///< MODEL to run; with --project, the first record
  std::string project;                   ///< "4,8,16": project these GPU counts from records instead of running
  std::string interconnect = "nvlink4-ib400";  ///< a preset (core/projection.hpp)
  std::optional<double> intra_gb_s, inter_gb_s, intra_us, inter_us;  ///< measured link values override the preset
  std::optional<int64_t> gpus_per_node;
  bool calibrate = false;                ///< add the measured multi-GPU record's residual to the projection
  std::string gpus = "1,2";              ///< rank counts to run, e.g. "1,2,4,8"
  std::string out_dir;                   ///< records and the summary; default runs/scaling_<model>_<time>
  std::vector<std::string> run_args;     ///< passed to every `gpubench run` (scenario flags, --config, ...)
  std::string self;                      ///< path of this binary
  OutputArgs output;                     ///< the summary's formats (scaling.md and scaling.json are always written)
};
int scaling_command(const ScalingArgs& args);

struct SweepArgs {
  std::string model;
  std::optional<std::string> config;
  std::map<std::string, std::string> overrides;      ///< scenario key -> flag text; lists ("32,64") and "max" allowed
  std::map<std::string, std::string> override_flag;  ///< scenario key -> flag name
  std::string out_dir;                               ///< default runs/sweep_<model>_<time>
  std::string self;                                  ///< this binary
  OutputArgs output;                                 ///< the summary's formats (sweep.md/.json are always written)
  std::string db;                                    ///< results store each point's record is added to
};
int sweep_command(const SweepArgs& args);

struct ExportArgs {
  std::vector<std::string> paths;  ///< record files or directories
  std::string per = "epoch";       ///< one row per epoch or per run
  std::string format;              ///< csv (default), jsonl, json, md, html, console
  std::string out;                 ///< file; empty = standard output
};
int export_command(const ExportArgs& args);
/// The standard metrics: tag, unit, direction, where measured, meaning.
int metrics_command();

/// `gpubench db add STORE RECORDS…`: imports records (files or folders); the same record twice is stored once.
int db_add_command(const std::string& store, const std::vector<std::string>& paths);
struct HistoryArgs {
  std::string store;
  std::string model;
  std::vector<std::string> scenario;  ///< KEY=VALUE filters on the resolved scenario
  std::string metric = "samples_per_s";
  std::string since;
  bool detect = false;                ///< look for step changes in the metric (exit 3 on a change for the worse)
  OutputArgs output;
};
int history_command(const HistoryArgs& args);

struct ReportArgs {
  std::vector<std::string> paths;  ///< record files or directories
  std::string out_dir = "report";
  std::string title = "gpubench report";
  std::string compare_json;        ///< optional `gpubench compare --json` output, for the comparison chart
  std::string db;                  ///< results store: its runs join the report, and a trend chart of `metric`
  std::string metric = "samples_per_s";
};
int report_command(const ReportArgs& args);

struct CompareArgs {
  std::string base, candidate;               ///< a record file or a directory of records, each
  std::string threshold = "2%";             ///< "2%" or "0.02"
  std::string markdown, junit, json;         ///< optional output files
  std::string metric = "samples_per_s";      ///< the metric compared (a tag; `gpubench export` lists them)
  uint64_t seed = 1;
  OutputArgs output;
};
int compare_command(const CompareArgs& args);

struct TraceArgs {
  std::vector<std::string> paths;  ///< one or two Chrome traces (gpubench's `<record>.trace.json`, torch.profiler's)
  size_t top = 25;                 ///< kernels listed
  OutputArgs output;
};
/// `gpubench trace`: a Chrome trace's kernel profile, or two compared (where does B spend its time differently?).
int trace_command(const TraceArgs& args);

}  // namespace gpubench::cli

namespace gpubench {
class PrinterMultiplex;
}

namespace gpubench::cli {

/// The printers an OutputArgs asks for: standard output in `format` (or `default_format`), plus each file. Throws
/// std::invalid_argument for an unknown format or a file whose format cannot be told from its name.
void add_outputs(PrinterMultiplex& mux, const OutputArgs& out, const std::string& default_format);

}  // namespace gpubench::cli

namespace gpubench {
struct Document;
struct LoadedRecord;
}

namespace gpubench::cli {

/// Records from files and folders for a command that needs at least one: warns about skipped files; returns kExitOk,
/// or kExitUsage after saying why there are none.
int load_records_for(const std::vector<std::string>& paths, std::vector<LoadedRecord>& out);

/// A sweep's or scaling run's summary: standard output (and --save files) as asked, plus <dir>/<stem>.md and
/// <dir>/<stem>.json. Logs and returns false when something could not be written.
bool print_summary(const Document& d, const OutputArgs& out, const std::string& dir, const std::string& stem);

}  // namespace gpubench::cli
