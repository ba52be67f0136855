// gpubench scaling: the same scenario on 1, 2, ... ranks (each a `gpubench run`, multi-rank ones through the
// --nproc-per-node launcher), then throughput and scaling efficiency against the 1-rank run.

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>

#include "cli/commands.h"
#include "cli/subprocess.h"
#include "gpubench/core/record_io.hpp"
#include "gpubench/core/projection.hpp"
#include "gpubench/core/scaling.hpp"
#include "gpubench/report/document.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

std::vector<int> parse_counts(const std::string& text, const std::string& flag = "--gpus", long most = 1024) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > most) {
      throw std::invalid_argument(flag + ": expected a list such as 1,2,4,8 (each 1 to " + std::to_string(most) +
                                  "), got '" + text + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw std::invalid_argument(flag + ": empty list");
  return out;
}

/// `scaling --project`: no runs; the 1-GPU record (and any measured multi-GPU ones) projected to each GPU count.
int projection_command(const ScalingArgs& a) {
  std::vector<int64_t> gpus;
  Interconnect net;
  try {
    for (int n : parse_counts(a.project, "--project", 1 << 20)) gpus.push_back(n);
    const Interconnect* preset = find_interconnect(a.interconnect);
    if (preset == nullptr) {
      std::string names;
      for (const auto& p : interconnect_presets()) names += (names.empty() ? "" : ", ") + p.name;
      throw std::invalid_argument("--interconnect: unknown '" + a.interconnect + "' (presets: " + names + ")");
    }
    net = *preset;
    auto set = [&net](const std::optional<double>& v, double& field, const char* what) {
      if (!v) return;
      if (!(*v > 0) || !std::isfinite(*v)) throw std::invalid_argument(std::string(what) + " must be positive");
      field = *v;
      net.name += "+measured";
    };
    set(a.intra_gb_s, net.intra.bandwidth_gb_s, "--intra-bandwidth");
    set(a.inter_gb_s, net.inter.bandwidth_gb_s, "--inter-bandwidth");
    set(a.intra_us, net.intra.latency_us, "--intra-latency");
    set(a.inter_us, net.inter.latency_us, "--inter-latency");
    if (a.gpus_per_node) {
      if (*a.gpus_per_node < 1) throw std::invalid_argument("--gpus-per-node must be at least 1");
      net.gpus_per_node = *a.gpus_per_node;
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  std::vector<std::string> paths;
  if (!a.model.empty()) paths.push_back(a.model);
  paths.insert(paths.end(), a.run_args.begin(), a.run_args.end());
  if (paths.empty()) {
    spdlog::error("scaling --project: give the 1-GPU record (and optionally measured multi-GPU records of the same "
                  "scenario)");
    return kExitUsage;
  }
  std::vector<RunRecord> base, measured;
  for (const auto& path : paths) {
    try {
      RunRecord r = read_record(path);
      (r.distributed && r.distributed->world_size > 1 ? measured : base).push_back(std::move(r));
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", path, e.what());
      return kExitUsage;
    }
  }
  if (base.size() != 1) {
    spdlog::error("scaling --project: exactly one 1-GPU record is needed, got {}", base.size());
    return kExitUsage;
  }
  PrinterMultiplex mux;
  try {
    add_outputs(mux, a.output, "console");
    mux.print(projection_document(project_scaling(base.front(), gpus, net, measured, a.calibrate)));
  } catch (const std::invalid_argument& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace

int scaling_command(const ScalingArgs& a) {
  if (!a.project.empty()) return projection_command(a);
  if (a.model.empty()) {
    spdlog::error("scaling: give the MODEL to run (or --project with records)");
    return kExitUsage;
  }
  std::vector<int> counts;
  try {
    counts = parse_counts(a.gpus);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
  for (const auto& arg : a.run_args) {
    if (arg == "--output" || arg.rfind("--output=", 0) == 0 || arg == "--nproc-per-node" || arg == "--repeats") {
      spdlog::error("scaling chooses {} itself; leave it out", arg);
      return kExitUsage;
    }
  }
  const std::string dir = a.out_dir.empty() ? "runs/scaling_" + a.model + "_" + local_timestamp() : a.out_dir;
  std::filesystem::create_directories(dir);

  ScalingResult result;
  for (int n : counts) {
    ScalingPoint p;
    p.ranks = n;
    p.record_path = dir + "/" + a.model + "_gpus" + std::to_string(n) + ".json";
    std::vector<std::string> args{a.self, "run", a.model};
    args.insert(args.end(), a.run_args.begin(), a.run_args.end());
    args.insert(args.end(), {"--output", p.record_path, "--quiet"});
    if (n > 1) args.insert(args.end(), {"--nproc-per-node", std::to_string(n)});
    spdlog::info("scaling: {} on {} rank(s)", a.model, n);
    p.exit_code = run_child(args);
    try {
      p.record = read_record(p.record_path);
    } catch (const std::exception& e) {
      p.error = e.what();
    }
    result.points.push_back(std::move(p));
  }
  compute_scaling(result);
  if (!print_summary(scaling_document(a.model, result), a.output, dir, "scaling")) return kExitRunFailed;
  const bool all_ok = result.all_ok();
  return all_ok ? kExitOk : kExitRunFailed;
}

}  // namespace gpubench::cli
