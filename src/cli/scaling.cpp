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

  struct Point {
    int n;
    std::string path;
    int exit_code;
  };
  std::vector<Point> points;
  for (int n : counts) {
    const std::string path = dir + "/" + a.model + "_gpus" + std::to_string(n) + ".json";
    std::vector<std::string> args{a.self, "run", a.model};
    args.insert(args.end(), a.run_args.begin(), a.run_args.end());
    args.insert(args.end(), {"--output", path, "--quiet"});
    if (n > 1) args.insert(args.end(), {"--nproc-per-node", std::to_string(n)});
    spdlog::info("scaling: {} on {} rank(s)", a.model, n);
    points.push_back({n, path, run_child(args)});
  }

  nlohmann::json summary = nlohmann::json::array();
  std::string md = "| ranks | status | samples/s | per rank | scaling efficiency | epoch s | slowest rank | comm wait "
                   "| power W (all GPUs) | J/sample |\n"
                   "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  double base = 0;
  int base_n = 0;
  bool all_ok = true;
  for (const auto& p : points) {
    nlohmann::json row = {{"ranks", p.n}, {"record", p.path}, {"exit_code", p.exit_code}};
    RunRecord r;
    try {
      r = read_record(p.path);
    } catch (const std::exception& e) {
      all_ok = false;
      row["status"] = "missing";
      md += fmt::format("| {} | no record ({}) | | | | | | | | |\n", p.n, e.what());
      summary.push_back(row);
      continue;
    }
    const double rate = r.summary.samples_per_s;
    row["status"] = to_string(r.status);
    row["samples_per_s"] = rate;
    all_ok = all_ok && r.status == RunStatus::kOk;
    if (r.status != RunStatus::kOk) {
      md += fmt::format("| {} | {} | | | | | | | | |\n", p.n, to_string(r.status) + ": " + r.reason);
      summary.push_back(row);
      continue;
    }
    if (base == 0) {
      base = rate / p.n;  // per-rank throughput of the smallest run
      base_n = p.n;
    }
    const double eff = base > 0 ? rate / (p.n * base) : 0;
    row["scaling_efficiency"] = eff;
    double wait = 0, secs = 0;
    int64_t slowest = 0;
    if (r.distributed) {
      for (const auto& e : r.distributed->rank_comm_wait_seconds) wait += e.empty() ? 0 : e[0];
      slowest = r.distributed->slowest_rank;
    }
    for (const auto& e : r.epochs) secs += e.seconds;
    row["comm_wait_fraction_rank0"] = secs > 0 ? wait / secs : 0;
    row["power_avg_w"] = r.summary.power_avg_w;  // the whole job's: every GPU's power summed
    row["joules_per_sample"] = r.summary.joules_per_sample;
    row["power_devices"] = r.summary.power_devices;
    summary.push_back(row);
    auto opt = [](const std::optional<double>& v, const char* f) {
      return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
    };
    md += fmt::format("| {} | ok | {:.1f} | {:.1f} | {:.1f}% | {:.2f} | {} | {:.1f}% | {} | {} |\n", p.n, rate,
                      rate / p.n, eff * 100, r.summary.epoch_seconds_mean,
                      r.distributed ? std::to_string(slowest) : "-", secs > 0 ? wait / secs * 100 : 0.0,
                      opt(r.summary.power_avg_w, "{:.0f}"), opt(r.summary.joules_per_sample, "{:.4f}"));
  }
  if (base_n != 1 && base_n != 0) md += fmt::format("\nEfficiency is relative to the {}-rank run (no 1-rank run).\n", base_n);
  std::fputs(md.c_str(), stdout);
  write_file_atomic(dir + "/scaling.md", md);
  write_file_atomic(dir + "/scaling.json", json_text(nlohmann::json{{"model", a.model}, {"points", summary}}, 2) + "\n");
  std::printf("summary: %s/scaling.md\n", dir.c_str());
  return all_ok ? kExitOk : kExitRunFailed;
}

}  // namespace gpubench::cli
