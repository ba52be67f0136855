// gpubench: GPU training benchmarks on LibTorch. See README.md and docs/cli.md.

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <string>

#include "cli/commands.h"
#include "gpubench/core/build_info.hpp"
#include "gpubench/core/scenario_loader.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/document.hpp"

namespace {

/// One option per scenario key on `cmd` (`model` as --model; the positional MODEL is added by the caller).
void add_scenario_flags(CLI::App* cmd, std::map<std::string, std::string>& raw,
                        std::map<std::string, std::string>& flag_of, const std::string& suffix) {
  // Help lists the keys every model takes, then each model's own (as the registry declares them).
  const gpubench::ModelOptions models = gpubench::model_options();
  for (const auto& k : gpubench::all_scenario_keys(models)) {
    if (k.key == "model") continue;
    std::string takers;
    for (const auto& [name, options] : models) {
      for (const auto& o : options) {
        if (o.key == k.key) takers += (takers.empty() ? "" : ", ") + name;
      }
    }
    auto* opt = cmd->add_option(k.flag, raw[k.key], k.description + suffix + " [" + k.key + "]");
    if (k.boolean) opt->expected(0, 1);  // `--cuda-graph` alone means true; `--cuda-graph false` also works
    opt->group(k.per_model ? "Keys of " + takers : "Scenario keys (every model)");
    flag_of[k.key] = k.flag;
  }
  cmd->add_option("--model", raw["model"], "Same as the positional MODEL [model]");
  flag_of["model"] = "--model";
}

/// The scenario flags the user gave on `cmd`, as key -> text (a bare boolean flag means "true").
std::map<std::string, std::string> given_flags(CLI::App* cmd, std::map<std::string, std::string>& raw) {
  std::map<std::string, std::string> out;
  for (const auto& k : gpubench::all_scenario_keys(gpubench::model_options())) {
    const auto* opt = cmd->get_option(k.key == "model" ? "--model" : k.flag);
    if (opt->count() > 0) out[k.key] = (k.boolean && raw[k.key].empty()) ? "true" : raw[k.key];
  }
  return out;
}

/// --format (standard output) and --output FILE (repeatable) for a command that prints a document.
void add_output_options(CLI::App* cmd, gpubench::cli::OutputArgs& out, const std::string& default_format) {
  std::string formats;
  for (const auto& f : gpubench::printer_formats()) formats += (formats.empty() ? "" : ", ") + f;
  cmd->add_option("--format", out.format, "Format of what is printed on standard output: " + formats +
                                              " (default " + default_format + ")")
      ->check(CLI::IsMember(gpubench::printer_formats()));
  cmd->add_option("--save", out.files,
                  "Also save it to FILE, in the format its extension names (.md .html .csv .jsonl .json .xml=JUnit "
                  ".txt) or as FORMAT:FILE; repeatable");
}

}  // namespace

