// The gpubench binary end to end: exit codes, messages, and the JSON it writes.

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

namespace fs = std::filesystem;

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
  EXPECT_EQ(j["environment"]["libtorch_version"].get<std::string>().substr(0, 4), "2.11");
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

TEST_F(CliTest, TraceReadsTheCommittedGzippedTracesAndRefusesBrokenOnes) {
  const std::string dir = std::string(GPUBENCH_FIXTURES) + "/records/profile-bert/";
  const Result r = gpubench("trace " + dir + "gpubench_bert_bs128_r1.trace.json.gz " + dir +
                            "pytorch_bert_bs128_r1.trace.json.gz --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attention"), std::string::npos);
  // A cut gzip stream is an error naming the file, never a partial profile.
  const std::string whole = slurp(dir + "gpubench_bert_bs128_r1.trace.json.gz");
  std::ofstream(dir_ / "cut.trace.json.gz", std::ios::binary) << whole.substr(0, whole.size() / 2);
  const Result cut = gpubench("trace " + (dir_ / "cut.trace.json.gz").string());
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_NE(cut.err.find("cut.trace.json.gz"), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("truncated"), std::string::npos) << cut.err;
}

TEST_F(CliTest, TraceSummarisesOneTraceAndComparesTwo) {
  // A trace written by hand in Kineto's format: two marked steps; B's GEMM takes 1 ms longer than A's.
  auto write_trace = [this](const std::string& name, double gemm_us) {
    nlohmann::json events = nlohmann::json::array();
    for (int step = 0; step < 2; ++step) {
      const double t0 = step * 10000.0;
      events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(step)},
                        {"ts", t0}, {"dur", 9000.0}, {"tid", 1}});
      events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "nvjet_sm90_tst_256x128"}, {"ts", t0 + 100},
                        {"dur", gemm_us}, {"tid", 7}});
      events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "vectorized_layer_norm_kernel<float>"},
                        {"ts", t0 + 200 + gemm_us}, {"dur", 500.0}, {"tid", 7}});
    }
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << nlohmann::json{{"traceEvents", events}}.dump();
    return path;
  };
  const std::string a = write_trace("a.json", 4000), b = write_trace("b.json", 5000);
  const Result one = gpubench("trace " + a);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("GEMM/conv"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("nvjet_sm90_tst_256x128"), std::string::npos) << one.out;
  const Result two = gpubench("trace " + a + " " + b + " --format json");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  // The kernels that differ most first: the GEMM by +1 ms per step, then the LayerNorm by nothing.
  const nlohmann::json kernels = nlohmann::json::parse(two.out).at("tables").at("trace_kernels");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["kernel"], "nvjet_sm90_tst_256x128");
  EXPECT_DOUBLE_EQ(kernels[0]["a_ms_per_step"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(kernels[0]["diff_ms_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(kernels[1]["diff_ms_per_step"].get<double>(), 0.0);
  std::ofstream(dir_ / "bad.json") << "{\"traceEvents\": 3}";
  const Result bad = gpubench("trace " + (dir_ / "bad.json").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.json"), std::string::npos) << bad.err;
  EXPECT_EQ(gpubench("trace " + (dir_ / "missing.json").string()).exit_code, 2);
  // Special files are refused before anything is read: a directory, a FIFO nobody writes to, a device.
  const Result folder = gpubench("trace " + dir_.string());
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("is a directory"), std::string::npos) << folder.err;
  const std::string fifo = (dir_ / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result pipe = gpubench("trace " + fifo);
  EXPECT_EQ(pipe.exit_code, 2);
  EXPECT_NE(pipe.err.find("not a regular file"), std::string::npos) << pipe.err;
  EXPECT_EQ(gpubench("trace /dev/zero").exit_code, 2);
}

TEST_F(CliTest, ScalingProjectionFromTheCommittedH200RecordsMatchesTheMeasuredTwoGpuEfficiency) {
  // Recorded inputs with a known answer: ResNet-50 bs 256 bf16 measured 97.7 % on 2xH200 (NVLink); the alpha-beta
  // model, from the 1-GPU record alone, must land within 3 points (it ignores synchronisation and stragglers, so it
  // is the optimistic side).
  const std::string dir =
      std::string(GPUBENCH_FIXTURES) + "/records/ddp-scaling/";
  const Result r = gpubench("scaling --project 1,2,8,64,1024 " + dir + "resnet50_gpus1.json " + dir +
                            "resnet50_gpus2.json --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpubench.scaling_projection");
  const auto& points = j["points"];
  ASSERT_EQ(points.size(), 5u);
  const double projected = points[1]["efficiency"], measured = points[1]["measured_efficiency"];
  EXPECT_NEAR(measured, 0.977, 0.002);
  EXPECT_NEAR(projected, measured, 0.03);
  EXPECT_GE(projected, measured);
  for (size_t i = 1; i < points.size(); ++i) {  // more GPUs never project a higher efficiency
    EXPECT_LE(points[i]["efficiency"].get<double>(), points[i - 1]["efficiency"].get<double>() + 1e-12);
  }
  EXPECT_EQ(points[4]["nodes"], 128);
  EXPECT_FALSE(j["assumptions"].empty());
  // Calibrated on the 2-GPU run, its 2-GPU projection is the measurement.
  const Result c = gpubench("scaling --project 2 --calibrate " + dir + "resnet50_gpus1.json " + dir +
                            "resnet50_gpus2.json --format json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const nlohmann::json cj = nlohmann::json::parse(c.out);
  EXPECT_NEAR(cj["points"][0]["efficiency"].get<double>(), 54.082 / 55.402, 0.001);
  // Usage errors: no 1-GPU record, an unknown preset.
  EXPECT_EQ(gpubench("scaling --project 8 " + dir + "resnet50_gpus2.json").exit_code, 2);
  EXPECT_EQ(gpubench("scaling --project 8 --interconnect carrier-pigeon " + dir + "resnet50_gpus1.json").exit_code, 2);
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

TEST_F(CliTest, ValidateChecksWithoutRunning) {
  EXPECT_EQ(gpubench("validate " + tiny()).exit_code, 0);
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << "{\"epochs\": 0}";
  const Result r = gpubench("validate " + bad.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json:1:12: key 'epochs'"), std::string::npos) << r.err;
}

TEST_F(CliTest, EveryShippedScenarioValidatesAgainstTheModelRegistry) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(GPUBENCH_SOURCE_DIR) / "configs")) {
    const auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
    const Result r = gpubench("validate " + entry.path().string());
    EXPECT_EQ(r.exit_code, 0) << entry.path() << ": " << r.err;
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST_F(CliTest, MissingGpuGivesAFailedRecordAndExitOne) {
  if (gpubench("list").out.find("cuda:0") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  const std::string out = (dir_ / "nogpu.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cuda --output " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no CUDA device is visible"), std::string::npos) << r.err;
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

TEST_F(CliTest, CompareExitsThreeOnARegressionAndWritesItsReports) {
  // A real record whose step times are replaced by a steady series (a loaded CPU is too noisy to call anything),
  // and a copy 20% slower.
  const std::string base = (dir_ / "base").string(), cand = (dir_ / "new").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --output " + base + "/a.json").exit_code, 0);
  RunRecord steady = read_record(base + "/a.json");
  for (auto& e : steady.epochs) {
    e.step_times_ms.clear();
    for (int i = 0; i < 100; ++i) e.step_times_ms.push_back(50.0 + 0.1 * (i % 7));
  }
  write_record(base + "/a.json", steady);
  for (auto& e : steady.epochs) {
    for (auto& t : e.step_times_ms) t *= 1.25;
  }
  write_record(cand + "/a.json", steady);
  const std::string md = (dir_ / "c.md").string(), junit = (dir_ / "c.xml").string();
  const Result r = gpubench("compare " + base + " " + cand + " --markdown " + md + " --junit " + junit);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("regression"), std::string::npos) << r.out;
  EXPECT_NE(slurp(md).find("| REGRESSION |"), std::string::npos) << slurp(md);
  EXPECT_NE(slurp(junit).find("failures=\"1\""), std::string::npos);
  EXPECT_EQ(gpubench("compare " + base + " " + base).exit_code, 0);
  EXPECT_EQ(gpubench("compare " + base + " " + (dir_ / "missing").string()).exit_code, 2);
  EXPECT_EQ(gpubench("compare " + base + " " + cand + " --threshold lots").exit_code, 2);
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

TEST_F(CliTest, TwoCpuRanksTrainDataParallelAndRankZeroWritesTheOneRecord) {
  const std::string out = (dir_ / "ddp" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --nproc-per-node 2 "
                            "--ddp-timeout 60s --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["status"], "ok");
  const auto& d = j["distributed"];
  EXPECT_EQ(d["world_size"], 2);
  EXPECT_EQ(d["backend"], "gloo");
  EXPECT_EQ(d["launcher"], "gpubench");
  ASSERT_EQ(d["rank_epoch_seconds"].size(), 2u);
  for (const auto& e : d["rank_epoch_seconds"]) EXPECT_EQ(e.size(), 2u);
  ASSERT_EQ(d["rank_comm_wait_seconds"].size(), 2u);
  // An epoch is dataset_size samples over both ranks: 32 / (4 per rank x 2 ranks) = 4 steps of 8 samples.
  for (const auto& e : j["epochs"]) {
    EXPECT_EQ(e["steps"], 4);
    EXPECT_EQ(e["samples"], 32);
    double slowest = 0;
    for (const auto& v : d["rank_epoch_seconds"][e["index"].get<int>()]) slowest = std::max(slowest, v.get<double>());
    EXPECT_DOUBLE_EQ(e["seconds"].get<double>(), slowest);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "ddp"), {}), 1);  // rank 1 wrote nothing
}

TEST_F(CliTest, ProfileInATwoRankJobIsRankZerosAndNobodyHangs) {
  // Every rank takes the profiled steps (they all-reduce); rank 0 profiles them and writes the one record and trace.
  const std::string out = (dir_ / "ddp_prof" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --nproc-per-node 2 "
                            "--ddp-timeout 60s --profile --profile-steps 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);
  ASSERT_TRUE(rec.profile.has_value());
  EXPECT_EQ(rec.profile->steps, 2);
  bool communication = false;  // Gloo's all-reduces are CPU operators in rank 0's profile
  for (const auto& c : rec.profile->categories) communication = communication || c.category == "communication";
  EXPECT_TRUE(communication);
  EXPECT_TRUE(fs::exists(dir_ / "ddp_prof" / "tiny.trace.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "ddp_prof"), {}), 2);  // record + trace: rank 1 wrote nothing
}

TEST_F(CliTest, MpirunStartsTwoRanksThatTrainTogetherAndWriteOneRecord) {
  // A real Open MPI job (scripts/bootstrap.sh installs openmpi-bin): mpirun starts both processes, gpubench reads
  // OMPI_COMM_WORLD_* and rendezvouses over TCP, Gloo carries the all-reduces over loopback.
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string out = (dir_ / "mpi" / "tiny.json").string();
  const std::string cmd = "timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 "
                          "-x MASTER_PORT=" + std::to_string(29600 + ::getpid() % 300) + " " + GPUBENCH_BINARY +
                          " run --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --ddp-timeout 60s "
                          "--output " + out + " > " + (dir_ / "mpi.out").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "mpi.out");
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kOk);
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->world_size, 2);
  EXPECT_EQ(r.distributed->launcher, "mpirun");
  EXPECT_EQ(r.distributed->backend, "gloo");
  ASSERT_EQ(r.distributed->rank_epoch_seconds.size(), 1u);
  EXPECT_EQ(r.distributed->rank_epoch_seconds[0].size(), 2u);  // both ranks' figures
  EXPECT_EQ(r.epochs[0].samples, 16);                          // 2 steps of 4 per rank x 2 ranks
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "mpi"), {}), 1);  // rank 1 wrote nothing
}

TEST_F(CliTest, UnderMpirunARankKilledEndsTheJobWithAFailedRecordThatNamesIt) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string out = (dir_ / "mpi" / "killed.json").string();
  const std::string cmd = "timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 "
                          "-x MASTER_PORT=" + std::to_string(29300 + ::getpid() % 300) +
                          " -x GPUBENCH_FAULT_INJECT=kill-rank:1:step:3 " + GPUBENCH_BINARY + " run --config " + tiny() +
                          " --device cpu --epochs 2 --dataset-size 32 --ddp-timeout 30s --output " + out + " > " +
                          (dir_ / "mpi.out").string() + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);  // mpirun reports the killed process
  EXPECT_NE(WEXITSTATUS(status), 124) << "the job hung until the test's timeout";
  EXPECT_LT(took, 30 + 60.0);          // within --ddp-timeout (plus start-up on a loaded machine)
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("rank 1"), std::string::npos) << r.reason;
}

/// A single-node SLURM cluster started for one test (scripts/slurm_local.sh) and stopped, by its pids, when the test
/// ends, passes or fails.
class LocalSlurm {
 public:
  explicit LocalSlurm(const fs::path& dir) : dir_(dir) {
    const std::string script = std::string(GPUBENCH_SOURCE_DIR) + "/scripts/slurm_local.sh";
    const std::string cmd = "SLURM_LOCAL_PORT=" + std::to_string(17000 + ::getpid() % 2000 * 2) + " " + script +
                            " start " + dir.string() + " > " + (dir.parent_path() / "slurm_start.log").string() + " 2>&1";
    started_ = std::system(cmd.c_str()) == 0;
  }
  ~LocalSlurm() {
    const std::string cmd = std::string(GPUBENCH_SOURCE_DIR) + "/scripts/slurm_local.sh stop " + dir_.string();
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not stop the test's SLURM daemons\n");
  }
  bool started() const { return started_; }
  std::string env() const { return "SLURM_CONF=" + (dir_ / "slurm.conf").string() + " OMP_NUM_THREADS=1 "; }

 private:
  fs::path dir_;
  bool started_ = false;
};

TEST_F(CliTest, SlurmSrunAndTheShippedSbatchScriptRunATwoRankJob) {
  if (std::system("command -v slurmctld > /dev/null 2>&1 && command -v srun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "slurm-wlm is not installed";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "a throwaway slurmd must run as root";
  LocalSlurm slurm(dir_ / "slurm");
  ASSERT_TRUE(slurm.started()) << slurp(dir_ / "slurm_start.log") << slurp(dir_ / "slurm" / "slurmctld.log")
                               << slurp(dir_ / "slurm" / "slurmd.log");
  const std::string flags = " --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --ddp-timeout 60s";
  const std::string run = " run" + flags;
  // srun -N1 -n2: two tasks of one step, ranks from SLURM_PROCID/SLURM_NTASKS.
  const std::string out = (dir_ / "srun" / "tiny.json").string();
  const std::string srun = slurm.env() + "MASTER_PORT=" + std::to_string(29000 + ::getpid() % 500) +
                           " timeout 300 srun -N1 -n2 " + GPUBENCH_BINARY + run + " --output " + out + " > " +
                           (dir_ / "srun.out").string() + " 2>&1";
  ASSERT_EQ(std::system(srun.c_str()), 0) << slurp(dir_ / "srun.out");
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kOk);
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->world_size, 2);
  EXPECT_EQ(r.distributed->launcher, "slurm");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "srun"), {}), 1);
  // The sbatch script users copy, as a batch job (sbatch --wait returns the job's exit code).
  const std::string batch_out = (dir_ / "sbatch" / "tiny.json").string();
  fs::create_directories(dir_ / "sbatch");
  const std::string sbatch = slurm.env() + "GPUBENCH=" + GPUBENCH_BINARY + " MASTER_PORT=" +
                             std::to_string(29500 + ::getpid() % 400) + " timeout 300 sbatch --wait -N1 -n2 --output " +
                             (dir_ / "sbatch.out").string() + " " + GPUBENCH_SOURCE_DIR + "/scripts/gpubench.sbatch" +
                             flags + " --output " + batch_out + " > " + (dir_ / "sbatch.submit").string() + " 2>&1";
  ASSERT_EQ(std::system(sbatch.c_str()), 0) << slurp(dir_ / "sbatch.submit") << slurp(dir_ / "sbatch.out");
  const RunRecord b = read_record(batch_out);
  EXPECT_EQ(b.status, RunStatus::kOk);
  ASSERT_TRUE(b.distributed.has_value());
  EXPECT_EQ(b.distributed->world_size, 2);
  EXPECT_EQ(b.distributed->launcher, "slurm");
  // A rank killed under srun: the job ends within --ddp-timeout and rank 0's failed record names the rank.
  const std::string killed = (dir_ / "srun" / "killed.json").string();
  const std::string kill = slurm.env() + "GPUBENCH_FAULT_INJECT=kill-rank:1:step:3 MASTER_PORT=" +
                           std::to_string(28500 + ::getpid() % 400) + " timeout 300 srun -N1 -n2 " + GPUBENCH_BINARY +
                           " run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --ddp-timeout 30s"
                           " --output " + killed + " > " + (dir_ / "kill.out").string() + " 2>&1";
  const int status = std::system(kill.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(WEXITSTATUS(status), 124) << "the job hung until the test's timeout";
  const RunRecord k = read_record(killed);
  EXPECT_EQ(k.status, RunStatus::kFailed);
  EXPECT_NE(k.reason.find("rank 1"), std::string::npos) << k.reason;
}

