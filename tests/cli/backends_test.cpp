// The generic backend, proven on gpubench's test accelerator (tests/accelerator/test_accelerator.cpp, a PrivateUse1
// backend on host memory loaded with --backend-library): every workload kind trains, infers or generates on it with
// event-timed steps and the allocator's peaks; what only the CUDA module runs is refused naming the backend; a
// library that is missing, not a backend, or crashes while loading is a clear exit 2 (issue 72).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"

namespace gpubench {
namespace {

const std::string kLibrary = GPUBENCH_TEST_ACCELERATOR;
const std::string kOnAccelerator = " --backend-library " + std::string(GPUBENCH_TEST_ACCELERATOR) + " --device testaccel";

class BackendTest : public CliTest {
 protected:
  /// Runs `args` on the test accelerator and returns its record, after checking that it ran there and not on the
  /// CPU: the device, the generic backend, the library, steps timed on the device's events, the allocator's peaks.
  nlohmann::json run_on_accelerator(const std::string& args) {
    const std::string out = (dir_ / ("r" + std::to_string(++runs_) + ".json")).string();
    const Result r = gpubench(args + kOnAccelerator + " --out " + out + " -q");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    if (r.exit_code != 0) return {};
    const auto j = nlohmann::json::parse(read_file(out));
    const auto& env = j.at("environment");
    EXPECT_EQ(env.at("device"), "testaccel:0") << args;
    EXPECT_EQ(env.at("device_type"), "testaccel") << args;
    EXPECT_EQ(env.at("backend"), "generic") << args;
    EXPECT_EQ(env.at("backend_library"), kLibrary) << args;
    EXPECT_EQ(env.at("backend_library_version"), "1.0 (gpubench test accelerator)") << args;
    bool event_timed = false;
    for (const auto& n : j.at("notes")) {
      const std::string note = n.get<std::string>();
      if (note.find("times: device events (c10::Event elapsedTime) on testaccel:0") != std::string::npos) {
        event_timed = true;
      }
    }
    EXPECT_TRUE(event_timed) << args << "\n" << j.at("notes").dump(1);
    const auto& summary = j.at("summary");
    // The CPU keeps no allocator statistics: a peak here is the test accelerator's allocator's.
    EXPECT_GT(summary.value("peak_allocated_bytes", int64_t{0}), 0) << args;
    EXPECT_GE(summary.value("peak_reserved_bytes", int64_t{0}), summary.value("peak_allocated_bytes", int64_t{0}))
        << args;
    EXPECT_EQ(j.at("status"), "ok") << args;
    return j;
  }
  static std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  int runs_ = 0;
};

TEST_F(BackendTest, ResNetTrainsOnTheTestAcceleratorThroughTheGenericBackend) {
  const auto j = run_on_accelerator("run --config " + tiny() + " --epochs 1 --dataset-size 8");
  if (j.empty()) return;
  EXPECT_EQ(j.at("epochs").size(), 1u);
  EXPECT_EQ(j["epochs"][0].at("step_times_ms").size(), 2u);  // 8 images, batch 4
  for (const auto& ms : j["epochs"][0]["step_times_ms"]) EXPECT_GT(ms.get<double>(), 0.0);
}

TEST_F(BackendTest, TransformersTrainInferAndGenerateOnTheTestAccelerator) {
  const std::string gpt2 = "run gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --batch-size 2 --warmup-steps 1 "
                           "--epochs 1 --precision fp32 ";
  run_on_accelerator(gpt2 + "--seq-len 16 --dataset-size 4");
  run_on_accelerator(gpt2 + "--seq-len 16 --dataset-size 4 --mode inference");
  const auto g = run_on_accelerator(gpt2 + "--mode generate --prompt-tokens 8 --new-tokens 4");
  if (!g.empty()) {
    EXPECT_GT(g.at("summary").value("tokens_per_s", 0.0), 0.0);
  }
  run_on_accelerator("run bert-base --layers 1 --hidden 32 --heads 2 --seq-len 16 --batch-size 2 "
                     "--warmup-steps 1 --epochs 1 --dataset-size 4 --precision fp32");
}

TEST_F(BackendTest, AJpegFolderEpochRunsOnTheTestAccelerator) {
  const std::string data = (dir_ / "ds").string();
  ASSERT_EQ(gpubench("dataset make --images 8 --classes 2 --threads 1 -q --out " + data).exit_code, 0);
  const auto j = run_on_accelerator("run --config " + tiny() + " --data folder --data-path " + data +
                                    " --dataset-size 8 --epochs 1 --data-workers 1");
  if (j.empty()) return;
  EXPECT_EQ(j.at("data").at("decode"), "cpu") << j.at("data").dump();  // auto: no nvJPEG off CUDA
}

TEST_F(BackendTest, WhatOnlyTheCudaBackendRunsIsRefusedNamingTheBackend) {
  const std::string base = "run --config " + tiny() + kOnAccelerator + " --dry-run ";
  for (const std::string& ask : {std::string("--kernels fused"), std::string("--precision fp8"),
                                 std::string("--cuda-graph"),
                                 "--data folder --data-path " + std::string(GPUBENCH_TEST_DATA) + " --decode gpu"}) {
    const Result r = gpubench(base + ask);
    EXPECT_EQ(r.exit_code, 2) << ask << "\n" << r.out << r.err;
    const std::string said = r.out + r.err;
    EXPECT_NE(said.find("testaccel:0 runs on gpubench's generic backend"), std::string::npos) << ask << "\n" << said;
  }
  // Data-parallel ranks need a collective backend: refused before any rank starts.
  const Result ranks = gpubench("run --config " + tiny() + kOnAccelerator + " --nproc-per-node 2 --epochs 1 -q --out " +
                                (dir_ / "np.json").string());
  EXPECT_EQ(ranks.exit_code, 2) << ranks.err;
  EXPECT_NE(ranks.err.find("has no collective backend"), std::string::npos) << ranks.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "np.json"));
}

