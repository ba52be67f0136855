#include "device.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/ops/empty.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/XPUHooksInterface.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <torch/mps.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "gpubench/engine/engine.hpp"

#ifdef GPUBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gpubench::engine {

bool cuda_available() { return torch::cuda::is_available(); }
bool is_rocm_build() { return at::detail::getCUDAHooks().isBuilt() && at::detail::getCUDAHooks().hasROCM(); }
bool is_cuda_build() { return at::detail::getCUDAHooks().isBuilt() && !at::detail::getCUDAHooks().hasROCM(); }
bool mps_available() { return torch::mps::is_available(); }
bool xpu_available() { return at::detail::getXPUHooks().isBuilt() && at::detail::getXPUHooks().isAvailable(); }

/// The device's accelerator index when it is one LibTorch's device-generic API serves (at::accelerator: its caching
/// allocator's statistics, its memory, synchronisation); empty for the CPU.
std::optional<c10::DeviceIndex> accelerator_index(const ResolvedDevice& d) {
  if (d.device.is_cpu()) return std::nullopt;
  const auto current = at::accelerator::getAccelerator(false);
  if (!current || *current != d.device.type()) return std::nullopt;
  return d.device.has_index() ? d.device.index() : c10::DeviceIndex{0};
}

namespace {
ResolvedDevice make_cuda(int64_t index, const std::string& type) {
  const std::string backend = type == "rocm" ? "ROCm" : "CUDA";
  // Which LibTorch this is decides first: a device of the other kind can never appear, whatever is plugged in.
  if (type == "rocm" && !is_rocm_build()) {
    throw DeviceUnavailable("device 'rocm' requested but this LibTorch is not a ROCm build (" + libtorch_build() +
                            "): AMD GPUs need a ROCm LibTorch; NVIDIA GPUs are device: cuda");
  }
  if (type == "cuda" && is_rocm_build()) {
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
}  // namespace

ResolvedDevice resolve_device(const std::string& spec) {
  if (spec == "auto") {
    if (cuda_available()) return make_cuda(0, is_rocm_build() ? "rocm" : "cuda");
    if (mps_available()) return resolve_device("mps");
    if (xpu_available()) return resolve_device("xpu");
    return resolve_device("cpu");
  }
  if (spec == "cpu") return ResolvedDevice{c10::Device(c10::kCPU), "cpu", "cpu"};
  if (spec == "mps") {
    if (!mps_available()) {
      throw DeviceUnavailable("device 'mps' requested but Apple's Metal backend is not available here "
                              "(it needs macOS 12.3+ on Apple silicon and a LibTorch built with MPS)");
    }
    return ResolvedDevice{c10::Device(c10::kMPS), "mps", "mps"};
  }
  const auto colon = spec.find(':');
  const std::string type = spec.substr(0, colon);
  const int64_t index = colon == std::string::npos ? 0 : std::stoll(spec.substr(colon + 1));
  if (type == "cuda" || type == "rocm") return make_cuda(index, type);
  if (type == "xpu") {
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
                          "xpu"};
  }
  throw DeviceUnavailable("unknown device '" + spec + "'");
}

void make_current(const ResolvedDevice& d) {
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) c10::cuda::set_device(static_cast<c10::DeviceIndex>(d.device.index()));
#else
  (void)d;
#endif
}

void synchronize(const ResolvedDevice& d) {
  if (d.device.is_cuda()) {
    torch::cuda::synchronize(d.device.index());
  } else if (d.device.is_mps()) {
    torch::mps::synchronize();
  } else if (const auto index = accelerator_index(d)) {
    at::accelerator::synchronizeDevice(*index);
  }
}

// The CUDA module reads CUDA's caching allocator directly; any other accelerator (ROCm, XPU, MPS in a build without
// the module) through LibTorch's device-generic allocator interface, where its allocator implements it.
void reset_memory_peaks(const ResolvedDevice& d) {
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(d.device.index());
    return;
  }
#endif
  if (const auto index = accelerator_index(d)) {
    try {
      at::accelerator::resetPeakStats(*index);
    } catch (const c10::Error&) {  // an allocator without statistics: the record says the peak is unknown
    }
  }
}

DeviceMemoryPeaks read_memory_peaks(const ResolvedDevice& d) {
  DeviceMemoryPeaks p;
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d.device.index());
    p.allocated_bytes = stats.allocated_bytes[0].peak;  // index 0: StatType::AGGREGATE
    p.reserved_bytes = stats.reserved_bytes[0].peak;
    return p;
  }
#endif
  if (const auto index = accelerator_index(d)) {
    try {
      const auto stats = at::accelerator::getDeviceStats(*index);
      p.allocated_bytes = stats.allocated_bytes[0].peak;
      p.reserved_bytes = stats.reserved_bytes[0].peak;
    } catch (const c10::Error&) {
    }
  }
  return p;
}

std::pair<int64_t, std::string> usable_memory(const ResolvedDevice& d) {
  if (d.type == "cpu") {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    long long kib = 0;
    while (meminfo >> key >> kib) {
      std::getline(meminfo, unit);
      if (key == "MemAvailable:") return {static_cast<int64_t>(kib) * 1024, "the host's available memory (MemAvailable)"};
    }
    return {0, ""};
  }
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, std::max<int>(0, d.device.index())) == cudaSuccess) {
      return {static_cast<int64_t>(p.totalGlobalMem), "the GPU's total memory"};
    }
  }
#endif
  if (const auto index = accelerator_index(d)) {
    try {
      const auto [free_bytes, total_bytes] = at::accelerator::getMemoryInfo(*index);
      (void)free_bytes;
      if (total_bytes > 0) return {static_cast<int64_t>(total_bytes), "the device's total memory (LibTorch's allocator)"};
    } catch (const c10::Error&) {
    }
  }
  return {0, ""};
}

std::pair<std::string, int> name_and_capability(const ResolvedDevice& d) {
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, std::max<int>(0, d.device.index())) == cudaSuccess) {
      return {p.name, p.major * 10 + p.minor};
    }
  }
#endif
  return {d.type == "cpu" ? "CPU" : d.id, 0};
}

void release_cached_memory(const ResolvedDevice& d) {
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)d;
#endif
}

std::string cap_device_memory(const ResolvedDevice& d, int64_t bytes) {
#ifdef GPUBENCH_WITH_CUDA
  if (!d.device.is_cuda()) throw std::runtime_error("a memory cap needs a CUDA device; " + d.id + " is not one");
  // The allocator is made on the device's first allocation; capping it before that fails ("Allocator not
  // initialized"), so one small tensor comes first (what torch.cuda.set_per_process_memory_fraction's lazy init does).
  (void)at::empty({1}, at::TensorOptions().device(d.device));
  const c10::cuda::CUDAGuard guard(d.device.index());
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || total_bytes == 0) {
    throw std::runtime_error("could not read " + d.id + "'s memory size to cap it");
  }
  const double fraction = static_cast<double>(bytes) / static_cast<double>(total_bytes);
  if (fraction > 1.0) throw std::runtime_error("the memory cap is more than " + d.id + " has");
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, d.device.index());
  char buf[200];
  std::snprintf(buf, sizeof buf, "the caching allocator capped at %.3f of %.2f GiB (%.2f GiB)", fraction,
                static_cast<double>(total_bytes) / 1073741824.0, static_cast<double>(bytes) / 1073741824.0);
  return buf;
#else
  (void)bytes;
  throw std::runtime_error("a memory cap on " + d.id + " needs gpubench's CUDA module (this build has none)");
#endif
}

int64_t host_peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace gpubench::engine
