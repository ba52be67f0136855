#include "device.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/ops/empty.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/XPUHooksInterface.h>
#include <c10/core/DeviceType.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <torch/mps.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "gpubench/core/scenario/device_kind.hpp"
#include "gpubench/engine/engine.hpp"


namespace gpubench::engine {

bool cuda_available() { return torch::cuda::is_available(); }
bool is_rocm_build() { return at::detail::getCUDAHooks().isBuilt() && at::detail::getCUDAHooks().hasROCM(); }
bool is_cuda_build() { return at::detail::getCUDAHooks().isBuilt() && !at::detail::getCUDAHooks().hasROCM(); }
bool mps_available() { return torch::mps::is_available(); }
bool xpu_available() { return at::detail::getXPUHooks().isBuilt() && at::detail::getXPUHooks().isAvailable(); }

namespace {
ResolvedDevice make_cuda(int64_t index, const std::string& type) {
  const DeviceKind kind = device_kind(type);
  const std::string backend = kind == DeviceKind::kRocm ? "ROCm" : "CUDA";
  // Which LibTorch this is decides first: a device of the other kind can never appear, whatever is plugged in.
  if (kind == DeviceKind::kRocm && !is_rocm_build()) {
    throw DeviceUnavailable("device 'rocm' requested but this LibTorch is not a ROCm build (" + libtorch_build() +
                            "): AMD GPUs need a ROCm LibTorch; NVIDIA GPUs are device: cuda");
  }
  if (kind == DeviceKind::kCuda && is_rocm_build()) {
    throw DeviceUnavailable("device 'cuda' requested but this LibTorch is a ROCm build: its GPUs are AMD's, say "
                            "device: rocm (or rocm:N)");
  }
  if (!at::detail::getCUDAHooks().isBuilt()) {
    throw DeviceUnavailable("device '" + type + "' requested but this gpubench runs with a LibTorch without " + backend +
                            " (" + libtorch_build() + "; a build with GPUBENCH_CUDA=OFF against a CUDA wheel links "
                            "only its CPU side): rebuild with the CUDA module (GPUBENCH_CUDA=ON) or against a " +
                            backend + " LibTorch");
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (count == 0) {
    throw DeviceUnavailable("device '" + type + "' requested but no " + backend + " device is visible (is the driver "
                            "loaded? nvidia-smi or rocm-smi should list the GPU; check CUDA_VISIBLE_DEVICES)");
  }
  if (index >= count) {
    throw DeviceUnavailable("device '" + type + ":" + std::to_string(index) + "' requested but only " +
                            std::to_string(count) + " " + backend + " device(s) are visible");
  }
  ResolvedDevice d;
  d.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  d.type = is_rocm_build() ? "rocm" : "cuda";
  d.id = d.type + ":" + std::to_string(index);
  return d;
}

/// A PrivateUse1 device, under the name its backend library registered ("testaccel", "npu") or "privateuseone".
ResolvedDevice make_private_use1(int64_t index) {
  const std::string name = c10::get_privateuse1_backend();
  const auto* guard = c10::impl::hasDeviceGuardImpl(c10::DeviceType::PrivateUse1)
                          ? c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)
                          : nullptr;
  const int64_t count = guard != nullptr ? guard->deviceCount() : 0;
  if (count == 0) {
    throw DeviceUnavailable("device '" + name + "' requested but its backend reports no device" +
                            (guard == nullptr ? " (it registered no device guard)" : ""));
  }
  if (index >= count) {
    throw DeviceUnavailable("device '" + name + ":" + std::to_string(index) + "' requested but its backend has " +
                            std::to_string(count) + " device(s)");
  }
  return ResolvedDevice{c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index)),
                        name + ":" + std::to_string(index), name, nullptr};
}

