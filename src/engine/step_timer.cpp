#include "step_timer.h"

#include <chrono>

#ifdef GPUBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace gpubench::engine {

namespace {

class HostStepTimer final : public StepTimer {
 public:
  explicit HostStepTimer(ResolvedDevice d) : device_(std::move(d)), sync_each_step_(device_.device.is_mps()) {}
  void begin_epoch(int64_t max_steps) override {
    marks_.clear();
    marks_.reserve(static_cast<size_t>(max_steps) + 1);
    mark();
  }
  void mark() override {
    if (sync_each_step_) synchronize(device_);
    marks_.push_back(std::chrono::steady_clock::now());
  }
  std::vector<double> end_epoch_ms() override {
    std::vector<double> ms;
    for (size_t i = 1; i < marks_.size(); ++i) {
      ms.push_back(std::chrono::duration<double, std::milli>(marks_[i] - marks_[i - 1]).count());
    }
    return ms;
  }
  const char* method() const override {
    return sync_each_step_ ? "host clock, device synchronised every step" : "host clock";
  }

 private:
  ResolvedDevice device_;
  bool sync_each_step_;
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

#ifdef GPUBENCH_WITH_CUDA
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
#endif

}  // namespace

std::unique_ptr<StepTimer> make_step_timer(const ResolvedDevice& device) {
#ifdef GPUBENCH_WITH_CUDA
  if (device.device.is_cuda()) return std::make_unique<CudaStepTimer>();
#endif
  return std::make_unique<HostStepTimer>(device);
}

}  // namespace gpubench::engine
