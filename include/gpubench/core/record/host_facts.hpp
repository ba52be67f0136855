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

/// Whether this CPU does bfloat16 matrix work in hardware as oneDNN (PyTorch's CPU convolutions and matmuls) uses
/// it: x86 AVX512-BF16 or AMX-BF16, Arm's BF16 extension. Without them bf16 autocast is emulated in software, about
/// 9x slower per image than fp32 (ResNet-50 on a 2-core AVX2 host: 0.5 vs 4.4 images/s). `onednn_max_isa` is
/// ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA): a cap below AVX512_CORE_BF16 turns the instructions off for oneDNN too.
struct CpuBf16 {
  bool native = false;
  std::string evidence;  ///< "avx512_bf16", "amx_bf16", "bf16" (Arm); or why not ("no AVX512-BF16, AMX or Arm BF16")
};
CpuBf16 cpu_bf16_support(const HostPaths& paths, const std::string& onednn_max_isa);
/// The same for this process: /proc, and ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA from its environment.
CpuBf16 cpu_bf16_support();

/// Whether a variable's name is one `variables` keeps.
bool is_recorded_variable(const std::string& name);

}  // namespace gpubench
