#pragma once
// A dlopen'ed shared library with typed symbol lookup; closed on destruction.

#include <dlfcn.h>

#include <string>

namespace gpubench::telemetry {

class DynamicLibrary {
 public:
  explicit DynamicLibrary(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* e = dlerror();
      error_ = e != nullptr ? e : "dlopen failed";
    }
  }
  ~DynamicLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }

  /// The symbol as a function pointer of type F, or null when the library lacks it.
  template <typename F>
  F symbol(const char* name) const {
    return handle_ != nullptr ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
  }

 private:
  void* handle_;
  std::string error_;
};

}  // namespace gpubench::telemetry