TEST_F(CliTest, AMultiGpuJobsEnergyIsEveryRanksGpuSummedWithPerRankFigures) {
  // Two Gloo ranks, each reading "its GPU" through the scripted NVML stand-in: rank 0's board draws 200 W, rank 1's
  // 300 W (no energy counter, so energy is integrated power). The job draws 500 W, and J/sample counts both.
  std::ofstream(dir_ / "rank0.txt") << "200000 0 1900 2619 50 90 50 0\n";
  std::ofstream(dir_ / "rank1.txt") << "300000 0 1700 2619 60 90 50 0\n";
  const std::string out = (dir_ / "energy.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --nproc-per-node 2 "
                            "--ddp-timeout 60s --telemetry-interval 20ms --output " + out,
                            "GPUBENCH_TELEMETRY_READER=nvml GPUBENCH_NVML_LIBRARY=" + std::string(GPUBENCH_FAKE_NVML) +
                                " FAKE_NVML_SCRIPT_RANK0=" + (dir_ / "rank0.txt").string() +
                                " FAKE_NVML_SCRIPT_RANK1=" + (dir_ / "rank1.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);
  ASSERT_EQ(rec.epochs.size(), 2u);
  double job_joules = 0;
  for (const auto& e : rec.epochs) {
    ASSERT_EQ(e.rank_telemetry.size(), 2u);
    const EpochTelemetry& r0 = e.rank_telemetry[0];
    const EpochTelemetry& r1 = e.rank_telemetry[1];
    EXPECT_NEAR(*r0.power_avg_w, 200.0, 1e-9);  // time-weighted means: rounding
    EXPECT_NEAR(*r1.power_avg_w, 300.0, 1e-9);
    ASSERT_TRUE(e.telemetry.has_value());
    EXPECT_EQ(e.telemetry->devices, 2);
    EXPECT_NEAR(*e.telemetry->power_avg_w, 500.0, 1e-9);
    EXPECT_NEAR(*e.telemetry->energy_j, *r0.energy_j + *r1.energy_j, 1e-9 * *e.telemetry->energy_j);
    EXPECT_NEAR(*e.telemetry->joules_per_sample, *e.telemetry->energy_j / 32.0, 1e-12 * *e.telemetry->energy_j);  // all 32 samples, both ranks
    EXPECT_NEAR(*e.telemetry->sm_clock_avg_mhz, 1800.0, 1e-9);
    EXPECT_DOUBLE_EQ(*e.telemetry->temperature_peak_c, 60.0);
    job_joules += *e.telemetry->energy_j;
  }
  EXPECT_EQ(rec.summary.power_devices, 2);
  EXPECT_NEAR(*rec.summary.energy_j, job_joules, 1e-9 * job_joules);
  EXPECT_NEAR(*rec.summary.joules_per_sample, job_joules / 64.0, 1e-12);
  EXPECT_NE(r.err.find("2 GPUs, 500 W total"), std::string::npos) << r.err;
}

/// Processes whose command line contains `marker` (to check that no rank outlives the launcher).
int processes_with(const std::string& marker) {
  int n = 0;
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::ifstream in(p.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(marker) != std::string::npos && cmd.find("gpubench") != std::string::npos) ++n;
  }
  return n;
}

TEST_F(CliTest, AKilledRankEndsEveryRankWithAFailedRecordNamingIt) {
  const std::string out = (dir_ / "killed.json").string();
  const std::string marker = "killed-rank-" + std::to_string(::getpid());
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 3 --dataset-size 64 --nproc-per-node 2 "
                            "--ddp-timeout 20s --name " + marker + " --output " + out,
                            "GPUBENCH_FAULT_INJECT=kill-rank:1:step:3");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(seconds, 120.0);  // the 20 s collective timeout plus start-up, not a hang
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kFailed);
  std::string all = rec.reason;
  for (const auto& n : rec.notes) all += " | " + n;
  EXPECT_NE(all.find("rank 1"), std::string::npos) << all;
  EXPECT_NE(r.err.find("rank 1 was killed by signal 9"), std::string::npos) << r.err;
  EXPECT_EQ(processes_with(marker), 0);
}

