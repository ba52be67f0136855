// describe_environment() and list_devices(): host, device and software facts for records and `gpubench info`.

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/MPSHooksInterface.h>
#include <ATen/detail/XPUHooksInterface.h>
#include <sys/utsname.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "cuda/cuda_module.h"
#include "device.h"
#include "gpubench/core/build_info.hpp"
#include "gpubench/core/record/host_facts.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/scenario/device_kind.hpp"
#include "gpubench/engine/engine.hpp"

#ifdef GPUBENCH_WITH_NCCL
#include <torch/csrc/cuda/nccl.h>
#endif

extern char** environ;

namespace gpubench {

namespace {

std::string read_key(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto pos = line.find_first_of(":=", key.size());
      if (pos == std::string::npos) continue;
      std::string v = line.substr(pos + 1);
      v.erase(0, v.find_first_not_of(" \t\""));
      while (!v.empty() && (v.back() == '"' || v.back() == ' ')) v.pop_back();
      return v;
    }
  }
  return "";
}

std::string version_string(long v, long major_div, long minor_div) {
  if (v <= 0) return "";
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div) +
         (minor_div > 1 ? "." + std::to_string(v % minor_div) : "");
}

}  // namespace

EnvironmentRecord describe_environment(const std::string& device_id) {
  EnvironmentRecord e;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) e.hostname = host;
  struct utsname u {};
  if (uname(&u) == 0) e.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  const std::string pretty = read_key("/etc/os-release", "PRETTY_NAME");
  if (!pretty.empty()) e.os = pretty + " (" + e.os + ")";
  e.cpu_model = read_key("/proc/cpuinfo", "model name");
  e.cpu_cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  e.libtorch_version = TORCH_VERSION;
  e.libtorch_build = libtorch_build();
  const BuildInfo& b = build_info();
  e.gpubench_version = b.version;
  e.git_revision = b.git_revision;
  e.build_type = b.build_type;
  e.compiler = b.compiler;
  e.start_time_utc = utc_now_iso8601();
  fill_host_facts(e, environ);
#ifdef GPUBENCH_WITH_NCCL
  // LibTorch packs it as major << 32 | minor << 16 | patch (torch.cuda.nccl.version() unpacks it the same way).
  const std::uint64_t nccl = torch::cuda::nccl::version();
  if (nccl > 0) {
    e.nccl_version = std::to_string(nccl >> 32) + "." + std::to_string((nccl >> 16) & 0xffff) + "." +
                     std::to_string(nccl & 0xffff) + torch::cuda::nccl::version_suffix();
  }
#endif
  e.device = device_id;
  e.device_type = device_id.substr(0, device_id.find(':'));
  const DeviceKind kind = device_kind(e.device_type);
  if (kind == DeviceKind::kCpu) e.device_name = e.cpu_model;
  if (kind == DeviceKind::kMps) e.device_name = "Apple GPU (MPS)";
  try {  // the backend resolve_device chooses for it (backend/backend.cpp): one rule, not a second copy here
    e.backend = engine::backend_name(engine::backend_of(engine::resolve_device(device_id)).kind());
  } catch (const std::exception&) {  // a device that is not here: no backend ran it
  }
  if (const auto lib = loaded_backend_library(); lib && e.device_type == lib->backend) {
    e.backend_library = lib->path;
    e.backend_library_version = lib->version;
    e.device_name = lib->backend + (lib->version.empty() ? "" : " " + lib->version) + " (PrivateUse1 backend)";
  }

  const auto versions = engine::cuda_available() ? engine::cuda_versions() : std::nullopt;  // the CUDA module's
  if (versions) {
    e.cuda_driver_api_version = version_string(versions->driver, 1000, 10);
    e.driver_version = e.cuda_driver_api_version;  // the old name
    e.cuda_runtime_version = version_string(versions->runtime, 1000, 10);
    e.cudnn_version = version_string(at::detail::getCUDAHooks().versionCuDNN(), 10000, 100);
    if (cuda_like(kind)) {
      const auto colon = device_id.find(':');
      engine::describe_cuda_device(colon == std::string::npos ? 0 : std::stoi(device_id.substr(colon + 1)), e);
    }
  }
  return e;
}

namespace {

/// The CUDA runtime a CUDA LibTorch was built with ("13.0.0"); empty for any other.
std::string libtorch_cuda_version() {
  if (!engine::is_cuda_build()) return "";
  return version_string(at::detail::getCUDAHooks().versionCUDART(), 1000, 10);
}

/// How the generic backend's devices are proven (info's "tested" column).
constexpr const char* kTestedOnTheTestAccelerator =
    "in CI on the test accelerator (the generic backend); never on this hardware";

/// A backend gpubench has never run on real hardware: whether LibTorch has it and a device of it is there, and in
/// words what it is (when LibTorch has it) or what it needs.
BackendInfo untried_backend(const char* name, bool in_libtorch, bool available, const std::string& what,
                            const char* needs) {
  BackendInfo b;
  b.name = name;
  b.in_libtorch = in_libtorch;
  b.available = in_libtorch && available;
  b.note = in_libtorch ? what + "; never run on real hardware by gpubench" : needs;
  b.serves = "generic";
  b.tested = kTestedOnTheTestAccelerator;
  return b;
}

}  // namespace

