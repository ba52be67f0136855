// gpubench scaling: the same scenario on 1, 2, ... ranks (each a `gpubench run`, multi-rank ones through the
// --nproc-per-node launcher), then throughput and scaling efficiency against the 1-rank run.

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>

#include "cli/commands.h"
#include "cli/subprocess.h"
#include "gpubench/core/record_io.hpp"
#include "gpubench/core/scaling.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1024) {
      throw std::invalid_argument("--gpus: expected a list such as 1,2,4,8, got '" + text + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw std::invalid_argument("--gpus: empty list");
  return out;
}

}  // namespace

int scaling_command(const ScalingArgs& a) {
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