TEST_F(CliTest, ScalingRunsEachRankCountAndReportsEfficiency) {
  const fs::path out = dir_ / "scaling";
  const Result r = gpubench("scaling resnet50 --gpus 1,2 --out-dir " + out.string() + " --config " + tiny() +
                            " --device cpu --dataset-size 32 --ddp-timeout 60s");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "scaling.json"));
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["ranks"], 1);
  EXPECT_DOUBLE_EQ(j["points"][0]["scaling_efficiency"].get<double>(), 1.0);
  EXPECT_EQ(j["points"][1]["ranks"], 2);
  EXPECT_GT(j["points"][1]["scaling_efficiency"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(out / "resnet50_gpus2.json"));
  EXPECT_NE(r.out.find("scaling efficiency"), std::string::npos) << r.out;
}

TEST_F(CliTest, SweepRunsEveryPointAndGoesOnPastAnOom) {
  const fs::path out = dir_ / "sweep";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size 2,8 --precision fp32,bf16 --epochs 1 "
                            "--dataset-size 16 --out-dir " + out.string(),
                            "GPUBENCH_FAULT_INJECT=oom-above-batch:4");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;  // an OOM point is data, not a failed sweep
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 4u);
  EXPECT_EQ(j["points"][0]["point"], "batch_size=2,precision=fp32");
  for (const auto& p : j["points"]) {
    const bool big = p["point"].get<std::string>().find("batch_size=8") != std::string::npos;
    EXPECT_EQ(p["status"], big ? "oom" : "ok") << p.dump();
    EXPECT_TRUE(fs::exists(p["record"].get<std::string>()));
  }
  EXPECT_NE(r.out.find("oom: out of device memory at batch size 8"), std::string::npos) << r.out;
}

