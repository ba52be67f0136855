#include "step_timer.h"

#include <chrono>

namespace gpubench::engine {

namespace {

class HostStepTimer final : public StepTimer {
 public:
  explicit HostStepTimer(std::function<void()> sync) : sync_(std::move(sync)) {}
  void begin_epoch(int64_t max_steps) override {
    marks_.clear();
    marks_.reserve(static_cast<size_t>(max_steps) + 1);
    mark();
  }
  void mark() override {
    if (sync_) sync_();
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
    return sync_ ? "host clock, device synchronised every step (its events do not time)" : "host clock";
  }

 private:
  std::function<void()> sync_;
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

}  // namespace

std::unique_ptr<StepTimer> make_step_timer(const ResolvedDevice& device) {
  return backend_of(device).make_step_timer();
}

std::unique_ptr<StepTimer> make_host_step_timer(std::function<void()> synchronize_each_step) {
  return std::make_unique<HostStepTimer>(std::move(synchronize_each_step));
}

}  // namespace gpubench::engine
