// `gpubench run`: the record, exit codes, refusals before anything runs, Ctrl-C, repeats, help.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

TEST_F(CliTest, RunWritesACompleteRecordAndExitsZero) {
  const std::string out = (dir_ / "runs" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["schema"], "gpubench.run");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["scenario"]["batch_size"], 4);
  EXPECT_EQ(j["scenario"]["output"], out);
  EXPECT_EQ(j["scenario_sources"]["epochs"], "command line --epochs");
  EXPECT_NE(j["scenario_sources"]["batch_size"].get<std::string>().find("tiny_resnet.yaml:"), std::string::npos);
  EXPECT_EQ(j["model"]["parameters"], 23'528'522);
  EXPECT_EQ(j["environment"]["libtorch_version"], binary_build().at("libtorch_version"));  // the one it was built with
  EXPECT_FALSE(j["environment"]["command_line"].get<std::string>().empty());
  ASSERT_EQ(j["epochs"].size(), 2u);
  for (const auto& e : j["epochs"]) EXPECT_EQ(e["samples"], e["steps"].get<int>() * 4);
  const double rate = j["summary"]["samples_per_s"];
  EXPECT_NEAR(rate, j["summary"]["samples"].get<double>() / j["summary"]["seconds"].get<double>(), 1e-9 * rate);
  // Nothing half-written left beside the record: no temporary file, and the epoch stream is folded in.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "runs"), {}), 1);
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  EXPECT_EQ(read_record(out).epochs.size(), 2u);
}