TEST_F(CliTest, SweepChecksEveryPointBeforeRunningAny) {
  const fs::path out = dir_ / "bad_sweep";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size 2,lots --out-dir " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("batch_size=lots"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("command line --batch-size"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CliTest, BatchSizeMaxFindsTheLargestBatchThatTrains) {
  const fs::path out = dir_ / "max";
  const Result r = gpubench("sweep resnet50 --config " + tiny() + " --batch-size max --epochs 1 --dataset-size 16 "
                            "--out-dir " + out.string(),
                            "GPUBENCH_FAULT_INJECT=oom-above-batch:6");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["batch_size"], 6);
  EXPECT_EQ(j["points"][0]["status"], "ok");
  const RunRecord rec = read_record(j["points"][0]["record"].get<std::string>());
  EXPECT_NE(rec.notes.back().find("chosen by `--batch-size max`"), std::string::npos) << rec.notes.back();
}

TEST_F(CliTest, ComparePublishedShowsThePercentAndTheRecipeDifferences) {
  const std::string run = (dir_ / "tiny.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --output " + run).exit_code, 0);
  const std::string md = (dir_ / "published.md").string();
  const Result r = gpubench("compare published/seed000-rtx4090 " + run + " --markdown " + md);
  ASSERT_EQ(r.exit_code, 5) << r.err;  // a tiny CPU run is not the publication's work
  for (const char* expected : {"**Not the same work**", "Different recipe:", "of the published figure",
                               "batch size: 4 here, 128 published", "data pipeline: one synthetic batch",
                               "does not follow from its own epoch time",
                               "gpubench run --config configs/published/recipes/seed000-resnet50-bs128-fp32.yaml",
                               "gpubench dataset make --out data/imagenet-like-100k --images 100000"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("%**"), std::string::npos) << r.out;  // a different recipe's percentage is never bold
  EXPECT_NE(r.err.find("not the same work as published/seed000-rtx4090"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(md), r.out);
  EXPECT_EQ(gpubench("compare published/seed000-rtx4090 " + run + " --allow-missing").exit_code, 0);
  const Result unknown = gpubench("compare published/seed999 " + run);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("seed000-rtx4090"), std::string::npos) << unknown.err;  // lists the known ids
}

