#include "cli/commands.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <fmt/format.h>

#include "cli/launcher.h"
#include "cli/run_session.h"
#include "gpubench/core/json_optional.hpp"
#include "gpubench/core/launch.hpp"
#include "gpubench/core/published.hpp"
#include "gpubench/core/build_info.hpp"
#include "gpubench/core/device_table.hpp"
#include "gpubench/core/record_io.hpp"
#include "gpubench/core/scenario_loader.hpp"
#include "gpubench/core/store.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/runner/runner.hpp"
#include "gpubench/core/compare.hpp"
#include "gpubench/data/image_folder.hpp"
#include "gpubench/data/loader.hpp"
#include "gpubench/data/synthetic_images.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench::cli {

std::string local_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string file_name_part(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != '=') c = '-';
  }
  return text;
}

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int sig) {
  if (g_stop.exchange(true)) {
    std::signal(sig, SIG_DFL);  // a second Ctrl-C ends the process at once
    std::raise(sig);
  }
}


std::string default_output(const Scenario& s, const std::string& precision) {
  return fmt::format("runs/{}_{}_{}_bs{}_{}.json", file_name_part(s.model), file_name_part(s.device), precision,
                     s.batch_size ? std::to_string(*s.batch_size) : "default", local_timestamp());
}

/// Builds the scenario from --config, the positional model and flags; throws ScenarioError.
Scenario build_scenario(const RunArgs& a) {
  ScenarioLoader loader(model_options());
  Scenario s;
  if (a.config) loader.load_file(*a.config, s);
  if (a.model) loader.apply_override("model", *a.model, "MODEL", s);
  if (a.amp && a.overrides.count("precision")) {
    throw ScenarioError(Origin{"command line --amp", 0, 0}, "precision",
                        "--amp and --precision both set the precision; give one of them");
  }
  if (a.amp) loader.apply_override("precision", "amp", "--amp", s);
  if (a.channels_last) loader.apply_override("memory_format", "channels_last", "--channels-last", s);
  for (const auto& [key, value] : a.overrides) loader.apply_override(key, value, a.override_flag.at(key), s);
  loader.check(s);
  return s;
}

}  // namespace

namespace {

/// "runs/x.json" -> "runs/x_r2.json" when repeating; unchanged for a single run.
std::string repeat_path(const std::string& path, int index, int count) {
  if (count <= 1) return path;
  // Only the file name changes: "a.json/run" or "runs.json/x.json" keep their folders.
  std::filesystem::path p(path);
  const std::string stem = p.extension() == ".json" ? p.stem().string() : p.filename().string();
  p.replace_filename(stem + "_r" + std::to_string(index) + ".json");
  return p.string();
}

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

void print_run_summary(const RunRecord& record) {
  std::fputs(make_printer("console")->render(run_summary_document(record)).c_str(), stdout);
}


/// Rank 0's side of `gpubench run`: a console session per repeat, and each finished record written (with fallbacks)
/// and summarised before the next repeat starts.
class RunWriter {
 public:
  RunWriter(const Scenario& scenario, const RunArgs& args) : scenario_(scenario), args_(args) {}

  /// A fresh console session for repeat `index` (the runner asks once per run).
  RunObserver& session_for(int index) {
    index_ = index;
    if (args_.repeats > 1) spdlog::info("repeat {}/{}", index, args_.repeats);
    session_ = std::make_unique<RunSession>(args_.quiet, [this, index](const RunRecord& h) {
      const std::string path = repeat_path(
          scenario_.output.empty() ? default_output(h.scenario, h.precision.resolved) : scenario_.output, index,
          args_.repeats);
      if (const char* f = std::getenv(kRecordPathFileEnv)) std::ofstream(f) << path << "\n";  // for the launcher
      return path;
    });
    return *session_;
  }

