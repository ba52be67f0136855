// gpubench run: the scenario resolved once (resolve_here), every output location checked, then trained through the
// Runner; each record is written atomically (with fallbacks) and summarised before the next repeat starts.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "gpubench/core/io/files.hpp"
#include "cli/app.h"
#include "cli/commands/commands.h"
#include "cli/interrupt.h"
#include "cli/launcher.h"
#include "cli/logging.h"
#include "cli/run_session.h"
#include "cli/scenario_flags.h"
#include "cli/store_filters.h"
#include "cli/subprocess.h"
#include "gpubench/core/build_info.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/runner/resolve_here.hpp"
#include "gpubench/runner/runner.hpp"

namespace gpubench::cli {

namespace {


/// `--output -`: the record goes to standard output, everything else to standard error.
bool to_stdout(const std::string& path) { return path == "-"; }

/// Moves a `--profile` trace from where the engine wrote it to beside the record, and points the record at it.
void place_profile_trace(RunRecord& record, const std::string& record_path) {
  if (!record.profile || record.profile->trace_path.empty()) return;
  namespace fs = std::filesystem;
  const std::string from = record.profile->trace_path, to = profile_trace_path(record_path);
  if (from == to) return;
  std::error_code ec;
  if (!fs::path(to).parent_path().empty()) fs::create_directories(fs::path(to).parent_path(), ec);
  fs::rename(from, to, ec);
  if (ec) {  // another file system: copy, then remove the original
    ec.clear();
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::remove(from, ec);
  }
  if (ec) {  // the record keeps pointing at the trace where it is (never at a stale one at `to`)
    record.notes.push_back("the profile's trace stays at " + from + " (could not move it to " + to + ": " +
                           ec.message() + ")");
    return;
  }
  record.profile->trace_path = to;
}

/// Writes the record at `path`; where that fails, beside the epochs stream under another name, then in the temporary
/// folder. Returns where it went; throws (naming every attempt) when nowhere worked.
std::string write_record_somewhere(const std::string& path, const RunRecord& record) {
  if (to_stdout(path)) {
    const std::string text = json_text(nlohmann::json(record), 2) + "\n";
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      throw std::runtime_error("could not write the record to standard output");
    }
    return path;
  }
  std::string errors;
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string stem = target.stem().string();
  const std::string pid = std::to_string(::getpid());
  const char* tmp = std::getenv("TMPDIR");
  for (const std::string& where :
       {path, (target.parent_path() / (stem + ".recovered-" + pid + ".json")).string(),
        (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / ("gpubench-" + stem + "-" + pid + ".json")).string()}) {
    try {
      write_record(where, record);
      return where;
    } catch (const std::exception& e) {
      errors += std::string(errors.empty() ? "" : "; ") + e.what();
    }
  }
  throw std::runtime_error(errors);
}

struct RunFlags {
  ScenarioFlags scenario;
  int repeats = 1;
  std::string cooldown = "0";
  int nproc_per_node = 1;
  std::string db;                      ///< as typed (or handed down in GPUBENCH_DB by a parent)
  std::optional<StoreLocation> store;  ///< `db` parsed, before any work
  bool dry_run = false;
};

/// Rank 0's side: a console session per repeat, and each finished record written (with fallbacks) and summarised
/// before the next repeat starts.
class RunWriter {
 public:
  RunWriter(const ResolvedScenario& resolved, const RunFlags& flags, const Context& ctx)
      : resolved_(resolved), flags_(flags), ctx_(ctx) {}

  /// A fresh console session for repeat `index` (the runner asks once per run).
  RunObserver& session_for(int index) {
    index_ = index;
    if (flags_.repeats > 1) spdlog::info("repeat {}/{}", index, flags_.repeats);
    const std::string path = resolved_.record_paths.at(static_cast<size_t>(index - 1));
    if (const char* f = std::getenv(kRecordPathFileEnv)) std::ofstream(f) << path << "\n";  // for the launcher
    session_ = std::make_unique<RunSession>(ctx_.quiet(), to_stdout(path) ? std::string() : path);
    return *session_;
  }

