#pragma once
#include <string>

namespace gpubench {

/// What was built: written into every record so a number can be traced to the code that produced it.
struct BuildInfo {
  std::string version;       ///< gpubench's semantic version
  std::string git_revision;  ///< short hash, "-dirty" when tracked files were modified, "unknown" outside git
  std::string build_type;    ///< CMake build type; anything but Release is warned about
  std::string compiler;      ///< e.g. "GNU-12.2.0"
  /// gpubench's CUDA module (GPUBENCH_CUDA, cmake/GpubenchTorch.cmake): its own kernels, FP8, nvJPEG, cuBLASLt
  /// epilogues, CUDA graphs. Without it, the options that need it are refused (resolve.hpp).
  bool cuda_module = false;
  std::string libtorch_version;  ///< the LibTorch this binary was built against, e.g. "2.15.0" (empty: torch-free)
  std::string libtorch_kind;     ///< which device libraries that LibTorch has: CUDA, ROCM, XPU or CPU
};

/// Build information generated at build time (cmake/WriteBuildInfo.cmake).
const BuildInfo& build_info();

}  // namespace gpubench
