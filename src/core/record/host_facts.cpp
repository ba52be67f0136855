#include "gpubench/core/record/host_facts.hpp"

#include "gpubench/core/io/redact.hpp"
#include "core/text.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gpubench {

namespace fs = std::filesystem;

namespace {

bool contains_in_first_lines(const fs::path& p, const std::string& needle, int max_lines) {
  std::ifstream in(p);
  std::string line;
  for (int i = 0; i < max_lines && std::getline(in, line); ++i) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string detect_container(const HostPaths& paths, const std::string& container_var, bool kubernetes_var) {
  const fs::path root(paths.root);
  std::error_code ec;
  if (kubernetes_var) return "kubernetes";
  if (fs::exists(root / ".dockerenv", ec)) return "docker";
  if (fs::exists(root / "run/.containerenv", ec)) return "podman";
  if (!container_var.empty()) return container_var;  // systemd-nspawn, podman, lxc set `container`
  const fs::path cgroup = fs::path(paths.proc) / "1/cgroup";
  for (const char* name : {"kubepods", "docker", "containerd", "lxc"}) {
    if (contains_in_first_lines(cgroup, name, 64)) return name == std::string("kubepods") ? "kubernetes" : name;
  }
  return "";
}

}  // namespace

CpuBf16 cpu_bf16_support(const HostPaths& paths, const std::string& onednn_max_isa) {
  CpuBf16 out;
  // Every ISA oneDNN can be capped at that lies below AVX512_CORE_BF16 (oneDNN's cpu_isa_t names, any case).
  const std::string cap = text::lower(onednn_max_isa);
  for (const char* below : {"sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2", "avx512_core", "avx512_core_vnni"}) {
    if (cap == below) {
      out.evidence = "ONEDNN_MAX_CPU_ISA=" + onednn_max_isa + " keeps oneDNN below AVX512_CORE_BF16";
      return out;
    }
  }
  std::ifstream in(fs::path(paths.proc) / "cpuinfo");
  std::string line;
  for (int i = 0; i < 4096 && std::getline(in, line); ++i) {
    // x86: "flags : ... avx512_bf16 ... amx_bf16"; Arm: "Features : ... bf16 ...". The first CPU's line is enough.
    const bool x86 = line.rfind("flags", 0) == 0, arm = line.rfind("Features", 0) == 0;
    if (!x86 && !arm) continue;
    std::istringstream words(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
    for (std::string w; words >> w;) {
      if (w == "amx_bf16" || w == "avx512_bf16" || (arm && w == "bf16")) {
        out.native = true;
        out.evidence = w;
        if (w == "amx_bf16") return out;  // the better of the two, where both are there
      }
    }
    if (!out.native) out.evidence = x86 ? "no AVX512-BF16 or AMX-BF16 instructions" : "no BF16 extension";
    return out;
  }
  out.evidence = "its instructions could not be read (/proc/cpuinfo)";
  return out;
}

CpuBf16 cpu_bf16_support() {
  static const CpuBf16 here = [] {
    const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (isa == nullptr) isa = std::getenv("DNNL_MAX_CPU_ISA");
    return cpu_bf16_support(HostPaths{}, isa == nullptr ? "" : isa);
  }();
  return here;
}

bool is_recorded_variable(const std::string& name) {
  for (const char* prefix : {"CUDA_", "NCCL_", "TORCH_", "PYTORCH_", "GPUBENCH_", "CUBLAS_", "CUDNN_", "ONEDNN_", "DNNL_"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name == "OMP_NUM_THREADS";
}

void fill_host_facts(EnvironmentRecord& e, const char* const* envp, const HostPaths& paths) {
  std::string container_var;
  bool kubernetes = false;
  for (const char* const* v = envp; v != nullptr && *v != nullptr; ++v) {
    const std::string entry(*v);
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = entry.substr(0, eq);
    // A variable may hold a store URL (GPUBENCH_DB, never recorded) or another secret: never shown whole.
    std::string value = without_passwords(entry.substr(eq + 1));
    if (value.size() > 1024) value = value.substr(0, 1024) + "...";  // bounded: a record is not an archive
    if (is_recorded_variable(name) && name != "GPUBENCH_RECORD_PATH_FILE" && name != "GPUBENCH_DB") {
      e.variables[name] = value;  // not the launcher's temporary path, never a store handed to a child
    }
    if (name == "container") container_var = value;
    if (name == "KUBERNETES_SERVICE_HOST") kubernetes = true;
  }

  std::ifstream meminfo(fs::path(paths.proc) / "meminfo");
  std::string key;
  long long kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemTotal:") {
      e.host_memory_bytes = static_cast<int64_t>(kib) * 1024;
      break;
    }
  }

  // Every CPU's governor: one name when they agree, else the distinct names.
  std::set<std::string> governors;
  std::error_code ec;
  const fs::path cpus = fs::path(paths.sys) / "devices/system/cpu";
  for (fs::directory_iterator it(cpus, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || name.find_first_not_of("0123456789", 3) != std::string::npos) {
      continue;
    }
    const std::string g = text::first_line((it->path() / "cpufreq/scaling_governor").string());
    if (!g.empty()) governors.insert(g);
  }
  if (governors.size() == 1) e.cpu_governor = *governors.begin();
  if (governors.size() > 1) {
    std::string all;
    for (const auto& g : governors) all += (all.empty() ? "" : ", ") + g;
    e.cpu_governor = "mixed: " + all;
  }
  e.container = detect_container(paths, container_var, kubernetes);
}

}  // namespace gpubench
