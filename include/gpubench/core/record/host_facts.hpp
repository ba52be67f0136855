#pragma once
// Host facts that decide whether two runs are comparable: memory, CPU frequency governor, container, and the
// environment variables that change CUDA, NCCL and PyTorch behaviour. Read from /proc and /sys; no torch.

#include <string>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

/// Where to read from (tests point these at a fake tree).
struct HostPaths {
  std::string proc = "/proc";
  std::string sys = "/sys";
  std::string root = "/";
};

/// Fills `host_memory_bytes`, `cpu_governor`, `container` and `variables` of `e` from `paths` and `envp` (a
/// NULL-terminated array of "NAME=value", as `environ`). Never throws; what it cannot read stays empty.
void fill_host_facts(EnvironmentRecord& e, const char* const* envp, const HostPaths& paths = HostPaths{});

/// Whether a variable's name is one `variables` keeps.
bool is_recorded_variable(const std::string& name);

}  // namespace gpubench
