#pragma once
// A fresh folder per test (mkdtemp), removed afterwards: two runs of one test, or of two ctest invocations at once,
// never share or clean each other's files.

#include <ftw.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gpubench::testing {

class TempDir {
 public:
  /// `/tmp/gpubench_<tag>_<current test>_XXXXXX`.
  explicit TempDir(const std::string& tag) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? info->name() : "none";
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / ("gpubench_" + tag + "_" + name + "_XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    // nftw rather than std::filesystem::remove_all: LibTorch's library exports its own std::filesystem symbols, and in
    // a test linked with it that remove_all crashed (a null call inside libtorch.so).
    ::nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
           FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& child) const { return path_ / child; }

 private:
  std::filesystem::path path_;
};

}  // namespace gpubench::testing
