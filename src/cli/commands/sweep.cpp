// gpubench sweep: list-valued flags expand into points, every point is resolved before any runs, each point runs as
// its own `gpubench run` (a fresh process, so an OOM leaves nothing behind), OOM points are recorded and the sweep
// goes on; `--batch-size max` first searches for the largest batch that fits.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "cli/scenario_flags.h"
#include "cli/output.h"
#include "cli/store_filters.h"
#include "cli/subprocess.h"
#include "cli/summary.h"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/core/scenario/sweep.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/runner/resolve_here.hpp"

namespace gpubench::cli {

namespace {

std::vector<std::string> key_order() {
  std::vector<std::string> keys;
  for (const auto& k : all_scenario_keys(model_options())) keys.push_back(k.key);
  return keys;
}

int64_t int_value(const SweepPoint& p, const std::string& key, int64_t fallback) {
  const auto it = p.values.find(key);
  return it == p.values.end() ? fallback : std::stoll(it->second);
}

class SweepCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    flags_.declare(cmd, {ScenarioFlags::Values::kLists, "Model to train (see `gpubench list`)", true, true, false});
    cmd.add_option("--out,--out-dir", out_dir_,
                   "Folder for one record per point plus sweep.md/sweep.json (default runs/sweep_<model>_<time>)")
        ->type_name("DIR");
    cmd.add_option("--db", db_,
                             "Also add each point's record to this results store (a SQLite file or a postgresql:// URL)")
                  ->type_name("STORE");
    search_opt_ = cmd.add_option("--batch-search", batch_search_,
                   "With --batch-size max: exact (every size, default) or ladder (1, 2, 3, 4, 6, 8, 12, 16, ...: about "
                   "half the probes; the grid docs/fit.md compares fit on)")
        ->check(CLI::IsMember({"exact", "ladder"}).description(""))
        ->type_name("exact|ladder");
    cmd.footer("Example: gpubench sweep resnet50 --amp --batch-size 32,64,128,256\n"
               "--batch-size max searches for the largest batch that trains. A point that runs out of memory is "
               "recorded as oom and the sweep goes on.");
  }