  /// Writes the record where asked (or somewhere it can), prints its summary, and remembers how it went.
  void write(RunRecord& record) {
    std::string path = session_->output_path();
    if (path.empty()) {
      path = repeat_path(scenario_.output.empty() ? default_output(record.scenario, record.scenario.precision)
                                                  : scenario_.output,
                         index_, args_.repeats);
    }
    record.scenario.output = path;
    place_profile_trace(record, path);
    if (record.status == RunStatus::kOk) rates_.push_back(record.summary.samples_per_s);
    all_ok_ = all_ok_ && record.status == RunStatus::kOk;
    std::string written;
    try {
      written = write_record_somewhere(path, record);
    } catch (const std::exception& e) {
      where_asked_ = false;
      print_run_summary(record);
      std::printf("record: not written (%s)\n", e.what());
      spdlog::error("the run finished but its record could not be written anywhere: {}", e.what());
      if (!session_->stream_path().empty()) spdlog::error("its finished epochs are in {}", session_->stream_path());
      return;
    }
    std::error_code ec;
    if (!session_->stream_path().empty()) std::filesystem::remove(session_->stream_path(), ec);  // folded in
    print_run_summary(record);
    std::printf("record: %s\n", written.c_str());
    if (written != path) {
      where_asked_ = false;
      spdlog::error("could not write the record to {}; it was written to {} instead", path, written);
    }
    if (record.status != RunStatus::kOk) spdlog::error("run {}: {}", to_string(record.status), record.reason);
    if (!args_.db.empty()) {
      try {
        ResultsStore(args_.db).add(record, written);
        std::printf("stored in: %s\n", args_.db.c_str());
      } catch (const std::exception& e) {
        where_asked_ = false;  // the record is on disk, but not everywhere it was asked to go (exit 4)
        spdlog::error("the record is in {} but could not be added to the results store: {}", written, e.what());
      }
    }
  }

  const std::vector<double>& rates() const { return rates_; }  ///< samples/s of each successful repeat
  bool all_ok() const { return all_ok_; }
  bool where_asked() const { return where_asked_; }

 private:
  const Scenario& scenario_;
  const RunArgs& args_;
  std::unique_ptr<RunSession> session_;
  int index_ = 0;
  std::vector<double> rates_;
  bool all_ok_ = true, where_asked_ = true;
};

/// Before any training: every file the run will write can be written (record, per-repeat records, trace).
void check_outputs(const Scenario& s, int repeats) {
  auto check = [&s](const std::string& path, const std::string& key) {
    try {
      check_output_location(path);
    } catch (const std::exception& e) {
      throw ScenarioError(s.origins.count(key) ? s.origins.at(key) : Origin{"default " + key, 0, 0}, key, e.what());
    }
  };
  for (int i = 1; i <= repeats; ++i) check(repeat_path(s.output.empty() ? "runs/record.json" : s.output, i, repeats), "output");
  if (!s.telemetry_trace.empty()) check(s.telemetry_trace, "telemetry_trace");
}

/// `data: folder`: the folder is an ImageFolder with readable JPEGs and at least one batch per rank, before any
/// training (exit 2 otherwise). The engine checks again with the resolved batch size.
void check_data(const Scenario& s, int world) {
  if (s.data != "folder") return;
  const auto origin = [&s](const std::string& key) {
    return s.origins.count(key) ? s.origins.at(key) : Origin{"default " + key, 0, 0};
  };
  try {
    const data::ImageFolder folder = data::scan_image_folder(s.data_path);
    data::probe_folder(folder);
    const auto images = static_cast<int64_t>(folder.samples.size());
    const int64_t per_epoch = s.is_set("dataset_size") ? std::min(s.dataset_size, images) : images;
    if (s.is_set("dataset_size") && s.dataset_size > images) {
      throw data::DatasetError("dataset_size " + std::to_string(s.dataset_size) + " exceeds the " +
                               std::to_string(images) + " images in '" + s.data_path + "'");
    }
    if (s.batch_size && per_epoch / std::max(1, world) < *s.batch_size * s.grad_accumulation) {
      throw data::DatasetError("'" + s.data_path + "' has " + std::to_string(per_epoch) +
                               " images per epoch, fewer than one batch of " +
                               std::to_string(*s.batch_size * s.grad_accumulation) +
                               (world > 1 ? " on each of " + std::to_string(world) + " ranks" : std::string()));
    }
  } catch (const data::DatasetError& e) {
    throw ScenarioError(origin("data_path"), "data_path", e.what());
  }
}

}  // namespace

