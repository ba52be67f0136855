#include "gpubench/core/check.hpp"

#include <cstring>
#include <stdexcept>

namespace gpubench {

void check_failed(const char* condition, const std::string& message, const char* file, int line) {
  // The path from the source folder on (src/engine/trainer.cpp), not the build machine's absolute path.
  const char* shown = file;
  for (const char* marker : {"/src/", "/include/", "/tests/"}) {
    if (const char* at = std::strstr(file, marker)) {
      shown = at + 1;
      break;
    }
  }
  throw std::logic_error("internal error at " + std::string(shown) + ":" + std::to_string(line) + ": " + condition +
                         " does not hold" + (message.empty() ? "" : " (" + message + ")") +
                         "; please report it with the command line");
}

}  // namespace gpubench
