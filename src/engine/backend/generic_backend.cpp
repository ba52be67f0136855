// The generic backend: any device LibTorch drives through its device-generic API (MPS, XPU, ROCm's HIP build without
// gpubench's CUDA module, PrivateUse1 backends). Steps are timed on c10::Event pairs on the device's current stream
// (elapsedTime, as torch.Event does); a device whose events cannot time falls back to the host clock with the device
// synchronised at every step, and the record says which. Memory comes from at::accelerator's allocator statistics
// where the device's allocator keeps them.

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <vector>

#include "backend/backend.h"
#include "device.h"
#include "step_timer.h"

namespace gpubench::engine {

namespace {

c10::Stream current_stream(const c10::Device& d) { return c10::impl::getDeviceGuardImpl(d.type())->getStream(d); }

class EventStepTimer final : public StepTimer {
 public:
  explicit EventStepTimer(c10::Device d, std::string method) : device_(d), method_(std::move(method)) {}
  void begin_epoch(int64_t max_steps) override {
    used_ = 0;
    while (static_cast<int64_t>(events_.size()) < max_steps + 1) add();
    mark();
  }
  void mark() override {
    if (used_ >= events_.size()) add();
    events_[used_++]->record(current_stream(device_));
  }
  std::vector<double> end_epoch_ms() override {
    std::vector<double> ms;
    for (size_t i = 1; i < used_; ++i) ms.push_back(events_[i - 1]->elapsedTime(*events_[i]));
    return ms;
  }
  const char* method() const override { return method_.c_str(); }

 private:
  void add() { events_.push_back(std::make_unique<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT)); }
  c10::Device device_;
  std::string method_;
  std::vector<std::unique_ptr<c10::Event>> events_;
  size_t used_ = 0;
};

/// Whether the device's events time: two recorded on its stream, the device synchronised, their elapsed time read.
bool events_time(const c10::Device& d) {
  try {
    c10::Event a(d.type(), c10::EventFlag::BACKEND_DEFAULT), b(d.type(), c10::EventFlag::BACKEND_DEFAULT);
    a.record(current_stream(d));
    b.record(current_stream(d));
    b.synchronize();
    return a.elapsedTime(b) >= 0.0;
  } catch (const c10::Error&) {
    return false;
  }
}

class GenericBackend final : public Backend {
 public:
  explicit GenericBackend(const ResolvedDevice& d)
      : device_(d.device), id_(d.id), index_(d.device.has_index() ? d.device.index() : c10::DeviceIndex{0}) {}
  BackendKind kind() const override { return BackendKind::kGeneric; }
  bool has(Capability /*c*/) const override { return false; }  // gpubench's own kernels, FP8, graphs and nvJPEG are CUDA's
  void make_current() const override {
    if (served()) at::accelerator::setDeviceIndex(index_);
  }
  void synchronize() const override {
    if (served()) {
      at::accelerator::synchronizeDevice(index_);
    } else {
      c10::impl::getDeviceGuardImpl(device_.type())->synchronizeDevice(index_);
    }
  }
  std::unique_ptr<StepTimer> make_step_timer() const override {
    if (events_time(device_)) {
      return std::make_unique<EventStepTimer>(device_, "device events (c10::Event elapsedTime) on " + id_ +
                                                           "'s current stream");
    }
    return make_host_step_timer([this] { synchronize(); });
  }
  void reset_memory_peaks() const override {
    if (!served()) return;
    try {
      at::accelerator::resetPeakStats(index_);
    } catch (const c10::Error&) {  // an allocator without statistics: the record says the peak is unknown
    }
  }
  DeviceMemoryPeaks read_memory_peaks() const override {
    DeviceMemoryPeaks p;
    if (!served()) return p;
    try {
      const auto stats = at::accelerator::getDeviceStats(index_);
      p.allocated_bytes = stats.allocated_bytes[0].peak;  // index 0: StatType::AGGREGATE
      p.reserved_bytes = stats.reserved_bytes[0].peak;
    } catch (const c10::Error&) {
    }
    return p;
  }
  std::pair<int64_t, std::string> usable_memory() const override {
    if (!served()) return {0, ""};
    try {
      const auto [free_bytes, total_bytes] = at::accelerator::getMemoryInfo(index_);
      (void)free_bytes;
      if (total_bytes > 0) return {static_cast<int64_t>(total_bytes), "the device's total memory (its allocator's)"};
    } catch (const c10::Error&) {
    }
    return {0, ""};
  }
  std::pair<std::string, int> name_and_capability() const override {
    return {device_.is_mps() ? "Apple GPU (MPS)" : id_, 0};
  }
  void release_cached_memory() const override {
    if (!served()) return;
    try {
      at::accelerator::emptyCache();
    } catch (const c10::Error&) {
    }
  }
  std::string cap_memory(int64_t /*bytes*/) const override {
    throw std::runtime_error("a memory cap needs gpubench's CUDA backend (CUDA's caching allocator fraction); " + id_ +
                             " runs on the generic backend");
  }

 private:
  /// LibTorch's device-generic API serves the device: it is this process's accelerator.
  bool served() const {
    const auto current = at::accelerator::getAccelerator(false);
    return current && *current == device_.type();
  }
  c10::Device device_;
  std::string id_;
  c10::DeviceIndex index_;
};

}  // namespace

std::shared_ptr<const Backend> make_generic_backend(const ResolvedDevice& d) {
  return std::make_shared<GenericBackend>(d);
}

}  // namespace gpubench::engine
