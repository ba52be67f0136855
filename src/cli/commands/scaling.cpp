// gpubench scaling: the same scenario on 1, 2, ... ranks (each a `gpubench run`, multi-rank ones through the
// --nproc-per-node launcher), then throughput and scaling efficiency against the 1-rank run; or, with --project, no
// runs: a 1-GPU record projected to more GPUs with an alpha-beta all-reduce model.

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include "cli/commands/commands.h"
#include "cli/output.h"
#include "cli/scenario_flags.h"
#include "cli/store_filters.h"
#include "cli/subprocess.h"
#include "cli/summary.h"
#include "gpubench/core/analysis/projection.hpp"
#include "gpubench/core/analysis/scaling.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/runner/resolve_here.hpp"

namespace gpubench::cli {

namespace {

std::vector<int> parse_counts(const std::string& text, const std::string& flag, long most) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > most) {
      throw UsageError(flag + ": expected a list such as 1,2,4,8 (each 1 to " + std::to_string(most) + "), got '" +
                       text + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw UsageError(flag + ": empty list");
  return out;
}

struct ProjectionFlags {
  std::string counts;                          ///< "4,8,16": project these GPU counts
  std::string interconnect = "nvlink4-ib400";  ///< a preset (core/analysis/projection.hpp)
  std::optional<double> intra_gb_s, inter_gb_s, intra_us, inter_us;  ///< measured link values override the preset
  std::optional<int64_t> gpus_per_node;
  bool calibrate = false;
};

Interconnect interconnect_for(const ProjectionFlags& f) {
  const Interconnect* preset = find_interconnect(f.interconnect);
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : interconnect_presets()) names += (names.empty() ? "" : ", ") + p.name;
    throw UsageError("--interconnect: unknown '" + f.interconnect + "' (presets: " + names + ")");
  }
  Interconnect net = *preset;
  // Physical ranges: a denormal bandwidth or a latency of hours is a typo, not a link.
  auto set = [&net](const std::optional<double>& v, double& field, const char* what, double lo, double hi,
                    const char* unit) {
    if (!v) return;
    if (!(*v >= lo && *v <= hi)) {
      throw UsageError(std::string(what) + " " + fmt::format("{}", *v) + ": expected " + fmt::format("{}", lo) + " to " +
                       fmt::format("{}", hi) + " " + unit);
    }
    field = *v;
    net.name += "+measured";
  };
  set(f.intra_gb_s, net.intra.bandwidth_gb_s, "--intra-bandwidth", 0.01, 100000, "GB/s");
  set(f.inter_gb_s, net.inter.bandwidth_gb_s, "--inter-bandwidth", 0.01, 100000, "GB/s");
  set(f.intra_us, net.intra.latency_us, "--intra-latency", 0.01, 1e6, "us");
  set(f.inter_us, net.inter.latency_us, "--inter-latency", 0.01, 1e6, "us");
  if (f.gpus_per_node) {
    if (*f.gpus_per_node < 1 || *f.gpus_per_node > 1024) throw UsageError("--gpus-per-node must be from 1 to 1024");
    net.gpus_per_node = *f.gpus_per_node;
  }
  return net;
}

class ScalingCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("MODEL", targets_,
                   "Model to train (see `gpubench list`); with --project, the 1-GPU record (then any measured "
                   "multi-GPU records of the same scenario)")
        ->type_name("NAME|RECORD...");
    cmd.add_option("--gpus", gpus_, "Rank counts to run, comma-separated (default 1,2)")->type_name("INT,INT,...");
    cmd.add_option("--out,--out-dir", out_dir_,
                   "Folder for the records and scaling.json/scaling.md (default runs/scaling_<model>_<time>)")
        ->type_name("DIR");
    cmd.add_option("--db", db_, "Also add each run's record to this results store (a SQLite file or a postgresql:// URL)")->type_name("STORE");
    project_opt_ = cmd.add_option("--project", p_.counts,
                   "Run nothing: project data-parallel efficiency and epoch time to these GPU counts (e.g. "
                   "4,8,16,64,1024) from a 1-GPU record, with an alpha-beta all-reduce model")
        ->type_name("INT,INT,...")
        ->group("Projection");
    cmd.add_option("--interconnect", p_.interconnect,
                   "Link preset: nvlink4-ib400 (default), nvlink4-ib200, nvlink3-ib200, pcie4-eth100")
        ->type_name("PRESET")
        ->group("Projection");
    cmd.add_option("--intra-bandwidth", p_.intra_gb_s, "Measured in-node all-reduce bus bandwidth (GB/s)")
        ->type_name("GB/s")
        ->group("Projection");
    cmd.add_option("--inter-bandwidth", p_.inter_gb_s, "Measured between-node bus bandwidth per GPU (GB/s)")
        ->type_name("GB/s")
        ->group("Projection");
    cmd.add_option("--intra-latency", p_.intra_us, "In-node latency per step (us)")->type_name("US")->group("Projection");
    cmd.add_option("--inter-latency", p_.inter_us, "Between-node latency per step (us)")->type_name("US")->group("Projection");
    cmd.add_option("--gpus-per-node", p_.gpus_per_node, "GPUs per node (default 8)")->type_name("INT")->transform(decimal_whole())->group("Projection");
    cmd.add_flag("--calibrate", p_.calibrate,
                 "Add the first measured multi-GPU record's residual (measured - modelled step) from 2 GPUs on")
        ->group("Projection");
    flags_.declare(cmd, {ScenarioFlags::Values::kOne, "", false, true, false});
    cmd.footer("The scenario flags go to each `gpubench run` (--batch-size is per GPU). Efficiency = throughput on N "
               "/ (N x throughput on 1).\nProjection: gpubench scaling --project 2,8,64,1024 runs/x_gpus1.json "
               "[runs/x_gpus2.json] (the model and its assumptions: docs/performance.md).");
  }

  int run(Context& ctx) override {
    if (project_opt_->count() > 0 && p_.counts.empty()) {
      throw UsageError("--project: no GPU counts; give them as 4,8,16 (an empty value never means \"measure\")");
    }
    return project_opt_->count() == 0 ? measure(ctx) : project(ctx);
  }

  void files(FileRoles& roles) const override {
    if (project_opt_->count() > 0) {
      for (const auto& t : targets_) roles.input(t, "RECORD", is_record_file);
    }
    roles.store(db_, "--db");
  }

 private:
  CLI::Option* project_opt_ = nullptr;
  int project(Context& ctx) const {
    std::vector<int64_t> gpus;
    for (int n : parse_counts(p_.counts, "--project", 1 << 20)) gpus.push_back(n);
    const Interconnect net = interconnect_for(p_);
    if (targets_.empty()) {
      throw UsageError("scaling --project: give the 1-GPU record (and optionally measured multi-GPU records of the "
                       "same scenario)");
    }
    std::vector<RunRecord> base, measured;
    for (const auto& path : targets_) {
      try {
        RunRecord r = read_record(path);
        (r.distributed && r.distributed->world_size > 1 ? measured : base).push_back(std::move(r));
      } catch (const std::exception& e) {
        throw UsageError(path + ": " + e.what());
      }
    }
    if (base.size() != 1) {
      throw UsageError("scaling --project: exactly one 1-GPU record is needed, got " + std::to_string(base.size()));
    }
    Projection projection;
    try {
      projection = project_scaling(base.front(), gpus, net, measured, p_.calibrate);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    ctx.print(projection_document(projection));
    return kExitOk;
  }

  int measure(Context& ctx) const {
    if (targets_.size() != 1) throw UsageError("scaling: give the MODEL to run (or --project with records)");
    const std::string model = targets_.front();
    const std::vector<int> counts = parse_counts(gpus_, "--gpus", 1024);
    if (flags_.overrides().count("output")) throw UsageError("scaling chooses each run's --output itself; leave it out");
    ScenarioInputs in = flags_.inputs();
    in.model = model;
    resolve_here(in, RankInfo{}, 1, 1, true, ResolveFor::kRunsHere);  // the scenario is valid before anything runs
    const std::string dir = out_dir_.empty() ? "runs/scaling_" + model + "_" + local_timestamp() : out_dir_;
    std::optional<StoreLocation> store;
    if (!db_.empty()) {  // a store that cannot take records: exit 2 now (an empty --db never gets here: app.cpp)
      store = parse_store(db_, "--db");
      check_takes_records(*store, "--db");
    }
    make_output_folder(dir, "--out");
    ScalingResult result;
    for (int n : counts) {
      ScalingPoint p;
      p.ranks = n;
      p.record_path = dir + "/" + model + "_gpus" + std::to_string(n) + ".json";
      std::vector<std::string> args{ctx.self, "run", model};
      const std::vector<std::string> scenario = flags_.as_args();
      args.insert(args.end(), scenario.begin(), scenario.end());
      args.insert(args.end(), {"--output", p.record_path, "--quiet"});
      if (n > 1) args.insert(args.end(), {"--nproc-per-node", std::to_string(n)});
      spdlog::info("scaling: {} on {} rank(s)", model, n);
      p.exit_code = run_child(args, store ? store->typed() : std::string());  // the store: never on a command line
      try {
        p.record = read_record(p.record_path);
      } catch (const std::exception& e) {
        p.error = e.what();
      }
      result.points.push_back(std::move(p));
    }
    compute_scaling(result);
    print_summary(ctx, scaling_document(model, result), dir, "scaling");
    return result.all_ok() ? kExitOk : kExitRunFailed;
  }

  std::vector<std::string> targets_;
  std::string gpus_ = "1,2", out_dir_, db_;
  ProjectionFlags p_;
  ScenarioFlags flags_;
};

}  // namespace

CommandSpec scaling_command() {
  return {"scaling",
          "Run a scenario on 1, 2, ... GPUs and report scaling efficiency, or project it to more GPUs (--project)",
          {kExitOk, kExitRunFailed, kExitUsage, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<ScalingCommand>(); }};
}

}  // namespace gpubench::cli
