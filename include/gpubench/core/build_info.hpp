#pragma once
#include <string>

namespace gpubench {

/// What was built: written into every record so a number can be traced to the code that produced it.
struct BuildInfo {
  std::string version;       ///< gpubench's semantic version
  std::string git_revision;  ///< short hash, "-dirty" when tracked files were modified, "unknown" outside git
  std::string build_type;    ///< CMake build type; anything but Release is warned about
  std::string compiler;      ///< e.g. "GNU-12.2.0"
};

/// Build information generated at build time (cmake/WriteBuildInfo.cmake).
const BuildInfo& build_info();

}  // namespace gpubench