int main(int argc, char** argv) {
  using gpubench::cli::kExitUsage;
  // Past a file-size limit (ulimit -f), write() should fail with EFBIG and be reported, not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  auto logger = spdlog::stderr_color_mt("gpubench");
  logger->set_pattern("%^[%l]%$ %v");
  spdlog::set_default_logger(logger);

  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"gpubench: how fast does this chip really train, and why?\n"
               "Trains real models (ResNet-50, ...) on CUDA, ROCm, MPS or the CPU and writes a JSON record."};
  app.set_version_flag("--version", "gpubench " + gpubench::build_info().version + " (" +
                                        gpubench::build_info().git_revision + ")");
  app.require_subcommand(1);
  app.footer("Exit codes: 0 ok; 1 the run failed (the record says why: oom, nan, interrupted, failed);\n"
             "2 usage, scenario or input error; 3 regression found by compare;\n"
             "4 the run ended but its record could not be written where asked (the console says where it went).");

  gpubench::cli::RunArgs run_args;
  run_args.command_line = command_line;
  for (int i = 0; i < argc; ++i) run_args.argv.emplace_back(argv[i]);
  auto* run = app.add_subcommand("run", "Train a model and write a JSON run record");
  run->add_option("MODEL", run_args.model, "Model to train (see `gpubench list`); overrides the file's `model`");
  run->add_option("-c,--config", run_args.config, "Scenario file (YAML or JSON); flags override its values")
      ->check(CLI::ExistingFile);
  run->add_flag("--amp", run_args.amp, "Mixed precision as PyTorch means it: fp16 autocast with dynamic loss scaling on GPUs (torch.autocast + GradScaler), "
                 "bf16 autocast on the CPU; --precision bf16 for bfloat16 on GPUs");
  run->add_flag("--channels-last", run_args.channels_last, "Same as --memory-format channels_last");
  run->add_flag("-q,--quiet", run_args.quiet, "Only warnings, errors and the final summary");
  run->add_option("--repeats", run_args.repeats,
                  "Run the scenario N times, one record each (<output>_r1.json, ...); prints the spread");
  run->add_option("--cooldown", run_args.cooldown, "Pause between repeats: seconds or 10s/1m (default 0)");
  run->add_option("--nproc-per-node", run_args.nproc_per_node,
                  "Data-parallel over N local ranks (GPUs 0..N-1, or CPU processes with --device cpu), started by "
                  "gpubench itself; under torchrun, srun or mpirun leave it out (their environment is read)")
      ->check(CLI::Range(1, 1024));
  run->add_option("--db", run_args.db, "Also add each finished record to this results store (SQLite; see `gpubench history`)");
  // One flag per scenario key (batch_size <-> --batch-size), generated from the key table so they never drift.
  std::map<std::string, std::string> raw;
  add_scenario_flags(run, raw, run_args.override_flag, "");
  run->footer("Scenario keys in files use the names in [brackets]. Exit codes: 0 ok, 1 run failed, 2 usage/scenario "
              "error,\n4 record not written where asked (written elsewhere, or only its epochs stream is left).");

  auto* list = app.add_subcommand("list", "List models and devices");
  auto* info = app.add_subcommand("info", "Show versions, devices, the device's table entry and available telemetry");
  gpubench::cli::InfoArgs info_args;
  info->add_flag("--measure-peak", info_args.measure_peak,
                 "Measure the device's dense matrix-product TFLOP/s per precision and its copy bandwidth "
                 "(the ceilings for devices not in configs/devices/devices.yaml)");
  info->add_option("--device", info_args.device, "Device to describe (default: the first GPU, else the CPU)");
  std::vector<std::string> files;
  auto* validate = app.add_subcommand("validate", "Check scenario files without running them");
  validate->add_option("files", files, "Scenario files (YAML or JSON)")->required();

  gpubench::cli::ScalingArgs scaling_args;
  auto* scaling = app.add_subcommand(
      "scaling", "Run a scenario on 1, 2, ... GPUs and report scaling efficiency, or project it to more GPUs (--project)");
  scaling->add_option("MODEL", scaling_args.model,
                      "Model to train (see `gpubench list`); with --project, the 1-GPU record (then any measured "
                      "multi-GPU records of the same scenario)");
  scaling->add_option("--project", scaling_args.project,
                      "Run nothing: project data-parallel efficiency and epoch time to these GPU counts (e.g. "
                      "4,8,16,64,1024) from a 1-GPU record, with an alpha-beta all-reduce model");
  scaling->add_option("--interconnect", scaling_args.interconnect,
                      "--project: link preset: nvlink4-ib400 (default), nvlink4-ib200, nvlink3-ib200, pcie4-eth100");
  scaling->add_option("--intra-bandwidth", scaling_args.intra_gb_s, "--project: measured in-node all-reduce bus bandwidth (GB/s)");
  scaling->add_option("--inter-bandwidth", scaling_args.inter_gb_s, "--project: measured between-node bus bandwidth per GPU (GB/s)");
  scaling->add_option("--intra-latency", scaling_args.intra_us, "--project: in-node latency per step (us)");
  scaling->add_option("--inter-latency", scaling_args.inter_us, "--project: between-node latency per step (us)");
  scaling->add_option("--gpus-per-node", scaling_args.gpus_per_node, "--project: GPUs per node (default 8)");
  scaling->add_flag("--calibrate", scaling_args.calibrate,
                    "--project: add the first measured multi-GPU record's residual (measured - modelled step) from 2 GPUs on");
  scaling->add_option("--gpus", scaling_args.gpus, "Rank counts to run, comma-separated (default 1,2)");
  scaling->add_option("--out-dir", scaling_args.out_dir,
                      "Folder for the records and scaling.json/scaling.md (default runs/scaling_<model>_<time>)");
  add_output_options(scaling, scaling_args.output, "console");
  scaling->allow_extras();
  scaling->footer("Every other option is passed to each `gpubench run` (e.g. --precision bf16 --batch-size 256, "
                  "which is per GPU; --db STORE adds each record to a results store).\nEfficiency = throughput on N ÷ (N × throughput on 1). Exit 1 if a run failed.\n"
                  "Projection: gpubench scaling --project 2,8,64,1024 runs/x_gpus1.json [runs/x_gpus2.json] "
                  "(the model and its assumptions: docs/performance.md).");

  gpubench::cli::SweepArgs sweep_args;
  std::map<std::string, std::string> sweep_raw;
  auto* sweep = app.add_subcommand("sweep", "Run every combination of list-valued flags; OOM points are recorded");
  sweep->add_option("MODEL", sweep_args.model, "Model to train (see `gpubench list`)")->required();
  sweep->add_option("-c,--config", sweep_args.config, "Scenario file; flags override it")->check(CLI::ExistingFile);
  sweep->add_option("--out-dir", sweep_args.out_dir,
                    "Folder for one record per point plus sweep.md/sweep.json (default runs/sweep_<model>_<time>)");
  add_scenario_flags(sweep, sweep_raw, sweep_args.override_flag, "; a comma list sweeps it");
  add_output_options(sweep, sweep_args.output, "console");
  sweep->add_option("--db", sweep_args.db, "Also add each point's record to this results store (SQLite)");
  sweep->footer("Example: gpubench sweep resnet50 --batch-size 32,64,128,256 --precision fp32,bf16\n"
                "--batch-size max searches for the largest batch that trains. Exit codes: 0 every point ran (ok or "
                "oom), 1 a point failed otherwise, 2 a point is not a valid scenario (nothing ran).");

  gpubench::cli::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "Markdown report and a self-contained HTML page with charts");
  report->add_option("RECORDS", report_args.paths, "Record files or directories of records (optional with --db)");
  report->add_option("--db", report_args.db, "A results store: its runs join the report, with a trend chart of --metric");
  report->add_option("--metric", report_args.metric, "The metric the trend chart draws (default samples_per_s)");
  report->add_option("-o,--out", report_args.out_dir, "Output folder (default report/)");
  report->add_option("--title", report_args.title, "Report title");
  report->add_option("--compare", report_args.compare_json,
                     "JSON from `gpubench compare --json`, drawn as ratio bars with their intervals");
  report->footer("Charts come from scripts/plot_results.py (python3 with matplotlib; Debian: python3-matplotlib).\n"
                 "GPUBENCH_PLOT_PYTHON and GPUBENCH_PLOT_SCRIPT override the interpreter and the script.");

  gpubench::cli::CompareArgs compare_args;
  auto* compare = app.add_subcommand("compare", "Compare candidate runs with baseline runs; exit 3 on a regression");
  compare->add_option("BASE", compare_args.base,
                      "Baseline: a record file, a directory of records, published/<id> (see `gpubench list`), or db:STORE[:last-N] "
                      "(the last N runs, default 5, of each candidate's scenario on the same GPU model in a results store)")->required();
  compare->add_option("NEW", compare_args.candidate, "Candidate: a record file or a directory of records")->required();
  compare->add_option("--threshold", compare_args.threshold,
                      "Significant slowdowns larger than this are regressions (2% or 0.02; default 2%)");
  compare->add_option("--markdown", compare_args.markdown, "Also write a Markdown table here");
  compare->add_option("--junit", compare_args.junit, "Also write JUnit XML here");
  compare->add_option("--json", compare_args.json, "Also write the comparison as JSON here");
  compare->add_option("--seed", compare_args.seed, "Bootstrap seed (default 1)");
  compare->add_option("--metric", compare_args.metric,
                      "Metric to compare, by tag (default samples_per_s: throughput); e.g. joules_per_sample, "
                      "peak_reserved_bytes, step_time_p95_ms, epoch_seconds. `gpubench metrics` lists them; the "
                      "metric says whether higher or lower is better");
  add_output_options(compare, compare_args.output, "console");
  compare->footer("Pairs runs by resolved scenario (repeats are pooled). The 95% interval of the ratio is a bootstrap over "
                  "runs and their steps\n(throughput) or their epochs (other metrics). A regression is a change for the "
                  "worse beyond --threshold.\nExit codes: 0 no regression, 2 usage error, 3 regression.");

  gpubench::cli::ExportArgs export_args;
  auto* exporter = app.add_subcommand("export", "Records as a table: one row per epoch (or run), every metric a column");
  exporter->add_option("RECORDS", export_args.paths, "Record files or directories of records")->required();
  exporter->add_option("--per", export_args.per, "One row per epoch (default) or per run")
      ->check(CLI::IsMember({"epoch", "run"}));
  exporter->add_option("--format", export_args.format,
                       "csv (default), jsonl, json, md, html or console; with --out the extension decides unless given")
      ->check(CLI::IsMember(gpubench::printer_formats()));
  exporter->add_option("-o,--out", export_args.out, "Write here instead of standard output (atomically)");
  exporter->footer("Columns: the run's identity (record, model, device, precision, batch_size, world_size, ...), then "
                   "one column per metric tag\nwith its unit in the name (samples_per_s, step_time_p95_ms, "
                   "joules_per_sample, ...). Loads with pandas.read_csv or read_json(lines=True).");

  auto* db = app.add_subcommand("db", "The results store (SQLite): `gpubench db add STORE RECORDS…`");
  db->require_subcommand(1);
  std::string db_file;
  std::vector<std::string> db_paths;
  auto* db_add = db->add_subcommand("add", "Import records (files or folders); the same record twice is stored once");
  db_add->add_option("STORE", db_file, "SQLite file (created when missing)")->required();
  db_add->add_option("RECORDS", db_paths, "Record files or directories of records")->required();
  gpubench::cli::HistoryArgs history_args;
  auto* history = app.add_subcommand("history", "A metric over time from a results store, one row per run");
  history->add_option("STORE", history_args.store, "SQLite file written by `db add` or `run --db`")->required();
  history->add_option("--model", history_args.model, "Only this model");
  history->add_option("--scenario", history_args.scenario,
                      "Only runs whose resolved scenario has KEY=VALUE (repeatable), e.g. batch_size=256");
  history->add_option("--metric", history_args.metric, "The run-level metric to list (default samples_per_s)");
  history->add_option("--since", history_args.since, "Only runs that started at or after this date (2026-11-01)");
  history->add_flag("--detect", history_args.detect,
                    "Look for step changes in the metric (permutation test, 1 % false alarms per series) and name the "
                    "first run after each with what changed; exit 3 on a change for the worse");
  add_output_options(history, history_args.output, "console");

  gpubench::cli::TraceArgs trace_args;
  auto* trace = app.add_subcommand(
      "trace", "A Chrome trace's kernel profile by category and kernel, or two traces compared kernel by kernel");
  trace->add_option("TRACES", trace_args.paths,
                    "One trace, or two to compare (A then B): gpubench's <record>.trace.json from --profile, or "
                    "torch.profiler's export_chrome_trace")
      ->required()
      ->expected(1, 2);
  trace->add_option("--top", trace_args.top, "Kernels listed (default 25)")->check(CLI::Range(1, 100000));
  add_output_options(trace, trace_args.output, "console");
  trace->footer("Steps are the trace's step markers (gpubench::profiled_step, or torch.profiler's ProfilerStep#N); "
                "times are per step.\nCategories and patterns: docs/performance.md. Compare gpubench with PyTorch on the "
                "same GPU:\n  gpubench trace runs/bert.trace.json pytorch.trace.json");

  gpubench::cli::DatasetMakeArgs dataset_args;
  auto* dataset = app.add_subcommand("dataset", "Data sets for `data: folder` runs: `gpubench dataset make`");
  dataset->require_subcommand(1);
  auto* dataset_make = dataset->add_subcommand(
      "make", "Write an ImageNet-like JPEG ImageFolder (natural-image-like content, ImageNet's sizes, quality 90)");
  dataset_make->add_option("--out", dataset_args.out, "Folder to create (must not exist, or be empty)")->required();
  dataset_make->add_option("--images", dataset_args.images, "Images to write (default 25600)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  dataset_make->add_option("--classes", dataset_args.classes, "Class folders, images spread evenly (default 100)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  dataset_make->add_option("--seed", dataset_args.seed, "Seed: the same seed writes the same files (default 0)");
  dataset_make->add_option("--quality", dataset_args.quality, "JPEG quality (default 90)")->check(CLI::Range(1, 100));
  dataset_make->add_option("--threads", dataset_args.threads, "Encoding threads (default: all cores)")
      ->check(CLI::Range(0, 4096));
  dataset_make->footer("Then: gpubench run resnet50 --data folder --data-path DIR [--decode cpu|gpu] [--data-only]\n"
                       "Statistics (sizes, bits per pixel) are printed and written to DIR/dataset.json.");

  auto* metrics = app.add_subcommand("metrics", "List the metric tags records carry (for compare --metric and export)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }

  auto dispatch = [&]() -> int {
    if (run->parsed()) {
      run_args.overrides = given_flags(run, raw);
      if (run_args.quiet) spdlog::set_level(spdlog::level::warn);
      return gpubench::cli::run_command(run_args);
    }
    if (list->parsed()) return gpubench::cli::list_command();
    if (info->parsed()) return gpubench::cli::info_command(info_args);
    if (validate->parsed()) return gpubench::cli::validate_command(files);
    if (compare->parsed()) return gpubench::cli::compare_command(compare_args);
    if (report->parsed()) return gpubench::cli::report_command(report_args);
    if (exporter->parsed()) return gpubench::cli::export_command(export_args);
    if (metrics->parsed()) return gpubench::cli::metrics_command();
    if (dataset_make->parsed()) return gpubench::cli::dataset_make_command(dataset_args);
    if (trace->parsed()) return gpubench::cli::trace_command(trace_args);
    if (db_add->parsed()) return gpubench::cli::db_add_command(db_file, db_paths);
    if (history->parsed()) return gpubench::cli::history_command(history_args);
    if (sweep->parsed()) {
      sweep_args.overrides = given_flags(sweep, sweep_raw);
      sweep_args.overrides.erase("model");
      sweep_args.self = "/proc/self/exe";
      return gpubench::cli::sweep_command(sweep_args);
    }
    if (scaling->parsed()) {
      scaling_args.run_args = scaling->remaining();
      scaling_args.self = "/proc/self/exe";
      return gpubench::cli::scaling_command(scaling_args);
    }
    return kExitUsage;
  };
  // One boundary for everything a library can throw: a clear message and exit 2, never an abort. (A run turns its
  // own failures into records before they get here.)
  try {
    return dispatch();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  } catch (...) {
    spdlog::error("unexpected error (not a std::exception)");
  }
  return kExitUsage;
}