TEST_F(CliTest, ACopiedBinaryDrawsTheChartsAndFindsTelemetryBesideACommittedRecord) {
  // The binary alone, away from the build and source trees (its chart script is compiled in); the committed record's
  // trace_path is the H200 machine's absolute path, the CSV lies beside it.
  fs::create_directories(dir_ / "prefix" / "bin");
  fs::copy_file(GPUBENCH_BINARY, dir_ / "prefix" / "bin" / "gpubench");
  const std::string record =
      std::string(GPUBENCH_FIXTURES) + "/records/telemetry/telemetry_on_r1.json";
  const std::string copied = (dir_ / "prefix" / "bin" / "gpubench").string();
  const auto run_copy = [&](const std::string& args, const std::string& env) {
    const std::string cmd = env + " " + copied + " " + args + " > " + (dir_ / "out").string() + " 2> " +
                            (dir_ / "err").string();
    const int status = std::system(cmd.c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "out"), slurp(dir_ / "err")};
  };
  const Result r = run_copy("report " + record + " --out " + (dir_ / "rep").string() + " --format json", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["charts"].dump().find("telemetry.png"), std::string::npos) << r.out << r.err;
  // A script named by GPUBENCH_PLOT_SCRIPT that is not there: the report says which.
  const Result none = run_copy("report " + record + " --out " + (dir_ / "rep2").string(),
                               "GPUBENCH_PLOT_SCRIPT=" + (dir_ / "nowhere.py").string());
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE((none.out + none.err).find("nowhere.py"), std::string::npos) << none.out << none.err;
}

