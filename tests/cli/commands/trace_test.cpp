// `gpubench trace`: Chrome traces summarised and compared, gzip'd and broken ones.

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

}  // namespace
}  // namespace gpubench
