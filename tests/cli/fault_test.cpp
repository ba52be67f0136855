// Hostile input and faults, end to end: every bad file, flag, record and output location ends in a clear message and
// exit code 2 (never an abort or a signal), and a run that is killed, stopped, interrupted or starved of disk leaves
// only whole JSON behind and says where its data went.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

/// Every line of a JSON Lines file parses (no cut line), and there is at least a header.
void expect_whole_lines(const fs::path& stream) {
  std::ifstream in(stream);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    EXPECT_NO_THROW((void)nlohmann::json::parse(line)) << stream << " line " << n + 1 << ": " << line;
    ++n;
  }
  EXPECT_GE(n, 1) << stream;
}

/// Files in `dir` whose names start with "." (the atomic writer's temporaries) or end in ".json".
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

bool no_temporaries(const fs::path& dir) {
  for (const auto& n : names_in(dir)) {
    if (n.find(".tmp-") != std::string::npos) return false;
  }
  return true;
}

TEST_F(CliTest, HostileScenarioFilesAreRefusedWithTheFileNamedAndExitTwo) {
  const std::string long_value(30000, '1');
  struct Bad {
    std::string name, text, expect;
  };
  const std::vector<Bad> files{
      {"huge_number.json", "{\"optimizer\":{\"lr\":1e400}}", "key 'optimizer.lr'"},
      {"long_duration.yaml", "time_budget_s: " + long_value + "s\n", "key 'time_budget_s'"},
      {"long_device.yaml", "device: cuda:" + long_value + "\n", "key 'device'"},
      {"big_index.yaml", "device: cuda:99999999999999999999\n", "key 'device'"},
      {"two_docs.yaml", "model: resnet50\n---\nepochs: 2\n", "more than one YAML document"},
      {"stray_comma.yaml", "model: resnet50\n,\n", "YAML"},
      {"tagged.yaml", "batch_size: !!str 5\n", "type tags"},
      {"custom_tag.yaml", "model: !python/object resnet50\n", "type tags"},
      {"deep.yaml", "a: " + std::string(50000, '[') + std::string(50000, ']') + "\n", "nested"},
      {"deep_block.yaml", std::string(5000, '-') + " x\n", "nested"},
      {"empty.yaml", "", "file is empty"},
      {"comments.yaml", "# nothing\n", "no scenario keys"},
      {"garbage.json", std::string("\x00\x01\xff{", 4), "JSON syntax error"},
      {"latin1.yaml", "name: caf\xe9\nepochs: 0\n", "key 'epochs'"},
      {"epochs_overflow.yaml", "epochs: 99999999999999999999999\n", "key 'epochs'"},
      {"dataset_too_big.yaml", "dataset_size: 1e30\n", "key 'dataset_size'"},
      {"year_long.yaml", "duration_s: 1e12h\n", "key 'duration_s'"},
      {"too_big.yaml", "name: " + std::string(2 << 20, 'x') + "\n", "at most 1 MiB"},
  };
  for (const auto& f : files) {
    std::ofstream(dir_ / f.name, std::ios::binary) << f.text;
    for (const std::string& cmd : std::vector<std::string>{"validate ", "run --output " + (dir_ / "x.json").string() + " --config "}) {
      const Result r = gpubench(cmd + (dir_ / f.name).string());
      EXPECT_EQ(r.exit_code, 2) << f.name << " (" << cmd << "): " << r.err;
      EXPECT_NE(r.err.find(f.name), std::string::npos) << f.name << ": " << r.err.substr(0, 600);
      EXPECT_NE(r.err.find(f.expect), std::string::npos) << f.name << ": " << r.err.substr(0, 600);
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
  // Not regular files: a FIFO would block a reader forever, /dev/zero never ends, a directory is no file.
  ASSERT_EQ(::mkfifo((dir_ / "fifo.yaml").c_str(), 0600), 0);
  for (const std::string& special : std::vector<std::string>{(dir_ / "fifo.yaml").string(), "/dev/zero", dir_.string()}) {
    const Result r = gpubench("validate " + special);
    EXPECT_EQ(r.exit_code, 2) << special << ": " << r.err;
    EXPECT_NE(r.err.find(special), std::string::npos) << r.err;
  }
  // File-name case does not decide the format wrongly: RUN.JSON is JSON (and strict JSON: a YAML-only form fails).
  std::ofstream(dir_ / "RUN.JSON") << "{\"model\": \"resnet50\", \"epochs\": 2}";
  EXPECT_EQ(gpubench("validate " + (dir_ / "RUN.JSON").string()).exit_code, 0);
  std::ofstream(dir_ / "YAMLISH.JSON") << "model: resnet50\n";
  const Result yamlish = gpubench("validate " + (dir_ / "YAMLISH.JSON").string());
  EXPECT_EQ(yamlish.exit_code, 2);
  EXPECT_NE(yamlish.err.find("JSON syntax error"), std::string::npos) << yamlish.err;
}

TEST_F(CliTest, HostileFlagsExitTwoBeforeAnyTraining) {
  for (const std::string& flags : std::vector<std::string>{"--device cuda:99999999999999999999", "--batch-size 99999999999999999999", "--lr 1e400",
        "--time-budget " + std::string(30000, '9') + "s", "--cooldown 1e400s --repeats 2", "--repeats 0",
        "--telemetry-interval 1ms", "--ddp-timeout 0s"}) {
    const Result r = gpubench("run --config " + tiny() + " " + flags + " --output " + (dir_ / "x.json").string());
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err.substr(0, 400);
    EXPECT_EQ(r.err.find("warm-up"), std::string::npos) << flags << ": trained before refusing";
  }
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

TEST_F(CliTest, OutputLocationsAreCheckedBeforeTraining) {
  fs::create_directories(dir_ / "a_folder");
  std::ofstream(dir_ / "a_file") << "x";
  for (const std::string& out : std::vector<std::string>{(dir_ / "a_folder").string(), (dir_ / "a_file" / "r.json").string(),
                                std::string("/proc/gpubench-cannot-exist/r.json"), (dir_ / "ends_in_slash/").string()}) {
    const Result r = gpubench("run --config " + tiny() + " --output " + out);
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.err;
    EXPECT_NE(r.err.find("key 'output'"), std::string::npos) << out << ": " << r.err;
    EXPECT_EQ(r.err.find("warm-up"), std::string::npos) << out << ": trained before refusing";
  }
  const Result trace = gpubench("run --config " + tiny() + " --output " + (dir_ / "ok.json").string() +
                                " --telemetry-trace " + (dir_ / "a_folder").string());
  EXPECT_EQ(trace.exit_code, 2) << trace.err;
  EXPECT_NE(trace.err.find("key 'telemetry_trace'"), std::string::npos) << trace.err;
}

TEST_F(CliTest, ReportAndCompareOutputsInUnwritablePlacesExitTwo) {
  const std::string rec = (dir_ / "a.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --output " + rec).exit_code, 0);
  const Result report = gpubench("report " + rec + " --out /proc/gpubench-no/report");
  EXPECT_EQ(report.exit_code, 2) << report.err;
  EXPECT_NE(report.err.find("--out"), std::string::npos) << report.err;
  const Result cmp = gpubench("compare " + rec + " " + rec + " --json /proc/gpubench-no/c.json");
  EXPECT_EQ(cmp.exit_code, 2) << cmp.err;
  for (const std::string t : {"inf", "nan", "-1%", "100%", "1e400"}) {
    EXPECT_EQ(gpubench("compare " + rec + " " + rec + " --threshold " + t).exit_code, 2) << t;
  }
}

TEST_F(CliTest, RecordsWithImpossibleValuesOrMissingFieldsAreRefusedNotTrusted) {
  const std::string rec = (dir_ / "good.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --output " + rec).exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(slurp(rec));
  auto variant = [&](const std::string& name, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json v = j;
    change(v);
    std::ofstream(dir_ / name) << v.dump();
    return (dir_ / name).string();
  };
  for (const auto& [name, change] : std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>>{
           {"negative.json", [](nlohmann::json& v) { v["epochs"][0]["seconds"] = -1.0; }},
           {"zero_step.json", [](nlohmann::json& v) { v["epochs"][0]["step_times_ms"][0] = 0.0; }},
           {"no_batch.json", [](nlohmann::json& v) { v["scenario"].erase("batch_size"); }},
           {"wrong_type.json", [](nlohmann::json& v) { v["epochs"][0]["steps"] = "many"; }},
           {"huge_number.json", [](nlohmann::json& v) { v["summary"]["samples_per_s"] = -1e308; }}}) {
    const std::string bad = variant(name, change);
    const Result r = gpubench("compare " + rec + " " + bad);
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << name << ": " << r.err;
    EXPECT_EQ(gpubench("report " + bad + " --out " + (dir_ / "rep").string()).exit_code, 2) << name;
  }
  // In a folder the bad one is skipped with its reason, and the good one still compares.
  fs::create_directories(dir_ / "mixed");
  fs::copy_file(rec, dir_ / "mixed" / "good.json");
  fs::copy_file(dir_ / "negative.json", dir_ / "mixed" / "negative.json");
  const Result mixed = gpubench("compare " + rec + " " + (dir_ / "mixed").string());
  EXPECT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("impossible values"), std::string::npos) << mixed.err;
}

TEST_F(CliTest, NonUtf8NamesAndPathsStillGiveAValidRecordThatSaysSo) {
  const std::string out = (dir_ / "caf\xe9.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --name 'bad\xff\xfe' --output '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);  // valid JSON, valid UTF-8
  EXPECT_EQ(rec.scenario.name, "bad\xef\xbf\xbd\xef\xbf\xbd");  // each bad byte became U+FFFD
  EXPECT_EQ(rec.notes.back(), kInvalidUtf8Note);
}

TEST_F(CliTest, RepeatsKeepTheirRecordsInTheOutputFolder) {
  const fs::path folder = dir_ / "x.json_results";
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --repeats 2 --output " + (folder / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(folder / "run_r1.json"));
  EXPECT_TRUE(fs::exists(folder / "run_r2.json"));
  EXPECT_EQ(names_in(dir_).size(), 3u) << "stdout, stderr and the folder only";
}

TEST_F(CliTest, AFullDiskIsAClearErrorAndTheStreamHasNoCutLine) {
  // A 4 KiB file-size limit: the epochs stream's header fits or is cut back; the record does not fit anywhere.
  const std::string out = (dir_ / "full" / "r.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 3 --dataset-size 8 --output " + out,
                            "ulimit -f 4;");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;  // errno, with the file named
  EXPECT_NE(r.err.find("r.json"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("record: not written"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  expect_whole_lines(dir_ / "full" / "r.epochs.jsonl");
  EXPECT_TRUE(no_temporaries(dir_ / "full"));
}

struct KillCase {
  std::string fault, expect_in_stream;
  size_t epochs_in_stream;
};

TEST_F(CliTest, KillNineAtWarmUpMidEpochAndAnEpochBoundaryLeavesOnlyWholeJson) {
  // tiny_resnet: 1 warm-up step, then 4 steps per epoch. Step 1 is the warm-up, step 3 is inside epoch 1.
  for (const KillCase& k : std::vector<KillCase>{{"kill-rank:0:step:1", "header", 0},
                                                 {"kill-rank:0:step:3", "header", 0},
                                                 {"kill-rank:0:after-epoch:1", "index", 1}}) {
    const fs::path sub = dir_ / ("k" + k.fault.substr(k.fault.rfind(':') - 5));
    fs::create_directories(sub);
    const Result r = gpubench("run --config " + tiny() + " --epochs 3 --output " + (sub / "r.json").string(),
                              "GPUBENCH_FAULT_INJECT=" + k.fault);
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << k.fault << ": " << r.err;
    EXPECT_FALSE(fs::exists(sub / "r.json")) << k.fault;
    EXPECT_TRUE(no_temporaries(sub)) << k.fault;
    expect_whole_lines(sub / "r.epochs.jsonl");
    EXPECT_NE(slurp(sub / "r.epochs.jsonl").find(k.expect_in_stream), std::string::npos) << k.fault;
    const auto recovered = recover_from_stream((sub / "r.epochs.jsonl").string());
    ASSERT_TRUE(recovered.has_value()) << k.fault;
    EXPECT_EQ(recovered->epochs.size(), k.epochs_in_stream) << k.fault;
    EXPECT_EQ(recovered->model.name, "resnet50") << k.fault;  // the header: model, environment, scenario
    EXPECT_FALSE(recovered->environment.libtorch_version.empty()) << k.fault;
  }
}

TEST_F(CliTest, SigtermEndsTheRunAsInterruptedWithARecord) {
  const std::string out = (dir_ / "term.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 3 --output " + out,
                            "GPUBENCH_FAULT_INJECT=term-rank:0:step:3");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kInterrupted);
  EXPECT_FALSE(fs::exists(dir_ / "term.epochs.jsonl"));  // folded into the record
}

TEST_F(CliTest, ALauncherRecordAfterRankZeroDiesKeepsItsFinishedEpochs) {
  const std::string out = (dir_ / "dead0.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 3 --dataset-size 16 "
                            "--nproc-per-node 2 --ddp-timeout 20s --output " + out,
                            "GPUBENCH_FAULT_INJECT=kill-rank:0:after-epoch:1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kFailed);
  EXPECT_NE(rec.reason.find("rank 0"), std::string::npos) << rec.reason;
  ASSERT_EQ(rec.epochs.size(), 1u) << "the finished epoch, from rank 0's stream";
  EXPECT_EQ(rec.epochs[0].samples, 16);
  EXPECT_EQ(rec.model.name, "resnet50");
  EXPECT_EQ(rec.environment.device, "cpu");
  EXPECT_FALSE(rec.environment.libtorch_version.empty());
  EXPECT_EQ(rec.summary.samples, 16);
  EXPECT_FALSE(fs::exists(dir_ / "dead0.epochs.jsonl"));
}

TEST_F(CliTest, AStoppedRankEndsTheJobWithinTheTimeoutAndAFewSeconds) {
  const std::string out = (dir_ / "stopped.json").string();
  const std::string marker = "stopped-rank-" + std::to_string(::getpid());
  const double timeout_s = 10;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string err = (dir_ / "stderr").string();
    if (freopen(err.c_str(), "w", stderr) == nullptr || freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    ::setenv("GPUBENCH_FAULT_INJECT", "stop-rank:1:step:3", 1);
    execl(GPUBENCH_BINARY, GPUBENCH_BINARY, "run", "--config", tiny().c_str(), "--device", "cpu", "--epochs", "3",
          "--dataset-size", "64", "--nproc-per-node", "2", "--ddp-timeout", "10s", "--name", marker.c_str(), "--output",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Rank 1 stops at its third step, inside epoch 1: time from the moment rank 0 starts that epoch.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (slurp(dir_ / "stderr").find("epoch 1/3") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto hang = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - hang).count();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_LT(after, timeout_s + 6.0) << "the launcher must end within --ddp-timeout and a few seconds";
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kFailed);
  EXPECT_NE(rec.reason.find("rank 1"), std::string::npos) << rec.reason;
  int left = 0;  // no rank outlives the launcher, stopped or not
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::ifstream in(p.path() / "cmdline");
    const std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(marker) != std::string::npos) ++left;
  }
  EXPECT_EQ(left, 0);
}

}  // namespace
}  // namespace gpubench
