#include "profiler.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace gpubench::engine {

namespace {

namespace kp = torch::autograd::profiler;
namespace pi = torch::profiler::impl;

// libkineto::ActivityType values (kineto/ActivityType.h, as KinetoEvent::activityType() returns them).
enum KinetoActivity : uint8_t {
  kCpuOp = 0,
  kUserAnnotation = 1,
  kGpuMemcpy = 3,
  kGpuMemset = 4,
  kConcurrentKernel = 5,
  kCudaRuntime = 7,
  kCudaDriver = 8,
};

std::vector<ProfileEvent> convert(const kp::ProfilerResult& result) {
  std::vector<ProfileEvent> out;
  out.reserve(result.events().size());
  for (const auto& e : result.events()) {
    ProfileEvent p;
    p.name = e.name();
    p.start_ns = static_cast<int64_t>(e.startNs());
    p.end_ns = static_cast<int64_t>(e.endNs());
    switch (e.activityType()) {
      case kConcurrentKernel:
        p.kind = ProfileEvent::Kind::kKernel;
        p.lane = e.deviceResourceId();
        break;
      case kGpuMemcpy:
        p.kind = ProfileEvent::Kind::kMemcpy;
        p.lane = e.deviceResourceId();
        break;
      case kGpuMemset:
        p.kind = ProfileEvent::Kind::kMemset;
        p.lane = e.deviceResourceId();
        break;
      case kCpuOp:
        p.kind = ProfileEvent::Kind::kCpuOp;
        p.lane = static_cast<int64_t>(e.startThreadId());
        break;
      case kUserAnnotation:
        if (p.name != kProfileStepMarker) continue;
        p.kind = ProfileEvent::Kind::kStep;
        break;
      case kCudaRuntime:
      case kCudaDriver:
        if (!is_launch_call(p.name)) continue;
        p.kind = ProfileEvent::Kind::kLaunchApi;
        break;
      default:
        continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

ProfileCapture profile_steps(const ResolvedDevice& device, int64_t steps, const std::function<void()>& step,
                             const std::string& trace_path) {
  ProfileCapture cap;
  const bool cuda = device.device.is_cuda();
  // Kineto logs CUDA discovery errors on machines without a GPU; a CPU run has no use for them.
  if (!cuda) setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  std::set<pi::ActivityType> activities{pi::ActivityType::CPU};
  if (cuda) activities.insert(pi::ActivityType::CUDA);
  const pi::ProfilerConfig config(pi::ProfilerState::KINETO, /*report_input_shapes=*/false, /*profile_memory=*/false,
                                  /*with_stack=*/false, /*with_flops=*/false, /*with_modules=*/false);
  std::unique_ptr<kp::ProfilerResult> result;
  try {
    kp::prepareProfiler(config, activities);
    kp::enableProfiler(config, activities);
    try {
      step();  // unrecorded: CUPTI's start-up and the first launches under the profiler land here
      synchronize(device);
      for (int64_t i = 0; i < steps; ++i) {
        RECORD_USER_SCOPE(kProfileStepMarker);
        step();
      }
      synchronize(device);
    } catch (...) {
      kp::disableProfiler();
      throw;
    }
    result = kp::disableProfiler();
  } catch (const std::exception& e) {
    cap.error = "the profiler failed: " + first_line(e.what());
    return cap;
  }
  if (!result) {
    cap.error = "the profiler returned no result";
    return cap;
  }
  cap.events = convert(*result);
  const bool any_device = std::any_of(cap.events.begin(), cap.events.end(), [](const ProfileEvent& e) {
    return e.kind == ProfileEvent::Kind::kKernel || e.kind == ProfileEvent::Kind::kMemcpy;
  });
  if (cuda && !any_device) {
    cap.events.clear();
    cap.error = "the profiler recorded no CUDA kernels (CUPTI missing or not permitted: see NVreg_RestrictProfilingToAdminUsers)";
    return cap;
  }
  cap.source = cuda ? "CUDA kernels, copies and memsets (Kineto/CUPTI)"
                    : "CPU operators, self time (Kineto's operator profiler; a CPU run has no device kernels)";
  if (!trace_path.empty()) {
    namespace fs = std::filesystem;
    const std::string tmp = trace_path + ".partial";
    std::error_code ec;
    try {
      result->save(tmp);
      fs::rename(tmp, trace_path, ec);
      if (ec) throw std::runtime_error(ec.message());
      cap.trace_path = trace_path;
    } catch (const std::exception& e) {
      fs::remove(tmp, ec);
      cap.error = "could not write the trace " + trace_path + ": " + first_line(e.what());
    }
  }
  return cap;
}

}  // namespace gpubench::engine
