// --backend-library: an out-of-tree accelerator's backend (a PrivateUse1 backend: Ascend's torch_npu, Intel Gaudi,
// gpubench's test accelerator) loaded from its shared library before any device is counted, as its users do from C++.
// The library registers its allocator, device guard, hooks, operators and name from static initialisers; LibTorch
// offers no way to undo that, so one process loads at most one such library. A library that crashes while it loads
// must not take gpubench with it unexplained: it is first loaded in a child process, and only a clean load there is
// repeated here.

#include <c10/core/DeviceType.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <string>

#include "gpubench/engine/engine.hpp"

namespace gpubench {

namespace {

std::mutex loaded_mutex;
std::optional<BackendLibrary> loaded;

bool registers_backend() {
  return c10::is_privateuse1_backend_registered() && c10::impl::hasDeviceGuardImpl(c10::DeviceType::PrivateUse1);
}

/// How long a library may take to load in the probe (a real backend initialises its runtime: seconds).
constexpr int kProbeSeconds = 120;

/// Loads the library in a child process: "" when it loads and registers a PrivateUse1 backend there, else why not.
std::string probe_in_child(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return "";  // cannot probe: load it here and let what happens happen
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return "";
  }
  if (pid == 0) {
    close(fds[0]);
    // A library that crashes here is reported, not kept: no core file of the probe in the user's folder.
    const rlimit no_core{0, 0};
    (void)setrlimit(RLIMIT_CORE, &no_core);
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    int code = 0;
    std::string msg;
    if (h == nullptr) {
      const char* e = dlerror();
      msg = e != nullptr ? e : "dlopen failed";
      code = 3;
    } else if (!registers_backend()) {
      code = 4;
    }
    if (!msg.empty()) (void)!write(fds[1], msg.data(), msg.size());
    _exit(code);
  }
  close(fds[1]);
  // The child writes a line at most (less than a pipe holds) and exits: wait for it first, within a bound, so a
  // library whose initialisers hang is reported too.
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kProbeSeconds);
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 || (done < 0 && errno == EINTR)) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(fds[0]);
      return "it did not finish loading within " + std::to_string(kProbeSeconds) + " s (its initialisers hang)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string msg;
  char buf[512];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (done < 0) return "";  // the child is gone unobserved: load it here and let what happens happen
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "it crashed while loading (signal " + std::to_string(sig) + ", " + strsignal(sig) +
           "): its initialisers failed; check that it was built for this LibTorch (" + libtorch_build() + ")";
  }
  if (!WIFEXITED(status)) return "";
  switch (WEXITSTATUS(status)) {
    case 0: return "";
    case 3: return "it cannot be loaded: " + msg;
    case 4:
      return "it loaded but registered no PrivateUse1 backend (no backend name and device guard): it is not a "
             "LibTorch backend library";
    default: return "loading it ended its process with status " + std::to_string(WEXITSTATUS(status));
  }
}

/// The library's version: what it exports as gpubench_backend_version(), else the file name's after ".so."
/// (libfoo.so.2.1: 2.1), else empty.
std::string version_of(void* handle, const std::string& path) {
  using VersionFn = const char* (*)();
  if (auto* fn = reinterpret_cast<VersionFn>(dlsym(handle, "gpubench_backend_version"))) {
    if (const char* v = fn()) return v;
  }
  const auto so = path.rfind(".so.");
  return so == std::string::npos ? "" : path.substr(so + 4);
}

}  // namespace

BackendLibrary load_backend_library(const std::string& path) {
  const std::lock_guard<std::mutex> lock(loaded_mutex);
  if (loaded) {
    if (loaded->path == path) return *loaded;
    throw BackendLibraryError("backend library " + path + ": this process already loaded " + loaded->path +
                              " (a LibTorch process holds one PrivateUse1 backend)");
  }
  auto fail = [&path](const std::string& why) { throw BackendLibraryError("backend library " + path + ": " + why); };
  struct stat st {};
  if (path.empty()) fail("no path given");
  if (stat(path.c_str(), &st) != 0) fail(std::string("cannot read it: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("not a file");
  if (c10::is_privateuse1_backend_registered()) {
    fail("a PrivateUse1 backend ('" + c10::get_privateuse1_backend() + "') is already registered in this process");
  }
  if (const std::string why = probe_in_child(path); !why.empty()) fail(why);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    fail(std::string("cannot be loaded: ") + (e != nullptr ? e : "dlopen failed"));
  }
  if (!registers_backend()) {
    fail("it loaded but registered no PrivateUse1 backend (no backend name and device guard): it is not a LibTorch "
         "backend library");
  }
  BackendLibrary b;
  b.path = path;
  b.backend = c10::get_privateuse1_backend();
  b.version = version_of(handle, path);
  b.devices = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->deviceCount();
  loaded = b;
  return b;
}

std::optional<BackendLibrary> loaded_backend_library() {
  const std::lock_guard<std::mutex> lock(loaded_mutex);
  return loaded;
}

}  // namespace gpubench
