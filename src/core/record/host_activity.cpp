#include "gpubench/core/record/host_activity.hpp"

#include "core/text.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <vector>

namespace gpubench {

namespace {

// Thresholds of a busy host (docs/guide.md, "Comparing runs"): other processes' CPU use, in cores, at least a quarter
// of a core and at least a tenth of the cores the job left free; or a hypervisor's steal of at least 5 % of all CPU
// time. An idle Debian host's daemons use about 0.01 cores; a package install beside a 2-core CPU run took 0.42 and
// stretched its p95 step 2.4x the median.
constexpr double kBusyCores = 0.25;
constexpr double kBusyShareOfFree = 0.1;
constexpr double kBusySteal = 0.05;

}  // namespace

HostSample sample_host(const HostPaths& paths) {
  HostSample h;
  h.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return h;
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice" (guest time is already in user).
  std::istringstream all(text::first_line(paths.proc + "/stat"));
  std::string name;
  std::vector<double> v;
  all >> name;
  for (double x; all >> x;) v.push_back(x);
  if (name != "cpu" || v.size() < 8) return h;
  h.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6]) / static_cast<double>(ticks);
  h.steal_s = v[7] / static_cast<double>(ticks);
  // /proc/self/stat: "pid (comm) state ppid ..."; utime and stime are the 14th and 15th fields, the 12th and 13th
  // after the comm's closing parenthesis (a comm may hold spaces and parentheses: the last ')' ends it).
  const std::string self = text::first_line(paths.proc + "/self/stat");
  const size_t close = self.rfind(')');
  if (close == std::string::npos) return h;
  std::istringstream rest(self.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 13) return h;
  try {
    h.own_s = (std::stod(fields[11]) + std::stod(fields[12])) / static_cast<double>(ticks);
  } catch (const std::exception&) {
    return h;
  }
  h.cpu_cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  h.ok = true;
  return h;
}

std::optional<HostActivity> host_activity_between(const HostSample& begin, const HostSample& end,
                                                  int64_t job_processes, const HostPaths& paths) {
  if (!begin.ok || !end.ok || end.wall_s <= begin.wall_s) return std::nullopt;
  HostActivity a;
  a.seconds = end.wall_s - begin.wall_s;
  a.cpu_cores = end.cpu_cores;
  a.own_cpu_s = std::max(0.0, end.own_s - begin.own_s);
  // The host's busy time counts this process's too; tick rounding can make the rest slightly negative.
  a.other_cpu_s = std::max(0.0, (end.busy_s - begin.busy_s) - a.own_cpu_s);
  a.steal_s = std::max(0.0, end.steal_s - begin.steal_s);
  std::istringstream load(text::first_line(paths.proc + "/loadavg"));
  load >> a.load_average_1m;
  if (!load) a.load_average_1m = 0;
  a.job_processes = std::max<int64_t>(1, job_processes);
  return a;
}

double other_cores(const HostActivity& a) {
  if (a.seconds <= 0) return 0;
  const double peers = a.own_cpu_s * static_cast<double>(a.job_processes - 1);
  return std::max(0.0, a.other_cpu_s - peers) / a.seconds;
}

std::string busy_host_reason(const HostActivity& a) {
  if (a.seconds <= 0 || a.cpu_cores <= 0) return "";
  const double others = other_cores(a);
  const double job = a.own_cpu_s / a.seconds * static_cast<double>(a.job_processes);
  const double free = std::max(1.0, static_cast<double>(a.cpu_cores) - job);
  if (others >= kBusyCores && others >= kBusyShareOfFree * free) {
    return "other processes used " + text::num("%.1f", others) + " of " + std::to_string(a.cpu_cores) + " cores (load " +
           text::num("%.1f", a.load_average_1m) + ")";
  }
  const double steal = a.steal_s / (a.seconds * static_cast<double>(a.cpu_cores));
  if (steal >= kBusySteal) return "a hypervisor stole " + text::num("%.0f", 100 * steal) + " % of the CPU time";
  return "";
}

std::string busy_host_evidence(const RunRecord& r) {
  for (const auto& e : r.epochs) {
    if (!e.host) continue;
    const std::string why = busy_host_reason(*e.host);
    if (!why.empty()) return "epoch " + std::to_string(e.index + 1) + ": " + why;
  }
  std::string gpu;
  for (const auto& p : r.telemetry.other_processes.value_or(std::vector<GpuProcess>{})) {
    gpu += (gpu.empty() ? "" : ", ") + ("pid " + std::to_string(p.pid)) + (p.name.empty() ? "" : " " + p.name);
  }
  return gpu.empty() ? "" : "other processes on the GPU: " + gpu;
}

}  // namespace gpubench
