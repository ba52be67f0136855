#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpubench/core/record_io.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

RunRecord sample_record() {
  RunRecord r;
  r.status = RunStatus::kInterrupted;
  r.reason = "interrupted after 3 steps";
  r.scenario.batch_size = 256;
  r.scenario.precision = "amp";
  r.scenario.warmup_steps = 10;
  r.scenario.optimizer.name = "sgd";
  r.scenario.optimizer.lr = 0.1;
  r.scenario.origins["batch_size"] = Origin{"configs/x.yaml", 3, 13};
  r.precision = PrecisionRecord{"amp", "bf16", "bfloat16", false, false, false, "channels_last"};
  r.environment.device = "cuda:0";
  r.environment.device_name = "NVIDIA H200";
  r.environment.device_memory_bytes = 150'000'000'000;
  r.model = ModelRecord{"resnet50", 25557032, 24.5e9, "images"};
  EpochRecord e;
  e.steps = 390;
  e.samples = 390 * 256;
  e.seconds = 21.25;
  e.samples_per_s = e.samples / e.seconds;
  e.step_time = summarize_step_times({54.0, 55.0, 53.5});
  e.peak_allocated_bytes = 11'000'000'000;
  e.loss_first = 6.9;
  e.loss_last = 6.1;
  r.epochs.push_back(e);
  summarize_run(r, {54.0, 55.0, 53.5});
  r.notes = {"step times: CUDA events on the compute stream"};
  return r;
}

class RecordFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpubench_record_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

TEST_F(RecordFileTest, RecordRoundTripsThroughItsJsonFile) {
  const RunRecord r = sample_record();
  const std::string path = (dir_ / "sub" / "run.json").string();
  write_record(path, r);
  const RunRecord back = read_record(path);
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.status, RunStatus::kInterrupted);
  EXPECT_FALSE(back.epochs[0].peak_reserved_bytes.has_value());  // null stays "not measured", not 0
  EXPECT_EQ(back.scenario.origins.at("batch_size").source, "configs/x.yaml:3:13");
}

TEST_F(RecordFileTest, JsonCarriesSchemaAndUnitsInNames) {
  const nlohmann::json j = sample_record();
  EXPECT_EQ(j["schema"], "gpubench.run");
  EXPECT_EQ(j["schema_version"], kRecordSchemaVersion);
  EXPECT_TRUE(j["epochs"][0].contains("samples_per_s"));
  EXPECT_TRUE(j["epochs"][0]["step_time"].contains("median_ms"));
  EXPECT_TRUE(j["epochs"][0]["peak_reserved_bytes"].is_null());
}

TEST_F(RecordFileTest, AtomicWriteReplacesTheFileAndLeavesNoTemporaryBehind) {
  const std::string path = (dir_ / "r.json").string();
  write_file_atomic(path, "old");
  write_file_atomic(path, "new");
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "new");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(RecordFileTest, FailedWriteLeavesNoPartialFile) {
  fs::create_directories(dir_ / "taken");  // a directory where the record should go: rename must fail
  EXPECT_THROW(write_file_atomic((dir_ / "taken").string(), "{}"), std::runtime_error);
  EXPECT_EQ(entries(), 1u);  // only the directory; no temporary file left
  EXPECT_TRUE(fs::is_empty(dir_ / "taken"));
}

TEST_F(RecordFileTest, ReadingSomethingElseNamesTheFile) {
  const std::string path = (dir_ / "other.json").string();
  write_file_atomic(path, "{\"hello\": 1}");
  try {
    read_record(path);
    FAIL() << "accepted a non-record";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("other.json"), std::string::npos) << e.what();
  }
}

TEST_F(RecordFileTest, EpochStreamAppendsOneJsonObjectPerLine) {
  const std::string stream = epochs_stream_path((dir_ / "run.json").string());
  EXPECT_EQ(fs::path(stream).filename(), "run.epochs.jsonl");
  append_json_line(stream, nlohmann::json{{"index", 0}});
  append_json_line(stream, nlohmann::json{{"index", 1}});
  std::ifstream in(stream);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) EXPECT_EQ(nlohmann::json::parse(line)["index"], n++);
  EXPECT_EQ(n, 2);
}

TEST(RunSummaryTest, ThroughputIsTotalSamplesOverTotalTimeNotAMeanOfRates) {
  RunRecord r;
  r.model.train_flops_per_sample = 1e9;
  EpochRecord a, b;
  a.samples = 1000;
  a.seconds = 1.0;  // 1000/s
  b.samples = 1000;
  b.seconds = 4.0;  // 250/s; the mean of rates would say 625/s
  b.complete = false;
  r.epochs = {a, b};
  summarize_run(r, {1.0, 2.0});
  EXPECT_DOUBLE_EQ(r.summary.samples_per_s, 400.0);
  EXPECT_DOUBLE_EQ(r.summary.achieved_tflops, 0.4);
  EXPECT_DOUBLE_EQ(r.summary.epoch_seconds_mean, 1.0);  // complete epochs only
  EXPECT_EQ(r.summary.samples, 2000);
}

TEST(RunSummaryTest, DriftComparesTheLastCompleteEpochWithTheFirst) {
  RunRecord r;
  auto epoch = [](double rate, double clock, double temp, bool complete) {
    EpochRecord e;
    e.samples_per_s = rate;
    e.complete = complete;
    EpochTelemetry t;
    t.sm_clock_avg_mhz = clock;
    t.temperature_avg_c = temp;
    e.telemetry = t;
    return e;
  };
  r.epochs = {epoch(1000, 1980, 50, true), epoch(950, 1900, 70, true), epoch(10, 100, 90, false)};
  compute_drift(r);
  EXPECT_DOUBLE_EQ(*r.summary.throughput_drift_pct, -5.0);  // the partial third epoch is ignored
  EXPECT_NEAR(*r.summary.sm_clock_drift_pct, -80.0 / 1980.0 * 100, 1e-12);
  EXPECT_DOUBLE_EQ(*r.summary.temperature_drift_c, 20.0);
  r.epochs.resize(1);
  compute_drift(r);
  EXPECT_FALSE(r.summary.throughput_drift_pct.has_value());
}

TEST(RunStatusTest, NamesRoundTrip) {
  for (auto s : {RunStatus::kOk, RunStatus::kOom, RunStatus::kNan, RunStatus::kInterrupted, RunStatus::kFailed}) {
    EXPECT_EQ(run_status_from_string(to_string(s)), s);
  }
  EXPECT_THROW(run_status_from_string("fine"), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
