#pragma once
// What else the host was doing while a run was timed: the CPU time every other process took, the time a hypervisor
// stole, the load average. A run on a busy host measures the host as much as the device; compare and
// history --detect call a difference involving one inconclusive instead of a regression (docs/guide.md, "Comparing
// runs").
// Read from /proc; no torch.

#include <cstdint>
#include <optional>
#include <string>

#include "gpubench/core/record/host_facts.hpp"

namespace gpubench {

/// One reading of the host's CPU counters (/proc/stat's first line, /proc/self/stat) and the wall clock.
struct HostSample {
  bool ok = false;              ///< false where /proc cannot be read (not Linux): no activity is recorded then
  double wall_s = 0;            ///< steady clock (s)
  double busy_s = 0;            ///< every CPU's non-idle time since boot (user, nice, system, irq, softirq) (s)
  double steal_s = 0;           ///< every CPU's stolen time since boot (s)
  double own_s = 0;             ///< this process's CPU time, all threads (user + system) (s)
  int64_t cpu_cores = 0;        ///< CPUs online
};

/// Reads the counters now. Never throws.
HostSample sample_host(const HostPaths& paths = HostPaths{});

/// The host's activity between two readings, `job_processes` being the processes of this job on the host (a
/// multi-GPU run's local ranks: their CPU time is in other_cpu_s, and is taken out again as own_cpu_s times the
/// peers when deciding whether the host was busy). Null when either reading failed or no time passed.
std::optional<HostActivity> host_activity_between(const HostSample& begin, const HostSample& end,
                                                  int64_t job_processes = 1, const HostPaths& paths = HostPaths{});

/// Other processes' CPU use, in cores, the job's own peer ranks taken out (estimated as this process's use each).
double other_cores(const HostActivity& a);

/// Why the host was busy during `a`, or "" when it was not: other processes used at least a quarter of a core and a
/// tenth of the cores the job left free ("other processes used 1.9 of 2 cores"), or a hypervisor stole at least 5 %
/// of the CPU time ("a hypervisor stole 7 % of the CPU time").
std::string busy_host_reason(const HostActivity& a);

/// The first busy epoch's reason in a record ("epoch 2: other processes used 1.9 of 2 cores"), or other processes
/// on its GPU ("other processes on the GPU: pid 4242 python"); "" when neither.
std::string busy_host_evidence(const RunRecord& r);

}  // namespace gpubench