int dataset_make_command(const DatasetMakeArgs& args) {
  data::SynthOptions o;
  o.images = args.images;
  o.classes = args.classes;
  o.seed = args.seed;
  o.quality = args.quality;
  o.threads = args.threads;
  const bool tty = isatty(STDERR_FILENO) != 0;
  data::SynthStats st;
  try {
    st = data::make_synthetic_dataset(args.out, o, [tty](int64_t done, int64_t total) {
      if (tty) std::fprintf(stderr, "\r\033[Kwriting images: %lld/%lld", static_cast<long long>(done), static_cast<long long>(total));
    });
  } catch (const std::exception& e) {
    if (tty) std::fputs("\r\033[K", stderr);
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  if (tty) std::fputs("\r\033[K", stderr);
  std::printf("wrote %lld images in %lld classes to %s in %.1f s\n", static_cast<long long>(st.images),
              static_cast<long long>(st.classes), args.out.c_str(), st.seconds);
  std::printf("file size: mean %.1f KB, median %.1f KB, min %.1f KB, max %.1f KB, total %.1f MB\n",
              static_cast<double>(st.bytes_total) / static_cast<double>(st.images) / 1e3,
              static_cast<double>(st.bytes_median) / 1e3, static_cast<double>(st.bytes_min) / 1e3,
              static_cast<double>(st.bytes_max) / 1e3, static_cast<double>(st.bytes_total) / 1e6);
  std::printf("mean size %.0f x %.0f px, %.2f bits per pixel (quality %d, 4:2:0); statistics in %s/dataset.json\n",
              st.mean_width, st.mean_height, st.bits_per_pixel, args.quality, args.out.c_str());
  return kExitOk;
}

int run_command(const RunArgs& args) {
  Scenario scenario;
  double cooldown_s = 0;
  if (args.repeats < 1 || args.repeats > 10000) {
    spdlog::error("--repeats must be from 1 to 10000");
    return kExitUsage;
  }
  try {
    scenario = build_scenario(args);
    if (args.cooldown != "0") cooldown_s = parse_duration_s(args.cooldown, "command line --cooldown");
    if (rank_info_from_process_env().rank == 0) {
      check_outputs(scenario, args.repeats);  // rank 0 writes them
      check_data(scenario, std::max(args.nproc_per_node, rank_info_from_process_env().world_size));
      if (!args.db.empty()) ResultsStore probe(args.db);  // the store opens (or is created) before anything trains
    }
  } catch (const ScenarioError& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  RankInfo rank;
  try {
    rank = rank_info_from_process_env();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  if (args.nproc_per_node > 1) {
    if (rank.distributed()) {
      spdlog::error("--nproc-per-node inside a launched job: {} already started this process as rank {} of {}",
                    rank.launcher, rank.rank, rank.world_size);
      return kExitUsage;
    }
    if (args.repeats > 1) {
      spdlog::error("--repeats with --nproc-per-node is not supported; run the launcher several times");
      return kExitUsage;
    }
    LaunchPlan plan;
    plan.nproc = args.nproc_per_node;
    plan.scenario = scenario;
    plan.command_line = args.command_line;
    plan.grace_s = std::min(scenario.ddp_timeout_s, 60.0) + 10.0;
    for (size_t i = 0; i < args.argv.size(); ++i) {
      const std::string& a = args.argv[i];
      if (a == "--nproc-per-node") {
        ++i;
        continue;
      }
      if (a.rfind("--nproc-per-node=", 0) == 0) continue;
      plan.child_args.push_back(a);
    }
    return launch_local_ranks(plan);
  }
  if (rank.distributed()) {
    spdlog::set_pattern("%^[%l]%$ [rank " + std::to_string(rank.rank) + "/" + std::to_string(rank.world_size) + "] %v");
    if (rank.rank > 0) spdlog::set_level(spdlog::level::warn);
  }
  if (build_info().build_type != "Release") {
    spdlog::warn("this gpubench is a {} build: its timings are not representative", build_info().build_type);
  }

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  RunOptions options;
  options.command_line = args.command_line;
  options.stop_requested = &g_stop;
  options.rank = rank;
  const Runner runner(options);
  const RepeatPlan plan{args.repeats, cooldown_s};
  RunWriter writer(scenario, args);
  RunObserver silent;
  bool others_ok = true;
  if (rank.rank > 0) {
    // Other ranks train, sample their own GPU and take part in every collective; rank 0 writes the one record.
    runner.run_repeats(scenario, plan, [&silent](int) -> RunObserver& { return silent; }, [&others_ok](RunRecord& r) {
      if (r.status != RunStatus::kOk) spdlog::error("run {}: {}", to_string(r.status), r.reason);
      others_ok = others_ok && r.status == RunStatus::kOk;
    });
  } else {
    runner.run_repeats(
        scenario, plan,
        [&writer](int i) -> RunObserver& { return writer.session_for(i); },
        [&writer](RunRecord& r) { writer.write(r); });
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const std::vector<double>& rates = writer.rates();
  if (rates.size() > 1) {
    const StepTimeStats s = summarize_step_times(rates);  // the step-time statistics, applied to samples/s
    std::printf("repeats: %zu, samples/s mean %.1f, min %.1f, max %.1f, coefficient of variation %.2f%%\n",
                rates.size(), s.mean_ms, s.min_ms, s.max_ms, s.stdev_ms / s.mean_ms * 100.0);
  }
  if (!writer.where_asked()) return kExitRecordNotWritten;
  return writer.all_ok() && others_ok && !g_stop.load() ? kExitOk : kExitRunFailed;
}

int list_command() {
  std::printf("Models:\n");
  for (const auto& m : available_models()) {
    std::printf("  %-12s %s; default batch %lld, %s, unit: %s\n", m.name.c_str(), m.description.c_str(),
                static_cast<long long>(m.default_batch_size), m.default_optimizer.c_str(), m.sample_unit.c_str());
  }
  std::printf("Published references (gpubench compare published/<id> RUN.json):\n");
  for (const auto& r : published_references()) {
    std::printf("  %-28s %s, %s%s\n", r.id.c_str(), r.device.c_str(), r.model.c_str(),
                r.batch_size ? (", batch " + std::to_string(*r.batch_size)).c_str() : "");
  }
  std::printf("Devices:\n");
  for (const auto& d : list_devices()) {
    std::string detail = d.name;
    if (d.memory_bytes) detail += ", " + format_bytes(*d.memory_bytes);
    if (!d.compute_capability.empty()) detail += ", compute capability " + d.compute_capability;
    if (!d.note.empty()) detail += (detail.empty() ? "" : ", ") + d.note;
    std::printf("  %-12s %s%s\n", d.id.c_str(), d.available ? "" : "(unavailable) ", detail.c_str());
  }
  return kExitOk;
}

int info_command(const InfoArgs& args) {
  std::string device = args.device.empty() ? "cpu" : args.device;
  for (const auto& d : list_devices()) {
    if (!args.device.empty()) break;
    if (d.available && d.id != "cpu" && d.id != "mps") {
      device = d.id;
      break;
    }
  }
  const EnvironmentRecord e = describe_environment(device);
  auto row = [](const char* k, const std::string& v) { std::printf("  %-22s %s\n", k, v.empty() ? "-" : v.c_str()); };
  std::printf("gpubench %s (%s, %s build, %s)\n", e.gpubench_version.c_str(), e.git_revision.c_str(),
              e.build_type.c_str(), e.compiler.c_str());
  row("host", e.hostname);
  row("os", e.os);
  row("cpu", e.cpu_model + " (" + std::to_string(e.cpu_cores) + " threads)");
  row("libtorch", e.libtorch_version);
  row("cuda runtime", e.cuda_runtime_version);
  row("cuda driver", e.driver_version);
  row("cudnn", e.cudnn_version);
  row("default device", e.device + (e.device_name.empty() ? "" : " (" + e.device_name + ")"));
  if (e.device_memory_bytes) row("device memory", format_bytes(*e.device_memory_bytes));
  row("compute capability", e.compute_capability);
  const DeviceSpec* spec = find_device_spec(e.device_name);
  if (spec != nullptr) {
    auto tf = [](const std::optional<double>& v) { return v ? fmt::format("{:g}", *v) : std::string("-"); };
    row("device table", fmt::format("{}: dense TFLOP/s fp32 {} / tf32 {} / bf16 {} / fp16 {}; {} GB/s; {} W", spec->name,
                                    tf(spec->fp32_tflops), tf(spec->tf32_tflops), tf(spec->bf16_tflops),
                                    tf(spec->fp16_tflops), tf(spec->bandwidth_gbs), tf(spec->tdp_w)));
    row("  source", spec->source);
  } else {
    row("device table", "no entry for '" + e.device_name + "': MFU is not reported; --measure-peak gives ceilings");
  }
  if (args.measure_peak) {
    std::printf("Measured ceilings on %s (takes a few seconds):\n", device.c_str());
    std::fflush(stdout);
    try {
      const PeakMeasurement m = measure_peaks(device);
      for (const auto& [mode, tflops] : m.tflops) {
        std::string vs;
        if (spec != nullptr && spec->peak_tflops(mode)) vs = fmt::format(" ({:.0f}% of the table's {:g})", 100.0 * tflops / *spec->peak_tflops(mode), *spec->peak_tflops(mode));
        std::printf("  %-22s %.1f TFLOP/s%s\n", (mode + " matmul").c_str(), tflops, vs.c_str());
      }
      std::string vs;
      if (spec != nullptr && spec->bandwidth_gbs) vs = fmt::format(" ({:.0f}% of the table's {:g} GB/s)", 100.0 * m.copy_gbs / *spec->bandwidth_gbs, *spec->bandwidth_gbs);
      std::printf("  %-22s %.0f GB/s%s\n", "device copy", m.copy_gbs, vs.c_str());
      std::printf("  method: %s\n", m.method.c_str());
    } catch (const std::exception& ex) {
      spdlog::error("could not measure {}: {}", device, ex.what());
      return kExitRunFailed;
    }
  }
  std::printf("Telemetry readers:\n");
  for (const auto& r : telemetry::probe_readers()) {
    std::printf("  %-10s %s %s\n", r.name.c_str(), r.available ? "available  " : "unavailable", r.detail.c_str());
  }
  std::printf("Devices:\n");
  for (const auto& d : list_devices()) {
    std::printf("  %-12s %s %s\n", d.id.c_str(), d.available ? "available  " : "unavailable", (d.name + (d.note.empty() ? "" : " - " + d.note)).c_str());
  }
  return kExitOk;
}

int validate_command(const std::vector<std::string>& files) {
  ScenarioLoader loader(model_options());
  int rc = kExitOk;
  for (const auto& f : files) {
    try {
      Scenario s;
      loader.load_file(f, s);
      loader.check(s);
      std::printf("%s: ok (model %s, precision %s, device %s, %zu keys set)\n", f.c_str(), s.model.c_str(),
                  s.precision.c_str(), s.device.c_str(), s.origins.size());
    } catch (const std::exception& e) {  // ScenarioError above all; anything else is still this file's problem
      spdlog::error("{}", e.what());
      rc = kExitUsage;
    }
  }
  return rc;
}

namespace {

int compare_published(const CompareArgs& a) {
  const PublishedReference* ref = find_published(a.base);
  if (ref == nullptr) {
    std::string known;
    for (const auto& r : published_references()) known += (known.empty() ? "" : ", ") + r.id;
    spdlog::error("unknown published reference '{}'; known: {}", a.base, known);
    return kExitUsage;
  }
  std::vector<LoadedRecord> runs;
  try {
    runs = load_records({a.candidate}, nullptr);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  if (runs.empty()) {
    spdlog::error("no gpubench run record in {}", a.candidate);
    return kExitUsage;
  }
  std::vector<PublishedRun> rows;
  for (const auto& r : runs) rows.push_back(PublishedRun{r.path, &r.record, compare_with_published(*ref, r.record)});
  const Document doc = published_document(*ref, rows);
  try {
    PrinterMultiplex mux;
    add_outputs(mux, a.output, "md");  // Markdown reads well on a console too
    if (!a.markdown.empty()) mux.add("md", a.markdown);
    if (!a.json.empty()) mux.add("json", a.json);
    mux.print(doc);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace

int compare_command(const CompareArgs& a) {
  if (a.base.rfind("published/", 0) == 0) return compare_published(a);
  CompareOptions options;
  options.seed = a.seed;
  {
    std::string t = a.threshold;
    const bool percent = !t.empty() && t.back() == '%';
    if (percent) t.pop_back();
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    const double fraction = percent ? v / 100.0 : v;
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(fraction) || fraction < 0 || fraction >= 1) {
      spdlog::error("--threshold: expected a fraction from 0 to below 1 such as 0.02, or a percentage such as 2%, "
                    "got '{}'", a.threshold);
      return kExitUsage;
    }
    options.threshold = fraction;
  }
  std::vector<LoadedRecord> base, candidate;
  std::vector<std::string> skipped;
  try {
    candidate = load_records({a.candidate}, &skipped);
    if (a.base.rfind("db:", 0) == 0) {
      // db:FILE[:last-N]: each candidate against the last N like-for-like runs of its scenario in the store.
      std::string file = a.base.substr(3);
      int last_n = 5;
      const auto colon = file.rfind(":last-");
      if (colon != std::string::npos) {
        const std::string n = file.substr(colon + 6);
        char* end = nullptr;
        const long v = std::strtol(n.c_str(), &end, 10);
        if (n.empty() || *end != '\0' || v < 1 || v > 10000) {
          spdlog::error("BASE {}: expected db:FILE or db:FILE:last-N with N from 1 to 10000", a.base);
          return kExitUsage;
        }
        last_n = static_cast<int>(v);
        file = file.substr(0, colon);
      }
      const ResultsStore store(file);
      for (const auto& c : candidate) {
        for (auto& b : store.baseline_for(c.record, last_n)) {
          const bool seen = std::any_of(base.begin(), base.end(), [&b](const LoadedRecord& x) { return x.path == b.path; });
          if (!seen) base.push_back(std::move(b));
        }
      }
      spdlog::info("baseline: {} run(s) from {} (the last {} of each scenario on the same GPU model)", base.size(),
                   file, last_n);
      if (base.empty()) {
        spdlog::error("the store {} holds no earlier finished run of these scenarios on this GPU model", file);
        return kExitUsage;
      }
    } else {
      base = load_records({a.base}, &skipped);
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  for (const auto& s : skipped) spdlog::warn("skipped {}", s);
  if (base.empty() || candidate.empty()) {
    spdlog::error("nothing to compare: {} baseline and {} candidate records", base.size(), candidate.size());
    return kExitUsage;
  }
  const std::vector<std::string> tags = metric_tags(base);
  if (std::find(tags.begin(), tags.end(), a.metric) == tags.end()) {
    std::string known;
    for (const auto& t : tags) known += (known.empty() ? "" : ", ") + t;
    spdlog::error("--metric {}: the baseline records have no such metric; they have: {}", a.metric, known);
    return kExitUsage;
  }
  options.metric = a.metric;
  const CompareResult result = compare_runs(base, candidate, options);
  try {
    PrinterMultiplex mux;
    add_outputs(mux, a.output, "console");
    if (!a.markdown.empty()) mux.add("md", a.markdown);
    if (!a.junit.empty()) mux.add("junit", a.junit);
    if (!a.json.empty()) mux.add("json", a.json);
    mux.print(compare_document(result, options.threshold));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  if (!result.environment.like_for_like) spdlog::warn("the two sides ran on different hardware or builds");
  return result.any_regression() ? kExitRegression : kExitOk;
}

}  // namespace gpubench::cli