TEST_F(BackendTest, ABackendLibraryThatCannotServeIsAClearUsageError) {
  const std::string run = "run --config " + tiny() + " --device testaccel --dry-run --backend-library ";
  const Result missing = gpubench(run + (dir_ / "nowhere.so").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("backend_library"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("cannot read it"), std::string::npos) << missing.err;

  const Result not_backend = gpubench(run + GPUBENCH_NOT_A_BACKEND);
  EXPECT_EQ(not_backend.exit_code, 2) << not_backend.err;
  EXPECT_NE(not_backend.err.find("registered no PrivateUse1 backend"), std::string::npos) << not_backend.err;

  const Result crashing = gpubench(run + GPUBENCH_CRASHING_BACKEND);
  EXPECT_EQ(crashing.exit_code, 2) << crashing.err;
  EXPECT_NE(crashing.err.find("crashed while loading (signal 11"), std::string::npos) << crashing.err;

  const Result text = gpubench(run + tiny());  // a file, not a shared library
  EXPECT_EQ(text.exit_code, 2) << text.err;
  EXPECT_NE(text.err.find("cannot be loaded"), std::string::npos) << text.err;

  // A backend's device without its library: the scenario says what is missing.
  const Result bare = gpubench("run --config " + tiny() + " --device testaccel --dry-run");
  EXPECT_EQ(bare.exit_code, 2) << bare.err;
  EXPECT_NE(bare.err.find("needs its backend_library"), std::string::npos) << bare.err;
}

TEST_F(BackendTest, TheTestAcceleratorsMemoryIsWhatTheMemoryCheckAndAnOutOfMemoryRunSee) {
  // 160 MiB: less than ResNet-50's weights, gradients and momentum (~290 MiB); its allocator says so (getMemoryInfo).
  const std::string small = "GPUBENCH_TESTACCEL_MEMORY=167772160";
  const std::string run = "run --config " + tiny() + kOnAccelerator + " --epochs 1 --dataset-size 8 ";
  const Result refused = gpubench(run + "--dry-run", small);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("the device's total memory (its allocator's)"), std::string::npos) << refused.err;

  const std::string out = (dir_ / "oom.json").string();
  const Result oom = gpubench(run + "--memory-check warn --out " + out + " -q", small);
  EXPECT_EQ(oom.exit_code, 1) << oom.err;
  const auto j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j.at("status"), "oom") << j.dump(1).substr(0, 2000);
  EXPECT_NE(j.at("reason").get<std::string>().find("testaccel out of memory"), std::string::npos) << j.at("reason");
}

TEST_F(BackendTest, InfoListsWhatABackendLibraryRegistered) {
  const Result r = gpubench("info --backend-library " + kLibrary + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool listed = false;
  for (const auto& b : j.at("backends")) {
    if (b.at("name") == "testaccel") {
      listed = true;
      EXPECT_EQ(b.at("gpubench_backend"), "generic");
      EXPECT_EQ(b.at("available"), true);
      EXPECT_NE(b.at("tested").get<std::string>().find("in CI on the test accelerator"), std::string::npos);
    }
    if (b.at("name") == "mps" || b.at("name") == "xpu" || b.at("name") == "rocm") {
      EXPECT_NE(b.at("tested").get<std::string>().find("in CI on the test accelerator"), std::string::npos) << b;
    }
  }
  EXPECT_TRUE(listed) << r.out;
  const Result bad = gpubench("info --backend-library " + std::string(GPUBENCH_NOT_A_BACKEND));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace gpubench