TEST_F(CliTest, Fp8IsRefusedBeforeAnythingRunsWhereItCannotRunAndItsKeysOnlyWithIt) {
  const std::string never = (dir_ / "never.json").string();
  // A device without FP8 tensor cores: exit 2 naming the key, the device and what FP8 needs, nothing written.
  for (const std::string cmd : {"run llama --precision fp8 --device cpu", "run llama --precision fp8 --device cpu --dry-run"}) {
    const Result r = gpubench(cmd + " --output " + never);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    if (!binary_has_cuda_module()) {  // refused before the device is asked (builds_test.cpp)
      EXPECT_NE(r.err.find("key 'precision': precision: fp8 (--precision fp8): this build has no CUDA support"),
                std::string::npos) << r.err;
      continue;
    }
    EXPECT_NE(r.err.find("key 'precision': precision: fp8 on cpu: FP8 training needs FP8 tensor cores"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("compute capability 8.9 or later"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the CPU has none"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(never));
  // The FP8 keys apply to precision: fp8 only; amax history to delayed scaling; delayed scaling not in a CUDA graph
  // (its history's position is kept on the host); FP8 is training.
  const std::vector<std::pair<std::string, std::string>> cases{
      {"run llama --device cpu --fp8-scaling rowwise", "key 'fp8_scaling': fp8_scaling applies to precision: fp8"},
      {"run llama --device cpu --precision bf16 --fp8-lm-head true", "key 'fp8_lm_head'"},
      {"run llama --device cpu --precision fp8 --fp8-amax-history 8", "fp8_amax_history applies to fp8_scaling: delayed"},
      {"run llama --device cpu --precision fp8 --fp8-scaling delayed --cuda-graph", "key 'fp8_scaling'"},
      {"run llama --device cpu --precision fp8 --mode inference", "precision: fp8 is FP8 training"},
      {"run llama --device cpu --precision fp8 --fp8-grad-format e3m4", "key 'fp8_grad_format'"},
  };
  for (const auto& [args, expected] : cases) {
    const Result r = gpubench(args + " --output " + never);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << "\n" << r.err;
  }
  // validate checks the file, not this host: FP8 on this CPU is a note there, with every FP8 key resolved.
  std::ofstream(dir_ / "fp8.yaml") << "model: llama\nprecision: fp8\nfp8_scaling: delayed\nfp8_amax_history: 4\n";
  const Result v = gpubench("validate --resolved " + (dir_ / "fp8.yaml").string() + " --device cpu");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("precision: fp8 cannot run on cpu"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("fp8_amax_history"), std::string::npos) << v.out;
}

TEST_F(CliTest, ProfileWritesTheTraceBesideTheRecordAndPrintsTheVerdict) {
  const std::string out = (dir_ / "runs" / "prof.json").string();
  const Result r = gpubench("run --config " + tiny() + " --profile --profile-steps 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);
  ASSERT_TRUE(rec.profile.has_value());
  EXPECT_EQ(rec.profile->trace_path, (dir_ / "runs" / "prof.trace.json").string());
  EXPECT_TRUE(fs::exists(rec.profile->trace_path));
  EXPECT_FALSE(rec.summary.bounded_by.empty());  // a CPU profile always gives a verdict
  EXPECT_NE(r.out.find("Kernel time by category"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bounded by: " + rec.summary.bounded_by), std::string::npos) << r.out;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "runs"), {}), 2);  // record + trace, nothing partial
}

TEST_F(CliTest, BadScenarioFileExitsTwoNamingFileLineAndKey) {
  const fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << "model: resnet50\nbatch_size: many\n";
  const Result r = gpubench("run --config " + bad.string() + " --output " + (dir_ / "x.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.yaml:2:13: key 'batch_size'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

TEST_F(CliTest, BadFlagValueExitsTwo) {
  const Result r = gpubench("run resnet50 --precision fp8 --output " + (dir_ / "x.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("command line --precision"), std::string::npos) << r.err;
  const Result unknown = gpubench("run resnet5");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'resnet50'"), std::string::npos) << unknown.err;
}

TEST_F(CliTest, MissingGpuGivesAFailedRecordAndExitOne) {
  if (gpubench("list").out.find("cuda:0") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  const std::string out = (dir_ / "nogpu.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cuda --output " + out);
  EXPECT_EQ(r.exit_code, 1);
  // No GPU here, or (a build without the CUDA module against a CUDA wheel) no CUDA in the LibTorch it links.
  EXPECT_TRUE(r.err.find("no CUDA device is visible") != std::string::npos ||
              r.err.find("a LibTorch without CUDA") != std::string::npos)
      << r.err;
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kFailed);
  EXPECT_TRUE(rec.epochs.empty());
}

TEST_F(CliTest, CtrlCEndsTheRunCleanlyWithAnInterruptedRecord) {
  const std::string out = (dir_ / "int.json").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string err = (dir_ / "stderr").string();
    if (freopen(err.c_str(), "w", stderr) == nullptr || freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execl(GPUBENCH_BINARY, GPUBENCH_BINARY, "run", "--config", tiny().c_str(), "--dataset-size", "100000",
          "--epochs", "1", "--time-budget", "10m", "--output", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the timed epoch has started (the log says so), then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (slurp(dir_ / "stderr").find("epoch 1/1") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kInterrupted);
  ASSERT_EQ(rec.epochs.size(), 1u);
  EXPECT_FALSE(rec.epochs[0].complete);
  EXPECT_GT(rec.epochs[0].steps, 0);
}

TEST_F(CliTest, RepeatsWriteOneRecordEachAndReportTheSpread) {
  const std::string out = (dir_ / "rep" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --repeats 2 --cooldown 0.2s --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 1; i <= 2; ++i) {
    const RunRecord rec = read_record((dir_ / "rep" / ("tiny_r" + std::to_string(i) + ".json")).string());
    EXPECT_EQ(rec.repeat_index, i);
    EXPECT_EQ(rec.repeat_count, 2);
    EXPECT_EQ(rec.status, RunStatus::kOk);
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_NE(r.out.find("coefficient of variation"), std::string::npos) << r.out;
}

TEST_F(CliTest, BareCudaGraphFlagMeansTrueAndTheRecordSaysWhichModeRan) {
  const std::string out = (dir_ / "graph.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --cuda-graph --optimizer-impl foreach --output " +
                            out);
  if (!binary_has_cuda_module()) {  // no CUDA graphs in this build: refused, nothing written (builds_test.cpp)
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("graph: true (--cuda-graph): this build has no CUDA support"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["scenario"]["graph"], true);
  EXPECT_EQ(j["execution"]["graph_requested"], true);
  EXPECT_EQ(j["execution"]["optimizer_implementation"], "foreach");
  if (gpubench("list").out.find("cuda:0") == std::string::npos) {
    EXPECT_EQ(j["execution"]["mode"], "eager");
    EXPECT_NE(r.err.find("CUDA graph requested but not used"), std::string::npos) << r.err;
  }
  const Result bad = gpubench("run --config " + tiny() + " --optimizer-impl sideways");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("command line --optimizer-impl"), std::string::npos) << bad.err;
  const Result off = gpubench("run --config " + tiny() + " --cuda-graph maybe");
  EXPECT_EQ(off.exit_code, 2);
}

TEST_F(CliTest, HelpListsScenarioFlagsAndExitCodes) {
  const Result r = gpubench("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--batch-size", "--precision", "--amp", "--device", "--dataset-size", "--time-budget",
                           "--cuda-graph", "--optimizer-impl"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(gpubench("--help").out.find("Exit codes"), std::string::npos);
  EXPECT_EQ(gpubench("--version").exit_code, 0);
}

TEST_F(CliTest, AnotherModelsKeyIsRefusedNamingTheKeyAndTheModel) {
  const Result r = gpubench("run resnet50 --layers 2 --epochs 1 --device cpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'layers'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a key of resnet50"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpubench
