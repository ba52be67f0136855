// gpubench sweep: list-valued flags expand into points, every point is checked before any runs, each point runs as
// its own `gpubench run` (a fresh process, so an OOM leaves nothing behind), OOM points are recorded and the sweep
// goes on; `--batch-size max` first searches for the largest batch that fits.

#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/subprocess.h"
#include "gpubench/core/record_io.hpp"
#include "gpubench/core/scenario_loader.hpp"
#include "gpubench/core/sweep.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

std::vector<std::string> key_order() {
  std::vector<std::string> keys;
  for (const auto& k : all_scenario_keys(model_options())) keys.push_back(k.key);
  return keys;
}

}  // namespace

int sweep_command(const SweepArgs& a) {
  std::vector<SweepPoint> points;
  try {
    points = expand_sweep(a.overrides, key_order());
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  // Every point must be a valid scenario before anything runs.
  for (const auto& p : points) {
    try {
      ScenarioLoader loader(model_options());
      Scenario s;
      if (a.config) loader.load_file(*a.config, s);
      loader.apply_override("model", a.model, "MODEL", s);
      for (const auto& [k, v] : p.values) {
        if (k == "batch_size" && v == "max") continue;
        loader.apply_override(k, v, a.override_flag.at(k), s);
      }
      if (p.values.count("batch_size") == 0 || p.values.at("batch_size") != "max") loader.check(s);
    } catch (const ScenarioError& e) {
      spdlog::error("sweep point {}: {}", p.label(), e.what());
      return kExitUsage;
    }
  }
  for (const char* fixed : {"output", "telemetry_trace"}) {
    if (a.overrides.count(fixed)) {
      spdlog::error("sweep chooses each point's {} itself; leave {} out", fixed, a.override_flag.at(fixed));
      return kExitUsage;
    }
  }
  const std::string dir = a.out_dir.empty() ? "runs/sweep_" + a.model + "_" + local_timestamp() : a.out_dir;
  std::filesystem::create_directories(dir);
  spdlog::info("sweep: {} point(s), records in {}", points.size(), dir);

  int64_t default_batch = 32;
  for (const auto& m : available_models()) {
    if (m.name == a.model) default_batch = m.default_batch_size;
  }
  auto args_for = [&](const SweepPoint& p, const std::vector<std::string>& skip) {
    std::vector<std::string> args{a.self, "run", a.model};
    if (a.config) args.insert(args.end(), {"--config", *a.config});
    for (const auto& [k, v] : p.values) {
      if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
      args.insert(args.end(), {a.override_flag.at(k), v});
    }
    return args;
  };

  std::vector<SweepPointResult> results;
  bool all_fine = true;
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    const std::string path = fmt::format("{}/point{:02d}_{}.json", dir, i + 1, file_name_part(p.label()));
    std::vector<std::string> args;
    std::string search_note;
    const bool max_batch = p.values.count("batch_size") && p.values.at("batch_size") == "max";
    if (max_batch) {
      // Probe runs: one short epoch each, no telemetry; fits = the run finished ok.
      std::filesystem::create_directories(dir + "/probes");
      std::vector<int64_t> tried;
      const int64_t found = largest_fitting_batch(
          [&](int64_t bs) {
            const std::string probe = fmt::format("{}/probes/point{:02d}_bs{}.json", dir, i + 1, bs);
            auto pa = args_for(p, {"batch_size", "dataset_size", "epochs", "warmup_steps", "telemetry"});
            const int64_t accumulate =
                p.values.count("grad_accumulation") ? std::stoll(p.values.at("grad_accumulation")) : 1;
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
          default_batch, int64_t{1} << 20, &tried);
      std::string list;
      for (int64_t b : tried) list += (list.empty() ? "" : ", ") + std::to_string(b);
      search_note = fmt::format("batch size {} chosen by `--batch-size max`: the largest that trained (probes: {})",
                                found, list);
      spdlog::info("sweep point {}: {}", i + 1, search_note);
      if (found == 0) {
        results.push_back(SweepPointResult{p.label(), p.swept, path, 0, std::nullopt, "oom: not even batch size 1 fits"});
        continue;
      }
      args = args_for(p, {"batch_size", "dataset_size"});
      args.insert(args.end(), {"--batch-size", std::to_string(found)});
      // An epoch must hold at least one step of the batch found.
      const int64_t ga = p.values.count("grad_accumulation") ? std::stoll(p.values.at("grad_accumulation")) : 1;
      int64_t dataset = p.values.count("dataset_size") ? std::stoll(p.values.at("dataset_size")) : Scenario{}.dataset_size;
      if (dataset < found * ga) {
        search_note += fmt::format("; dataset_size raised from {} to {} so that an epoch holds one step", dataset, found * ga);
        dataset = found * ga;
      }
      args.insert(args.end(), {"--dataset-size", std::to_string(dataset)});
    } else {
      args = args_for(p, {});
    }
    args.insert(args.end(), {"--output", path, "--quiet"});
    if (!a.db.empty()) args.insert(args.end(), {"--db", a.db});  // the points, not the batch-size probes
    spdlog::info("sweep point {}/{}: {}", i + 1, points.size(), p.label());
    const int rc = run_child(args);
    SweepPointResult result{p.label(), p.swept, path, rc, std::nullopt, ""};
    try {
      RunRecord r = read_record(path);
      if (!search_note.empty()) {
        r.notes.push_back(search_note);
        write_record(path, r);
      }
      all_fine = all_fine && (r.status == RunStatus::kOk || r.status == RunStatus::kOom);
      result.record = std::move(r);
    } catch (const std::exception& e) {
      all_fine = false;
    }
    results.push_back(std::move(result));
  }
  if (!print_summary(sweep_document(a.model, results), a.output, dir, "sweep")) return kExitRunFailed;
  return all_fine ? kExitOk : kExitRunFailed;
}

}  // namespace gpubench::cli
