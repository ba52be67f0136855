#include "device.h"

#include <ATen/Context.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <torch/mps.h>

#include <algorithm>
#include <fstream>
#include <utility>

#ifdef GPUBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gpubench::engine {

bool cuda_available() { return torch::cuda::is_available(); }
bool is_rocm_build() { return at::globalContext().hasROCM(); }
bool mps_available() { return torch::mps::is_available(); }

namespace {
ResolvedDevice make_cuda(int64_t index, const std::string& type) {
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  const std::string backend = type == "rocm" ? "ROCm" : "CUDA";
  if (count == 0) {
#ifdef GPUBENCH_WITH_CUDA
    const std::string why = "no " + backend + " device is visible (is the driver loaded? nvidia-smi or rocm-smi "
                            "should list the GPU; check CUDA_VISIBLE_DEVICES)";
#else
    const std::string why = "this gpubench was built against a LibTorch without " + backend + " support";
#endif
    throw DeviceUnavailable("device '" + type + "' requested but " + why);
  }
  if (type == "rocm" && !is_rocm_build()) throw DeviceUnavailable("device 'rocm' requested but this LibTorch is a CUDA build");
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
  }
}

void reset_memory_peaks(const ResolvedDevice& d) {
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(d.device.index());
#else
  (void)d;
#endif
}

DeviceMemoryPeaks read_memory_peaks(const ResolvedDevice& d) {
  DeviceMemoryPeaks p;
#ifdef GPUBENCH_WITH_CUDA
  if (d.device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d.device.index());
    p.allocated_bytes = stats.allocated_bytes[0].peak;  // index 0: StatType::AGGREGATE
    p.reserved_bytes = stats.reserved_bytes[0].peak;
  }
#else
  (void)d;
#endif
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

int64_t host_peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace gpubench::engine