TEST_F(CliTest, ReportWritesMarkdownAndSelfContainedHtmlWithCharts) {
  const fs::path runs = dir_ / "runs";
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 2 --output " + (runs / "a.json").string()).exit_code, 0);
  const fs::path out = dir_ / "report";
  const Result r = gpubench("report " + runs.string() + " --out " + out.string() + " --title 'Tiny report'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("# Tiny report"), std::string::npos);
  EXPECT_NE(md.find("| resnet50 bs4 fp32 train eager | a.json | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Headline"), std::string::npos) << md;
  EXPECT_NE(md.find("](throughput.png)"), std::string::npos) << md << r.err;
  EXPECT_TRUE(fs::exists(out / "charts.json"));
  EXPECT_TRUE(fs::exists(out / "throughput.png"));
  const std::string html = slurp(out / "report.html");
  EXPECT_NE(html.find("data:image/png;base64,iVBOR"), std::string::npos);  // the PNG itself, embedded
  EXPECT_EQ(gpubench("report " + (dir_ / "nothing").string()).exit_code, 2);
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

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

const std::string kCommitted = std::string(GPUBENCH_FIXTURES) +
                               "/records/amp-energy/gpubench_amp_bs256_r1.json";

bool has_pandas() { return std::system("/usr/bin/python3 -c 'import pandas' > /dev/null 2>&1") == 0; }

TEST_F(CliTest, ExportOfACommittedRecordLoadsInPandas) {
  if (!has_pandas()) GTEST_SKIP() << "python3-pandas is not installed (scripts/bootstrap.sh installs it)";
  const std::string csv = (dir_ / "e.csv").string(), jsonl = (dir_ / "e.jsonl").string();
  ASSERT_EQ(gpubench("export " + kCommitted + " --out " + csv).exit_code, 0);
  ASSERT_EQ(gpubench("export " + kCommitted + " --per run --format jsonl --out " + jsonl).exit_code, 0);
  // No gpubench code on the reading side: pandas alone, and the numbers are the record's.
  const std::string script = dir_.string() + "/check.py";
  std::ofstream(script) << "import json, sys, pandas as pd\n"
                           "r = json.load(open(sys.argv[1]))\n"
                           "e = pd.read_csv(sys.argv[2])\n"
                           "assert len(e) == len(r['epochs']), (len(e), len(r['epochs']))\n"
                           "assert abs(e['samples_per_s'][0] - r['epochs'][0]['samples_per_s']) < 1e-6\n"
                           "assert e['model'][0] == 'resnet50' and e['batch_size'][0] == 256\n"
                           "assert abs(e['joules_per_sample'][0] - r['epochs'][0]['telemetry']['joules_per_sample']) < 1e-9\n"
                           "j = pd.read_json(sys.argv[3], lines=True)\n"
                           "assert len(j) == 1 and abs(j['samples_per_s'][0] - r['summary']['samples_per_s']) < 1e-6\n"
                           "assert abs(j['step_time_p95_ms'][0] - r['summary']['step_time']['p95_ms']) < 1e-9\n"
                           "print('ok', e.shape, j.shape)\n";
  const std::string cmd = "/usr/bin/python3 " + script + " " + kCommitted + " " + csv + " " + jsonl + " > " +
                          (dir_ / "py.out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "py.out");
}

TEST_F(CliTest, CompareTakesAMetricByTagAndRefusesAnUnknownOne) {
  const Result energy = gpubench("compare " + kCommitted + " " + kCommitted + " --metric joules_per_sample --format md");
  EXPECT_EQ(energy.exit_code, 0) << energy.err;
  EXPECT_NE(energy.out.find("energy per sample (joules_per_sample, J/sample), lower is better"), std::string::npos)
      << energy.out;
  EXPECT_NE(energy.out.find("no significant change"), std::string::npos) << energy.out;
  const Result unknown = gpubench("compare " + kCommitted + " " + kCommitted + " --metric warp_speed");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--metric warp_speed"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("step_time_p95_ms"), std::string::npos) << unknown.err;  // lists what there is
  const Result listed = gpubench("metrics");
  EXPECT_EQ(listed.exit_code, 0);
  EXPECT_NE(listed.out.find("joules_per_sample"), std::string::npos);
}

TEST_F(CliTest, AnotherModelsKeyIsRefusedNamingTheKeyAndTheModel) {
  const Result r = gpubench("run resnet50 --layers 2 --epochs 1 --device cpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'layers'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a key of resnet50"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

bool has_jsonschema() {
  return std::system("/usr/bin/python3 -c 'import jsonschema, yaml; jsonschema.Draft202012Validator' > /dev/null 2>&1") == 0;
}

TEST_F(CliTest, CommittedAndFreshRecordsAndShippedScenariosMatchTheJsonSchemas) {
  if (!has_jsonschema()) GTEST_SKIP() << "python3-jsonschema is not installed (scripts/bootstrap.sh installs it)";
  const std::string src = GPUBENCH_SOURCE_DIR;
  const std::string fresh = (dir_ / "fresh.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 2 --output " + fresh).exit_code, 0);
  const std::string sweep = (dir_ / "sweep").string();
  const std::string db = (dir_ / "sweep.db").string();
  const bool has_store = gpubench("db add " + db + " " + fresh).err.find("built without SQLite") == std::string::npos;
  ASSERT_EQ(gpubench("sweep resnet50 --config " + tiny() + " --epochs 1 --batch-size 2,4 --out-dir " + sweep +
                     (has_store ? " --db " + db : std::string()))
                .exit_code,
            0);
  if (has_store) {
    const Result h = gpubench("history " + db + " --format csv");  // the fresh run, then both sweep points
    EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 4) << h.out;
  }
  const std::string validate = "/usr/bin/python3 -W ignore " + src + "/scripts/validate_records.py ";
  const std::string out = (dir_ / "v.out").string();
  // Every record under tests/fixtures/ (schema 1, 2 and 3), the shipped scenarios, and what the commands write now.
  const std::string all = validate + GPUBENCH_FIXTURES + " " + src + "/configs " + fresh + " " + sweep + " > " + out + " 2>&1";
  EXPECT_EQ(std::system(all.c_str()), 0) << slurp(out);
  EXPECT_NE(slurp(out).find(" ok"), std::string::npos) << slurp(out);
  // And the schema is no formality: an impossible record fails, naming the file and the path in it.
  nlohmann::json broken = nlohmann::json::parse(slurp(fresh));
  broken["epochs"][0]["seconds"] = -1;
  broken["summary"]["metrics"][0]["better"] = "sideways";
  std::ofstream(dir_ / "broken.json") << broken.dump();
  const std::string bad = validate + (dir_ / "broken.json").string() + " > " + out + " 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(slurp(out).find("broken.json: epochs/0/seconds"), std::string::npos) << slurp(out);
  EXPECT_NE(slurp(out).find("summary/metrics/0/better"), std::string::npos) << slurp(out);
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

TEST_F(CliTest, RunAddsToAResultsStoreAndHistoryListsIt) {
  const std::string db = (dir_ / "results.db").string(), rec = (dir_ / "a.json").string();
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --output " + rec + " --db " + db);
  if (r.err.find("built without SQLite") != std::string::npos) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Result again = gpubench("db add " + db + " " + rec);  // already there: stored once
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("added 0 record(s), 1 already stored; 1 in all"), std::string::npos) << again.out;
  const Result h = gpubench("history " + db + " --model resnet50 --scenario batch_size=4 --format csv");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out.rfind("id,start_time_utc,model,", 0), 0u) << h.out;
  EXPECT_NE(h.out.find(",resnet50,"), std::string::npos) << h.out;
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 2) << h.out;  // header + the one run
  EXPECT_EQ(gpubench("history " + db + " --scenario batch_size=4096 --format csv").out.find(",resnet50,"),
            std::string::npos);
  EXPECT_EQ(gpubench("history " + db + " --scenario nonsense").exit_code, 2);
  // A store that cannot be opened stops the run before it trains.
  const Result bad = gpubench("run --config " + tiny() + " --epochs 1 --output " + rec + " --db /proc/gpubench-no/r.db");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

std::string fmt_day(int day) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-11-%02dT02:00:00Z", day + 1);
  return buf;
}

/// A night of the CI history: the committed record with its throughput scaled, its own start time and driver.
RunRecord night(const RunRecord& base, int day, double speed, const std::string& driver, double wobble) {
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

TEST_F(CliTest, TheStoreGivesBaselinesAndFindsTheNightADriverMadeTrainingSlower) {
  const RunRecord base = read_record(kCommitted);
  const fs::path nights = dir_ / "nights";
  fs::create_directories(nights);
  // 12 nights on driver A, then 12 nights 5 % slower on driver B; 1 % night-to-night noise (a fixed pattern).
  const double wobble[] = {0.004, -0.009, 0.007, -0.002, 0.010, -0.006, 0.001, -0.008, 0.005, -0.003, 0.008, -0.005};
  for (int d = 0; d < 24; ++d) {
    write_record((nights / ("n" + std::to_string(100 + d) + ".json")).string(),
                 night(base, d, d < 12 ? 1.0 : 0.95, d < 12 ? "580.159.04" : "590.10.01", wobble[d % 12]));
  }
  const std::string db = (dir_ / "ci.db").string();
  const Result added = gpubench("db add " + db + " " + nights.string());
  if (added.err.find("built without SQLite") != std::string::npos) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const Result h = gpubench("history " + db + " --model resnet50 --detect");
  EXPECT_EQ(h.exit_code, 3) << h.out << h.err;  // a change for the worse
  EXPECT_NE(h.out.find("WORSE"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("driver 580.159.04 -> 590.10.01"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("2026-11-13"), std::string::npos) << h.out;  // the first night after the change
  // The same history without the slow nights: quiet, exit 0.
  const Result quiet = gpubench("history " + db + " --model resnet50 --since 2026-11-14 --detect");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_NE(quiet.out.find("none found"), std::string::npos) << quiet.out;

  // A new night 5 % slower than the last 5 like-for-like nights: a regression against the store's baseline.
  const std::string fast = (dir_ / "fast.json").string(), slow = (dir_ / "slow.json").string();
  write_record(fast, night(base, 30, 0.95, "590.10.01", 0.002));
  write_record(slow, night(base, 30, 0.90, "590.10.01", 0.002));
  const Result same = gpubench("compare db:" + db + ":last-5 " + fast);
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.err.find("baseline: 5 run(s)"), std::string::npos) << same.err;
  EXPECT_EQ(gpubench("compare db:" + db + " " + slow).exit_code, 3);
  EXPECT_EQ(gpubench("compare db:" + db + ":last-x " + slow).exit_code, 2);

  // The report draws the history as a trend chart, from the store alone.
  const fs::path rep = dir_ / "report";
  const Result r = gpubench("report --db " + db + " --out " + rep.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(rep / "trend.png")) << r.out << r.err;
  EXPECT_NE(slurp(rep / "report.md").find("(trend.png)"), std::string::npos);
  EXPECT_NE(slurp(rep / "report.md").find("24 run record(s)"), std::string::npos);
  EXPECT_NE(slurp(rep / "trend.csv").find(",590.10.01,"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
