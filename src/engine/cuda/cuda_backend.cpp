// The CUDA backend, part of gpubench's CUDA module (compiled only with it): CUDA events on the compute stream, CUDA's
// caching allocator (statistics, cache, per-process fraction), the device's properties. A ROCm LibTorch's HIP devices
// present as CUDA and take this backend too where the module is built against it.

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "backend/backend.h"
#include "device.h"
#include "step_timer.h"

namespace gpubench::engine {

namespace {

class CudaStepTimer final : public StepTimer {
 public:
  void begin_epoch(int64_t max_steps) override {
    used_ = 0;
    while (static_cast<int64_t>(events_.size()) < max_steps + 1) {
      events_.push_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    }
    mark();
  }
  void mark() override {
    if (used_ >= events_.size()) events_.push_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    events_[used_++]->record(at::cuda::getCurrentCUDAStream());
  }
  std::vector<double> end_epoch_ms() override {
    std::vector<double> ms;
    for (size_t i = 1; i < used_; ++i) ms.push_back(events_[i - 1]->elapsed_time(*events_[i]));
    return ms;
  }
  const char* method() const override { return "CUDA events on the compute stream"; }

 private:
  std::vector<std::unique_ptr<at::cuda::CUDAEvent>> events_;
  size_t used_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const ResolvedDevice& d) : device_(d.device), id_(d.id), index_(std::max<int>(0, d.device.index())) {}
  BackendKind kind() const override { return BackendKind::kCuda; }
  bool has(Capability /*c*/) const override { return true; }  // each feature still checks its own conditions
  void make_current() const override { c10::cuda::set_device(static_cast<c10::DeviceIndex>(index_)); }
  void synchronize() const override { torch::cuda::synchronize(static_cast<int64_t>(index_)); }
  std::unique_ptr<StepTimer> make_step_timer() const override { return std::make_unique<CudaStepTimer>(); }
  void reset_memory_peaks() const override {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index_));
  }
  DeviceMemoryPeaks read_memory_peaks() const override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index_));
    DeviceMemoryPeaks p;
    p.allocated_bytes = stats.allocated_bytes[0].peak;  // index 0: StatType::AGGREGATE
    p.reserved_bytes = stats.reserved_bytes[0].peak;
    return p;
  }
  std::pair<int64_t, std::string> usable_memory() const override {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, index_) == cudaSuccess) {
      return {static_cast<int64_t>(p.totalGlobalMem), "the GPU's total memory"};
    }
    return {0, ""};
  }
  std::pair<std::string, int> name_and_capability() const override {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, index_) == cudaSuccess) return {p.name, p.major * 10 + p.minor};
    return {id_, 0};
  }
  void release_cached_memory() const override { c10::cuda::CUDACachingAllocator::emptyCache(); }
  std::string cap_memory(int64_t bytes) const override {
    // The allocator is made on the device's first allocation; capping it before that fails ("Allocator not
    // initialized"), so one small tensor comes first (what torch.cuda.set_per_process_memory_fraction's lazy init
    // does).
    (void)at::empty({1}, at::TensorOptions().device(device_));
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || total_bytes == 0) {
      throw std::runtime_error("could not read " + id_ + "'s memory size to cap it");
    }
    const double fraction = static_cast<double>(bytes) / static_cast<double>(total_bytes);
    if (fraction > 1.0) throw std::runtime_error("the memory cap is more than " + id_ + " has");
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index_));
    char buf[200];
    std::snprintf(buf, sizeof buf, "the caching allocator capped at %.3f of %.2f GiB (%.2f GiB)", fraction,
                  static_cast<double>(total_bytes) / 1073741824.0, static_cast<double>(bytes) / 1073741824.0);
    return buf;
  }

 private:
  c10::Device device_;
  std::string id_;
  int index_;
};

}  // namespace

std::shared_ptr<const Backend> make_cuda_backend(const ResolvedDevice& d) { return std::make_shared<CudaBackend>(d); }

}  // namespace gpubench::engine