/// The device `spec` names, without its backend (resolve_device adds it).
ResolvedDevice resolve_kind(const std::string& spec) {
  const bool private_use1 = c10::is_privateuse1_backend_registered();
  if (spec == "auto") {
    if (private_use1) return make_private_use1(0);  // a backend library was loaded to be used
    if (cuda_available()) return make_cuda(0, is_rocm_build() ? "rocm" : "cuda");
    if (mps_available()) return resolve_device("mps");
    if (xpu_available()) return resolve_device("xpu");
    return resolve_device("cpu");
  }
  if (spec == "cpu") return ResolvedDevice{c10::Device(c10::kCPU), "cpu", "cpu", nullptr};
  if (spec == "mps") {
    if (!mps_available()) {
      throw DeviceUnavailable("device 'mps' requested but Apple's Metal backend is not available here "
                              "(it needs macOS 12.3+ on Apple silicon and a LibTorch built with MPS)");
    }
    return ResolvedDevice{c10::Device(c10::kMPS), "mps", "mps", nullptr};
  }
  const auto colon = spec.find(':');
  const std::string type = spec.substr(0, colon);
  const int64_t index = colon == std::string::npos ? 0 : std::stoll(spec.substr(colon + 1));
  const DeviceKind kind = device_kind(type);
  if (kind == DeviceKind::kCuda || type == "rocm") return make_cuda(index, type);  // "hip" is not a device name here
  if (private_use1 && (type == c10::get_privateuse1_backend() || type == "privateuseone")) {
    return make_private_use1(index);
  }
  if (kind == DeviceKind::kXpu) {
    if (!xpu_available()) {
      throw DeviceUnavailable("device 'xpu' requested but " +
                              std::string(at::detail::getXPUHooks().isBuilt()
                                              ? "no Intel GPU is visible (is its driver loaded?)"
                                              : "this LibTorch has no XPU backend (" + libtorch_build() + ")"));
    }
    const int64_t count = at::detail::getXPUHooks().deviceCount();
    if (index >= count) {
      throw DeviceUnavailable("device '" + spec + "' requested but only " + std::to_string(count) +
                              " XPU device(s) are visible");
    }
    return ResolvedDevice{c10::Device(c10::kXPU, static_cast<c10::DeviceIndex>(index)), "xpu:" + std::to_string(index),
                          "xpu", nullptr};
  }
  throw DeviceUnavailable("unknown device '" + spec + "'" +
                          (private_use1 ? "; the loaded backend library registered '" + c10::get_privateuse1_backend() +
                                              "'"
                                        : "; an out-of-tree accelerator's device exists once its backend library is "
                                          "loaded (--backend-library PATH)"));
}
}  // namespace

ResolvedDevice resolve_device(const std::string& spec) {
  ResolvedDevice d = resolve_kind(spec);
  d.backend = make_backend(d);
  return d;
}

// What differs between devices is each backend's (backend/backend.h); these keep the engine's call sites short.
const Backend& backend_of(const ResolvedDevice& d) {
  if (d.backend) return *d.backend;
  static const std::shared_ptr<const Backend> cpu = make_cpu_backend(ResolvedDevice{});
  return *cpu;
}
void make_current(const ResolvedDevice& d) { backend_of(d).make_current(); }
void synchronize(const ResolvedDevice& d) { backend_of(d).synchronize(); }
void reset_memory_peaks(const ResolvedDevice& d) { backend_of(d).reset_memory_peaks(); }
DeviceMemoryPeaks read_memory_peaks(const ResolvedDevice& d) { return backend_of(d).read_memory_peaks(); }
std::pair<int64_t, std::string> usable_memory(const ResolvedDevice& d) { return backend_of(d).usable_memory(); }
std::pair<std::string, int> name_and_capability(const ResolvedDevice& d) { return backend_of(d).name_and_capability(); }
void release_cached_memory(const ResolvedDevice& d) { backend_of(d).release_cached_memory(); }
std::string cap_device_memory(const ResolvedDevice& d, int64_t bytes) { return backend_of(d).cap_memory(bytes); }

int64_t host_peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace gpubench::engine
