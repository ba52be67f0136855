// A library that crashes while it loads (a static initialiser dereferencing null), as a backend library built for
// another LibTorch may: `--backend-library` must report it, not die with it.
#include <csignal>

namespace {
const bool crashed = [] {
  std::raise(SIGSEGV);
  return true;
}();
}  // namespace

extern "C" int gpubench_crashing_backend_loaded() { return crashed ? 1 : 0; }