std::string libtorch_build() {
  const std::string out = TORCH_VERSION;
  if (engine::is_rocm_build()) return out + ", ROCm build";
  if (engine::is_cuda_build()) {
    const std::string v = libtorch_cuda_version();
    return out + ", CUDA " + (v.empty() ? std::string() : v + " ") + "build";
  }
  if (at::detail::getXPUHooks().isBuilt()) return out + ", XPU build";
  if (at::detail::getMPSHooks().isBuilt()) return out + ", MPS build";
  return out + ", CPU only";
}

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  BackendInfo cuda;
  cuda.name = "cuda";
  cuda.in_libtorch = engine::is_cuda_build();
  cuda.available = cuda.in_libtorch && engine::cuda_available();
  cuda.version = libtorch_cuda_version();
  cuda.run_on_hardware = true;  // the H200 machine: every figure in docs/performance.md
  cuda.serves = build_info().cuda_module ? "cuda" : "generic";
  cuda.tested = "on hardware (H100, H200)";
  cuda.note = !cuda.in_libtorch ? "this LibTorch has no CUDA (a CUDA wheel, with gpubench's CUDA module, has it)"
              : !build_info().cuda_module ? "through LibTorch's kernels only: this build has no CUDA module (no fused "
                                            "or FP8 kernels, nvJPEG, CUDA graphs)"
              : cuda.available ? "NVIDIA GPUs, with gpubench's CUDA module"
                               : "no NVIDIA GPU visible (driver not loaded, or CUDA_VISIBLE_DEVICES hides them)";
  out.push_back(cuda);
  const bool rocm = engine::is_rocm_build();
  out.push_back(untried_backend("rocm", rocm, rocm && engine::cuda_available(), "AMD GPUs through LibTorch's HIP kernels",
                                "needs a ROCm LibTorch (AMD GPUs present through HIP as CUDA devices)"));
  out.push_back(untried_backend("mps", at::detail::getMPSHooks().isBuilt(), engine::mps_available(),
                                "Apple silicon through Metal", "needs Apple's LibTorch on macOS with Apple silicon"));
  out.push_back(untried_backend("xpu", at::detail::getXPUHooks().isBuilt(), engine::xpu_available(),
                                "Intel GPUs through LibTorch's XPU kernels", "needs an XPU LibTorch (Intel GPUs)"));
  if (const auto lib = loaded_backend_library()) {
    BackendInfo b;
    b.name = lib->backend;
    b.in_libtorch = true;
    b.available = lib->devices > 0;
    b.version = lib->version;
    b.serves = "generic";
    b.tested = kTestedOnTheTestAccelerator;
    b.note = "PrivateUse1 backend from " + lib->path + ", " + std::to_string(lib->devices) + " device(s)";
    out.insert(out.begin(), b);  // `device: auto` takes a loaded backend library's device first
  }
  BackendInfo cpu;
  cpu.name = "cpu";
  cpu.in_libtorch = true;
  cpu.available = true;
  cpu.run_on_hardware = true;
  cpu.serves = "cpu";
  cpu.tested = "on hardware";
  cpu.note = "always";
  out.push_back(cpu);
  return out;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  DeviceInfo cpu;
  cpu.id = "cpu";
  cpu.name = read_key("/proc/cpuinfo", "model name");
  cpu.note = std::to_string(std::thread::hardware_concurrency()) + " hardware threads";
  out.push_back(cpu);

  const auto n = static_cast<int>(torch::cuda::device_count());
  const std::string gpu_type = engine::is_rocm_build() ? "rocm" : "cuda";
  for (int i = 0; i < n; ++i) {
    // The CUDA module's property queries; without it (a ROCm LibTorch's GPUs), what LibTorch says.
    DeviceInfo d = engine::cuda_device_info(i).value_or(DeviceInfo{});
    d.id = gpu_type + ":" + std::to_string(i);
    if (d.name.empty()) d.note = "through LibTorch's own kernels (this build has no CUDA module)";
    out.push_back(d);
  }
  if (n == 0) {
    DeviceInfo d;
    d.id = gpu_type;
    d.available = false;
    d.note = at::detail::getCUDAHooks().isBuilt()
                 ? "no GPU visible: no NVIDIA/AMD driver loaded here, or CUDA_VISIBLE_DEVICES hides them"
                 : "this gpubench runs with a LibTorch without CUDA/ROCm (" + libtorch_build() + ")";
    out.push_back(d);
  }
  if (const auto lib = loaded_backend_library()) {
    for (int64_t i = 0; i < lib->devices; ++i) {
      DeviceInfo d;
      d.id = lib->backend + ":" + std::to_string(i);
      d.name = lib->backend;
      d.note = "from " + lib->path;
      out.push_back(d);
    }
  }
  DeviceInfo mps;
  mps.id = "mps";
  mps.available = engine::mps_available();
  mps.note = mps.available ? "Apple Metal" : "Apple Metal is available on macOS with Apple silicon only";
  out.push_back(mps);
  return out;
}

}  // namespace gpubench