  /// Writes the record where asked (or somewhere it can), prints its summary, and remembers how it went.
  void write(RunRecord& record) {
    const std::string path = resolved_.record_paths.at(static_cast<size_t>(index_ - 1));
    record.scenario.output = path;
    if (!to_stdout(path)) place_profile_trace(record, path);
    all_ok_ = all_ok_ && record.status == RunStatus::kOk;
    std::string written, problem;
    try {
      written = write_record_somewhere(path, record);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (!session_->stream_path().empty() && !written.empty()) {
      std::error_code ec;
      std::filesystem::remove(session_->stream_path(), ec);  // folded into the record
    }
    Document d = run_summary_document(record);
    if (written.empty()) {
      where_asked_ = false;
      d.paragraph("record: not written (" + problem + ")");
      spdlog::error("the run finished but its record could not be written anywhere: {}", problem);
      if (!session_->stream_path().empty()) spdlog::error("its finished epochs are in {}", session_->stream_path());
    } else {
      d.paragraph("record: " + (to_stdout(written) ? std::string("standard output") : written));
      d.data = {{"record_path", written}, {"status", to_string(record.status)}, {"reason", record.reason},
                {"summary", nlohmann::json(record)["summary"]}};
      if (written != path) {
        where_asked_ = false;
        spdlog::error("could not write the record to {}; it was written to {} instead", path, written);
      }
      add_to_store(record, written, d);
    }
    if (record.status != RunStatus::kOk) spdlog::error("run {}: {}", to_string(record.status), record.reason);
    rows_.push_back(RepeatRow{index_, written, record});
    if (flags_.repeats == 1) {
      ctx_.print(d);
    } else if (!ctx_.quiet() && (ctx_.output.format.empty() || ctx_.output.format == "console")) {
      PrinterMultiplex live;  // each repeat as it ends, on the console only; --save files get the repeats table
      live.add_stream("console", ctx_.document_stream);
      live.print(d);
    }
  }

  const std::vector<RepeatRow>& rows() const { return rows_; }
  bool all_ok() const { return all_ok_; }
  bool where_asked() const { return where_asked_; }

 private:
  void add_to_store(const RunRecord& record, const std::string& written, Document& d) {
    if (!flags_.store) return;
    // The store may wait for another writer's lock (up to 30 s): the record's path is named first, --quiet or not,
    // on standard output when it is a console (a CI log killed while waiting still finds the record), else on
    // standard error (standard output then holds one document in its format).
    const bool console = ctx_.output.format.empty() || ctx_.output.format == "console";
    const std::string line = "record written: " + written + " (adding it to the results store " +
                             flags_.store->display() + ")\n";
    FILE* to = console && ctx_.document_stream == stdout && !to_stdout(written) ? stdout : stderr;
    std::fputs(line.c_str(), to);
    std::fflush(to);
    try {
      ResultsStore(*flags_.store).add(record, written);
      d.paragraph("stored in: " + flags_.store->display());
    } catch (const std::exception& e) {
      where_asked_ = false;  // the record is on disk, but not everywhere it was asked to go (exit 4)
      spdlog::error("the record is in {} but could not be added to the results store: {}", written, e.what());
    }
  }

  const ResolvedScenario& resolved_;
  const RunFlags& flags_;
  const Context& ctx_;
  std::unique_ptr<RunSession> session_;
  int index_ = 0;
  std::vector<RepeatRow> rows_;
  bool all_ok_ = true, where_asked_ = true;
};

/// Before any training: every file the run will write can be written (records, their epoch streams and profile
/// traces, the telemetry trace), none of them is the scenario file, the store or another output, and the store opens.
void check_outputs(const ResolvedScenario& r, const std::optional<StoreLocation>& store, const std::string& store_flag,
                   const ScenarioInputs& inputs, const OutputOptions& out) {
  const Scenario& s = r.scenario;
  FileRoles roles;
  roles.input(inputs.config.value_or(""), "--config");
  if (store && !store->is_postgres()) roles.store(store->path(), store_flag);
  for (const auto& path : r.record_paths) {
    if (to_stdout(path)) continue;
    roles.output(path, "output");
    roles.output(epochs_stream_path(path), "output (its epochs stream)");
    if (s.profile) roles.output(profile_trace_path(path), "output (its profile trace)");
  }
  if (!s.telemetry_trace.empty()) roles.output(s.telemetry_trace, "telemetry_trace");
  for (const auto& t : out.targets) roles.output(t.path, "--save");
  try {
    roles.check();
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  auto check = [&s](const std::string& path, const std::string& key) {
    try {
      check_output_location(path);
    } catch (const std::exception& e) {
      throw ScenarioError(s.origins.count(key) ? s.origins.at(key) : Origin{"default " + key, 0, 0}, key, e.what());
    }
  };
  for (const auto& path : r.record_paths) {
    if (!to_stdout(path)) check(path, "output");
  }
  if (!s.telemetry_trace.empty()) check(s.telemetry_trace, "telemetry_trace");
  if (store) check_takes_records(*store, store_flag);  // the store opens (or is made) before anything trains
}

class RunCommand final : public Command {
 public:
  bool has_metrics() const override { return !f_.dry_run; }  // a dry run trains nothing
  void declare(CLI::App& cmd) override {
    f_.scenario.declare(cmd, {ScenarioFlags::Values::kOne, "Model to train (see `gpubench list`); overrides the file's `model`",
                              false, true, true});
    cmd.add_option("--repeats", f_.repeats,
                   "Run the scenario N times, one record each (<output>_r1.json, ...); prints the spread")
        ->check(CLI::Range(1, 10000).description(""))
        ->type_name("INT")->transform(decimal_whole());
    cmd.add_option("--cooldown", f_.cooldown, "Pause between repeats: seconds or 10s/1m (default 0)")
        ->type_name("DURATION");
    cmd.add_option("--nproc-per-node", f_.nproc_per_node,
                   "Data-parallel over N local ranks (GPUs 0..N-1, or CPU processes with --device cpu), started by "
                   "gpubench itself; under torchrun, srun or mpirun leave it out (their environment is read)")
        ->check(CLI::Range(1, 1024).description(""))
        ->type_name("INT")->transform(decimal_whole());
    cmd.add_option("--db", f_.db,
                   "Also add each finished record to this results store (a SQLite file or a postgresql:// URL; see "
                   "`gpubench history`; GPUBENCH_DB when not given)")
        ->type_name("STORE");
    cmd.add_flag("--dry-run", f_.dry_run,
                 "Resolve the scenario (every default, the device, the record path, the data folder) and print it; "
                 "train nothing. Exit 1 when the device is not there (as the run would fail), 2 for a bad scenario");
    cmd.footer("Scenario keys in files use the names in [brackets]. --output - writes the record to standard output "
               "(the summary goes to standard error).");
  }

  int run(Context& ctx) override {
    std::string store_flag = "--db";
    if (f_.db.empty()) {
      const char* handed = std::getenv(kStoreEnv);  // from sweep, scaling or the launcher (an empty one is unset)
      if (handed != nullptr && *handed != '\0') {
        f_.db = handed;
        store_flag = kStoreEnv;
      }
    }
    if (!f_.db.empty()) f_.store = parse_store(f_.db, store_flag);  // `--db ''` never gets here (app.cpp)
    const RankInfo rank = rank_info_from_process_env();  // a malformed launcher environment is a usage error
    const ScenarioInputs inputs = f_.scenario.inputs();
    const double cooldown_s = f_.cooldown != "0" ? parse_duration_s(f_.cooldown, "command line --cooldown") : 0.0;
    if (cooldown_s > 0 && f_.repeats < 2) {
      throw UsageError("--cooldown pauses between repeats and does nothing without --repeats N (N >= 2)");
    }
    const int world = std::max(f_.nproc_per_node, rank.world_size);
    const ResolvedScenario resolved = resolve_here(inputs, rank, world, f_.repeats, rank.rank == 0);
    if (to_stdout(resolved.scenario.output) && f_.repeats > 1) {
      throw UsageError("--output - writes one record to standard output; --repeats needs record files");
    }
    if (f_.dry_run) {
      ctx.print(resolved_document(resolved, inputs.config.value_or("")));
      // The device as the run would find it: a run on a device that is not there fails (exit 1, a failed record),
      // and so does its dry run (without the record).
      if (!resolved.device.available) {
        spdlog::error("the run would fail: device {}: {}", resolved.device.id, resolved.device.reason);
        return kExitRunFailed;
      }
      return kExitOk;
    }
    if (rank.rank == 0) check_outputs(resolved, f_.store, store_flag, inputs, ctx.output);
    if (to_stdout(resolved.scenario.output)) ctx.document_stream = stderr;
    if (f_.nproc_per_node > 1) return launch(ctx, rank, resolved);
    if (rank.distributed()) {
      set_log_pattern("%^[%l]%$ [rank " + std::to_string(rank.rank) + "/" + std::to_string(rank.world_size) + "] %v");
      if (rank.rank > 0) spdlog::set_level(spdlog::level::warn);
    }
    if (build_info().build_type != "Release") {
      spdlog::warn("this gpubench is a {} build: its timings are not representative", build_info().build_type);
    }
    RunWriter writer(resolved, f_, ctx);
    bool others_ok = true, stopped = false;
    {
    const StopOnSignal stop;  // Ctrl-C: the run ends as "interrupted", with its record
    RunOptions options;
    options.command_line = ctx.command_line;
    options.stop_requested = stop.flag();
    options.rank = rank;
    const Runner runner(options);
    const RepeatPlan plan{f_.repeats, cooldown_s};
    RunObserver silent;
    if (rank.rank > 0) {
      // Other ranks train, sample their own GPU and take part in every collective; rank 0 writes the one record.
      runner.run_repeats(resolved, plan, [&silent](int) -> RunObserver& { return silent; }, [&others_ok](RunRecord& r) {
        if (r.status != RunStatus::kOk) spdlog::error("run {}: {}", to_string(r.status), r.reason);
        others_ok = others_ok && r.status == RunStatus::kOk;
      });
    } else {
      runner.run_repeats(
          resolved, plan, [&writer](int i) -> RunObserver& { return writer.session_for(i); },
          [&writer](RunRecord& r) { writer.write(r); });
    }
    stopped = stop.requested();
    }
    if (rank.rank == 0 && f_.repeats > 1) ctx.print(repeats_document(writer.rows()));
    if (!writer.where_asked()) return kExitOutputNotWritten;
    return writer.all_ok() && others_ok && !stopped ? kExitOk : kExitRunFailed;
  }

 private:
  /// `--nproc-per-node N`: this process starts N ranks of the same command and waits for them.
  int launch(const Context& ctx, const RankInfo& rank, const ResolvedScenario& resolved) const {
    if (rank.distributed()) {
      throw UsageError("--nproc-per-node inside a launched job: " + rank.launcher + " already started this process as rank " +
                       std::to_string(rank.rank) + " of " + std::to_string(rank.world_size));
    }
    if (f_.repeats > 1) throw UsageError("--repeats with --nproc-per-node is not supported; run the launcher several times");
    LaunchPlan plan;
    plan.nproc = f_.nproc_per_node;
    plan.scenario = resolved.scenario;
    plan.command_line = ctx.command_line;
    plan.grace_s = std::min(resolved.scenario.ddp_timeout_s, 60.0) + 10.0;
    // The ranks get the store through their environment (GPUBENCH_DB), never on their command line.
    for (size_t i = 0; i < ctx.argv.size(); ++i) {
      const std::string& a = ctx.argv[i];
      if (a == "--nproc-per-node" || a == "--db") {
        ++i;
        continue;
      }
      if (a.rfind("--nproc-per-node=", 0) == 0 || a.rfind("--db=", 0) == 0) continue;
      plan.child_args.push_back(a);
    }
    if (f_.store) plan.store = f_.store->typed();
    return launch_local_ranks(plan);
  }

  RunFlags f_;
};

}  // namespace


CommandSpec run_command() {
  return {"run", "Train a model and write a JSON run record",
          {kExitOk, kExitRunFailed, kExitUsage, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<RunCommand>(); }};
}

}  // namespace gpubench::cli
