#pragma once
// A device type as a type: what code branches on. The text (`cuda`, `rocm`, `mps`, ... the part of `cuda:1` before its
// colon) is what scenarios, records and LibTorch hold; an out-of-tree accelerator's own name (a PrivateUse1 backend,
// `--backend-library`) is DeviceKind::kOther.

#include <string_view>

namespace gpubench {

enum class DeviceKind { kCpu, kCuda, kRocm, kMps, kXpu, kOther };

/// The kind of device type `type` ("hip" is ROCm's). Never throws: a record's text goes through it too.
inline DeviceKind device_kind(std::string_view type) {
  if (type == "cpu") return DeviceKind::kCpu;
  if (type == "cuda") return DeviceKind::kCuda;
  if (type == "rocm" || type == "hip") return DeviceKind::kRocm;
  if (type == "mps") return DeviceKind::kMps;
  if (type == "xpu") return DeviceKind::kXpu;
  return DeviceKind::kOther;
}

/// A GPU LibTorch drives as its `cuda` device, with CUDA's caching allocator: NVIDIA's, or AMD's in a ROCm build.
inline bool cuda_like(DeviceKind k) { return k == DeviceKind::kCuda || k == DeviceKind::kRocm; }

}  // namespace gpubench
