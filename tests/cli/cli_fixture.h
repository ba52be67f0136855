#pragma once
// The fixture of the gpubench binary's end-to-end tests: runs the real binary, captures exit code and output.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/temp_dir.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

/// A committed H200 record (ResNet-50 bs 256, --amp, with telemetry), for the commands that read records.
inline const std::string kCommitted =
    std::string(GPUBENCH_FIXTURES) + "/records/amp-energy/gpubench_amp_bs256_r1.json";

class CliTest : public ::testing::Test {
 protected:

  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  Result gpubench(const std::string& args, const std::string& env = "") {
    const std::string cmd = env + " " + std::string(GPUBENCH_BINARY) + " " + args + " > " + (dir_ / "stdout").string() +
                            " 2> " + (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "stdout"), slurp(dir_ / "stderr")};
  }

  std::string tiny() const { return std::string(GPUBENCH_TEST_DATA) + "/tiny_resnet.yaml"; }

  // A fresh folder per test and per run (mkdtemp): concurrent ctest runs never share or clean each other's files.
  testing::TempDir tmp_{"cli"};
  fs::path dir_ = tmp_.path();
};

/// What the binary under test was built with (`info --format json`'s "build": cuda_module, libtorch_version,
/// libtorch_kind), asked once.
inline const nlohmann::json& binary_build() {
  static const nlohmann::json build = [] {
    std::string out;
    if (FILE* p = ::popen((std::string(GPUBENCH_BINARY) + " info --device cpu --format json 2>/dev/null").c_str(), "r")) {
      char buf[4096];
      size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
      ::pclose(p);
    }
    return nlohmann::json::parse(out).at("build");
  }();
  return build;
}

/// The binary has gpubench's CUDA module (GPUBENCH_CUDA): its kernels, FP8, nvJPEG, CUDA graphs.
inline bool binary_has_cuda_module() { return binary_build().at("cuda_module").get<bool>(); }

inline std::string fmt_day(int day) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-11-%02dT02:00:00Z", day + 1);
  return buf;
}

/// A night of the CI history: the committed record with its throughput scaled, its own start time and driver.
inline RunRecord night(const RunRecord& base, int day, double speed, const std::string& driver, double wobble) {
  RunRecord r = base;
  r.environment.start_time_utc = fmt_day(day);
  r.telemetry.driver_version = driver;
  std::vector<double> all;
  for (auto& e : r.epochs) {
    for (auto& t : e.step_times_ms) t = t / speed * (1.0 + wobble);
    e.step_time = summarize_step_times(e.step_times_ms);
    e.seconds = e.seconds / speed * (1.0 + wobble);
    e.samples_per_s = static_cast<double>(e.samples) / e.seconds;
    all.insert(all.end(), e.step_times_ms.begin(), e.step_times_ms.end());
  }
  summarize_run(r, all);
  return r;
}

}  // namespace gpubench