  int run(Context& ctx) override {
    const std::string model = *flags_.model();
    std::map<std::string, std::string> overrides = flags_.overrides();
    overrides.erase("model");
    for (const char* fixed : {"output", "telemetry_trace"}) {
      if (overrides.count(fixed)) {
        throw UsageError("sweep chooses each point's " + std::string(fixed) + " itself; leave " +
                         flags_.flag_of().at(fixed) + " out");
      }
    }
    std::vector<SweepPoint> points;
    try {
      points = expand_sweep(overrides, key_order());
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    for (const auto& p : points) check_point(p, model);  // every point is a valid scenario before anything runs
    const bool searches = std::any_of(points.begin(), points.end(), [](const SweepPoint& p) {
      return p.values.count("batch_size") && p.values.at("batch_size") == "max";
    });
    if (search_opt_->count() > 0 && !searches) {
      throw UsageError("--batch-search chooses how --batch-size max searches; it does nothing without it");
    }
    const std::string dir = out_dir_.empty() ? "runs/sweep_" + model + "_" + local_timestamp() : out_dir_;
    if (!db_.empty()) {  // a store that cannot take records: exit 2 now (an empty --db never gets here: app.cpp)
      store_ = parse_store(db_, "--db");
      check_takes_records(*store_, "--db");
    }
    make_output_folder(dir, "--out");
    spdlog::info("sweep: {} point(s), records in {}", points.size(), dir);

    std::vector<SweepPointResult> results;
    bool all_fine = true;
    for (size_t i = 0; i < points.size(); ++i) {
      results.push_back(run_point(ctx, points[i], i, points.size(), model, dir));
      const auto& r = results.back().record;
      all_fine = all_fine && r && (r->status == RunStatus::kOk || r->status == RunStatus::kOom);
    }
    print_summary(ctx, sweep_document(model, results), dir, "sweep");
    return all_fine ? kExitOk : kExitRunFailed;
  }

 private:
  /// The point as `gpubench run` would resolve it here; throws ScenarioError naming the point.
  void check_point(const SweepPoint& p, const std::string& model) const {
    ScenarioInputs in = flags_.inputs();
    in.model = model;
    in.overrides.clear();
    for (const auto& [k, v] : p.values) {
      if (!(k == "batch_size" && v == "max")) in.overrides[k] = v;
    }
    try {
      resolve_here(in, RankInfo{}, 1, 1, true, ResolveFor::kRunsHere);
    } catch (const ScenarioError& e) {
      throw UsageError("sweep point " + p.label() + ": " + e.what());
    }
  }

  /// `gpubench run MODEL ...` for point `p`, leaving out `skip`.
  std::vector<std::string> args_for(const Context& ctx, const SweepPoint& p, const std::string& model,
                                    const std::vector<std::string>& skip) const {
    std::vector<std::string> args{ctx.self, "run", model};
    const ScenarioInputs in = flags_.inputs();
    if (in.config) args.insert(args.end(), {"--config", *in.config});
    if (in.amp) args.emplace_back("--amp");
    if (in.channels_last) args.emplace_back("--channels-last");
    for (const auto& [k, v] : p.values) {
      if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
      args.insert(args.end(), {flags_.flag_of().at(k), v});
    }
    return args;
  }

  /// `--batch-size max`: probe runs (one short epoch each, no telemetry) until the largest batch that trains.
  int64_t search_batch(const Context& ctx, const SweepPoint& p, size_t i, const std::string& model,
                       const std::string& dir, std::string& note) const {
    std::filesystem::create_directories(dir + "/probes");
    int64_t default_batch = 32;
    for (const auto& m : available_models()) {
      if (m.name == model) default_batch = m.default_batch_size;
    }
    const int64_t accumulate = int_value(p, "grad_accumulation", 1);
    std::vector<int64_t> tried;
    const int64_t found = largest_fitting_batch(
        [&](int64_t bs) {
          const std::string probe = fmt::format("{}/probes/point{:02d}_bs{}.json", dir, i + 1, bs);
          auto pa = args_for(ctx, p, model, {"batch_size", "dataset_size", "epochs", "warmup_steps", "telemetry"});
          pa.insert(pa.end(), {"--batch-size", std::to_string(bs), "--dataset-size", std::to_string(bs * 2 * accumulate),
                               "--epochs", "1", "--warmup-steps", "1", "--telemetry", "false", "--output", probe,
                               "--quiet"});
          spdlog::info("sweep point {}: probing batch size {}", i + 1, bs);
          run_child(pa);
          try {
            return read_record(probe).status == RunStatus::kOk;
          } catch (const std::exception&) {
            return false;
          }
        },
        default_batch, int64_t{1} << 20, &tried, batch_search_ == "ladder" ? BatchGrid::kLadder : BatchGrid::kExact);
    note = fmt::format("batch size {} chosen by `--batch-size max`: the largest {}that trained (probes: {})", found,
                       batch_search_ == "ladder" ? "on the ladder (--batch-search ladder) " : "", fmt::join(tried, ", "));
    spdlog::info("sweep point {}: {}", i + 1, note);
    return found;
  }

  SweepPointResult run_point(const Context& ctx, const SweepPoint& p, size_t i, size_t n, const std::string& model,
                             const std::string& dir) const {
    const std::string path = fmt::format("{}/point{:02d}_{}.json", dir, i + 1, file_name_part(p.label()));
    std::vector<std::string> args;
    std::string note;
    if (p.values.count("batch_size") && p.values.at("batch_size") == "max") {
      const int64_t found = search_batch(ctx, p, i, model, dir, note);
      if (found == 0) return SweepPointResult{p.label(), p.swept, path, 0, std::nullopt, "oom: not even batch size 1 fits"};
      args = args_for(ctx, p, model, {"batch_size", "dataset_size"});
      args.insert(args.end(), {"--batch-size", std::to_string(found)});
      // An epoch must hold at least one step of the batch found.
      const int64_t ga = int_value(p, "grad_accumulation", 1);
      int64_t dataset = int_value(p, "dataset_size", Scenario{}.dataset_size);
      if (dataset < found * ga) {
        note += fmt::format("; dataset_size raised from {} to {} so that an epoch holds one step", dataset, found * ga);
        dataset = found * ga;
      }
      args.insert(args.end(), {"--dataset-size", std::to_string(dataset)});
    } else {
      args = args_for(ctx, p, model, {});
    }
    args.insert(args.end(), {"--output", path, "--quiet"});
    spdlog::info("sweep point {}/{}: {}", i + 1, n, p.label());
    // The points go to the store (through the child's environment: no password on a command line), the batch-size
    // probes never.
    const int rc = run_child(args, store_ ? store_->typed() : std::string());
    SweepPointResult result{p.label(), p.swept, path, rc, std::nullopt, ""};
    try {
      RunRecord r = read_record(path);
      if (!note.empty()) {
        r.notes.push_back(note);
        write_record(path, r);
      }
      result.record = std::move(r);
    } catch (const std::exception&) {
      // no record: the point's row says so
    }
    return result;
  }

  ScenarioFlags flags_;
  std::string out_dir_, db_;
  CLI::Option* search_opt_ = nullptr;
  std::optional<StoreLocation> store_;
  std::string batch_search_ = "exact";
};

}  // namespace

CommandSpec sweep_command() {
  return {"sweep", "Run every combination of list-valued flags; OOM points are recorded",
          {kExitOk, kExitRunFailed, kExitUsage, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<SweepCommand>(); }};
}

}  // namespace gpubench::cli
