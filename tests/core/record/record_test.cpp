#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sys/resource.h>

#include <csignal>

#include "common/temp_dir.h"

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/record/record_io.hpp"

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
  r.precision = PrecisionRecord{"amp", "fp16", "float16", false, false, true, "channels_last", "--amp: fp16"};
  r.environment.device = "cuda:0";
  r.environment.device_name = "NVIDIA H200";
  r.environment.device_memory_bytes = 150'000'000'000;
  r.model = ModelRecord{"resnet50", 25557032, 24.5e9, 0, "images"};
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
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }
  testing::TempDir tmp_{"record"};
  fs::path dir_ = tmp_.path();
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

/// Every field of every part of a record set to something other than its default, so that a field the JSON writer or
/// reader forgets comes back as the default and the round trip compares unequal.
RunRecord every_field_set() {
  RunRecord r;
  r.status = RunStatus::kNan;
  r.reason = "loss became non-finite";
  Scenario& s = r.scenario;
  s.name = "n";
  s.model = "bert-base";
  s.batch_size = 7;
  s.precision = "fp16";
  s.memory_format = "channels_last";
  s.device = "cuda:1";
  s.epochs = 3;
  s.dataset_size = 99;
  s.warmup_steps = 4;
  s.optimizer = OptimizerSettings{"adamw", 0.5, 0.8, 0.01, true, 0.7, 0.6, 1e-7, "foreach"};
  s.seed = 11;
  s.time_budget_s = 12.5;
  s.duration_s = 13.5;
  s.model_options = {{"seq_len", 33},  {"num_labels", 5},   {"attention", "math"},          {"layers", 2},
                     {"hidden", 64},   {"heads", 4},        {"dropout", 0.25},              {"gradient_checkpointing", true}};
  s.grad_accumulation = 2;
  s.cudnn_benchmark = false;
  s.graph = true;
  s.ddp_bucket_mb = 8;
  s.ddp_timeout_s = 30;
  s.output = "o.json";
  s.telemetry = false;
  s.telemetry_interval_s = 0.25;
  s.telemetry_trace = "t.csv";
  r.precision = PrecisionRecord{"amp", "fp16", "float16", true, true, true, "channels_last", "why"};
  r.execution = ExecutionRecord{"cuda_graph", true, "fallback", "foreach"};
  EnvironmentRecord& e = r.environment;
  e = EnvironmentRecord{"h", "os", "cpu", 16, "cuda:1", "cuda", "NVIDIA H200", 1 << 30, "9.0", 132, "0:19:00.0",
                        "580.159.04", "13.0", "13.0", "13.0", "9.19.0", "2.11.0", "2.11.0, CUDA 13.0 build", "generic", "/opt/libtestaccel.so", "1.0", "0.3", "abc", "Release", "gcc", "cmd", "2026-11-30T00:00:00Z",
                        "2.27.7", 1 << 20, "performance", "docker", {{"NCCL_DEBUG", "INFO"}}};
  r.model = ModelRecord{"bert-base", 3, 4.5, 1.5, "sequences", 128,
                        {"image_size", "num_classes", "seq_len", "num_labels", "latent_size", "attention", "layers",
                         "hidden", "heads", "dropout", "gradient_checkpointing"}};
  EpochTelemetry t;
  t.samples = 9;
  t.devices = 2;
  t.power_avg_w = 1.5;
  t.power_peak_w = 2.5;
  t.power_peak_source = "instantaneous";
  t.energy_counter_j = 3.5;
  t.energy_integrated_j = 4.5;
  t.energy_disagreement_pct = 5.5;
  t.energy_j = 6.5;
  t.energy_source = "counter";
  t.joules_per_sample = 7.5;
  t.sm_clock_avg_mhz = 8.5;
  t.sm_clock_min_mhz = 9.5;
  t.mem_clock_avg_mhz = 10.5;
  t.temperature_avg_c = 11.5;
  t.temperature_peak_c = 12.5;
  t.gpu_util_avg_pct = 13.5;
  t.mem_util_avg_pct = 14.5;
  t.clock_event_fraction = {{"sw_power_cap", 0.5}};
  t.missing_readings = {{"power_w", 2}};
  EpochRecord ep;
  ep.index = 1;
  ep.steps = 2;
  ep.samples = 3;
  ep.seconds = 4.5;
  ep.samples_per_s = 5.5;
  ep.step_time = summarize_step_times({1.0, 2.0, 4.0});
  ep.step_times_ms = {1.0, 2.0, 4.0};
  ep.peak_allocated_bytes = 6;
  ep.peak_reserved_bytes = 7;
  ep.peak_host_rss_bytes = 8;
  ep.loss_first = 9.5;
  ep.loss_last = 10.5;
  ep.skipped_steps = 11;
  ep.complete = false;
  ep.telemetry = t;
  ep.rank_telemetry = {t, t};
  ep.metrics = {Metric{"extra_epoch_ms", "extra", "ms", Better::kLower, 1.25}};
  r.epochs = {ep};
  RunSummary& m = r.summary;
  m = RunSummary{1, 2, 3, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, "table", 0.5, summarize_step_times({3.0}), 12, 13, 14,
                 15, 16.5, "time_budget", "compute", "GEMM 80 %",
                 {BottleneckFactor{"compute", 0.8, "GEMM", "profile"}}, 17.5, 18.5, 19.5, 2, 20.5, 21.5, 22.5,
                 {Metric{"extra_run", "extra run", "count", Better::kHigher, 3}}};
  r.notes = {"a note"};
  TelemetryInfo& ti = r.telemetry;
  ti = TelemetryInfo{"nvml", true, "reason", 0.1, "580.1", 700.0, true, true, false, 5, 16, 18, "GPU-1", "serial",
                     "vbios", "default", 1980, 3201, 1700, 3000, 1980, 3201, true, "evidence",
                     std::vector<GpuProcess>{{42, "python", 1 << 20}}, "avg", "instant", "counter", "trace.csv"};
  r.distributed = DistributedRecord{2, "nccl", "torchrun", 25, 3, {{1.0, 2.0}}, {{0.5, 0.25}}, 1, "NVLink"};
  r.profile = ProfileRecord{5,
                            "after",
                            "CUDA kernels",
                            "runs/x.trace.json",
                            40.5,
                            38.25,
                            2.25,
                            0.94,
                            39.75,
                            0.96,
                            900,
                            12,
                            3.5,
                            {ProfileCategory{"gemm_conv", 30.0, 0.75, 400}},
                            {ProfileKernel{"nvjet_tst", "gemm_conv", 24, 20.0, 833.3, 0.5}},
                            412.5,
                            380.0,
                            610.0,
                            0.52,
                            "measured"};
  r.repeat_index = 2;
  r.repeat_count = 3;
  return r;
}

TEST_F(RecordFileTest, EveryFieldSurvivesTheRoundTripAndEqualityComparesValues) {
  const RunRecord r = every_field_set();
  const std::string path = (dir_ / "full.json").string();
  write_record(path, r);
  const RunRecord back = read_record(path);
  EXPECT_TRUE(back == r) << "a field was lost between writing and reading:\n"
                         << nlohmann::json(back).dump(1) << "\nvs\n" << nlohmann::json(r).dump(1);
  // Equality looks at values: one changed value anywhere makes two records differ, however deep it sits.
  RunRecord changed = back;
  changed.epochs[0].rank_telemetry[1].power_peak_source = "averaged";
  EXPECT_FALSE(changed == r);
  changed = back;
  changed.telemetry.other_processes->front().pid = 43;
  EXPECT_FALSE(changed == r);
  changed = back;
  changed.environment.variables["NCCL_DEBUG"] = "WARN";
  EXPECT_FALSE(changed == r);
  changed = back;
  changed.scenario.optimizer.eps = 1e-8;
  EXPECT_FALSE(changed == r);
  // Provenance is not identity: where a value came from does not make two records differ.
  changed = back;
  changed.scenario.origins["batch_size"] = Origin{"elsewhere", 1, 1};
  EXPECT_TRUE(changed == r);
}

TEST_F(RecordFileTest, AnFp8RecordKeepsItsRecipeAndLayersAndOtherRecordsHaveNoFp8Keys) {
  RunRecord r = sample_record();
  r.scenario.precision = "fp8";
  r.scenario.fp8_grad_format = "e4m3";
  r.scenario.fp8_scaling = "delayed";
  r.scenario.fp8_amax_history = 8;
  r.scenario.fp8_lm_head = true;
  r.precision = PrecisionRecord{"fp8", "fp8", "bfloat16", false, false, false, "contiguous", ""};
  Fp8Record f;
  f.grad_format = "e4m3";
  f.scaling = "delayed";
  f.amax_history = 8;
  f.converted = {"model.layers.0.self_attn.q_proj", "lm_head"};
  f.kept = {"model.layers.0.mlp.down_proj (eligible, but its product ran inside a fused operation in bf16, or did not run)"};
  f.bf16_peak_tflops = 989.4;
  f.fp8_peak_tflops = 1979;
  f.mfu_bf16_peak = 0.6;
  f.mfu_fp8_peak = 0.3;
  f.fp8_peak_source = "device table";
  r.precision.fp8 = f;
  const std::string path = (dir_ / "fp8.json").string();
  write_record(path, r);
  const RunRecord back = read_record(path);
  EXPECT_TRUE(back == r) << nlohmann::json(back).dump(1);
  ASSERT_TRUE(back.precision.fp8.has_value());
  EXPECT_EQ(back.precision.fp8->converted.size(), 2u);
  EXPECT_EQ(back.scenario.fp8_amax_history, 8);
  EXPECT_TRUE(back.scenario.fp8_lm_head);
  EXPECT_TRUE(back.scenario.model_options.empty()) << "the FP8 keys are the scenario's, not a model's";
  // Its MFU against the bf16 peak is a metric beside the summary's (against the FP8 peak), as a bf16 run's MFU is.
  ASSERT_NE(find_metric(run_metrics(back), "mfu_bf16_peak"), nullptr);
  EXPECT_DOUBLE_EQ(find_metric(run_metrics(back), "mfu_bf16_peak")->value, 0.6);
  RunRecord bf16 = sample_record();
  bf16.precision.resolved = "bf16";
  bf16.summary.mfu = 0.45;
  ASSERT_NE(find_metric(run_metrics(bf16), "mfu_bf16_peak"), nullptr);
  EXPECT_DOUBLE_EQ(find_metric(run_metrics(bf16), "mfu_bf16_peak")->value, 0.45);
  RunRecord fp32 = sample_record();
  fp32.precision.resolved = "fp32";
  fp32.summary.mfu = 0.2;
  EXPECT_EQ(find_metric(run_metrics(fp32), "mfu_bf16_peak"), nullptr) << "an fp32 run's peak is not bf16's";
  // A record of another precision carries no FP8 keys (its scenario identity is as before FP8 existed) ...
  const nlohmann::json plain = sample_record();
  EXPECT_FALSE(plain["precision"].contains("fp8"));
  for (const auto& [key, value] : plain["scenario"].items()) EXPECT_NE(key.rfind("fp8_", 0), 0u) << key;
  // ... and reads back without one.
  EXPECT_FALSE(plain.get<RunRecord>().precision.fp8.has_value());
}

TEST_F(RecordFileTest, TheRecordsScenarioHoldsOnlyTheKeysTheModelTakes) {
  RunRecord r = sample_record();
  r.model.scenario_keys = {"image_size", "num_classes"};
  // A caller that bypassed the loader set other models' keys too: the record leaves them out.
  r.scenario.model_options = {{"image_size", 224}, {"num_classes", 1000}, {"layers", 2}, {"seq_len", 128}};
  const nlohmann::json j = r;
  EXPECT_EQ(j["scenario"]["image_size"], 224);
  EXPECT_TRUE(j["scenario"].contains("batch_size"));  // common keys stay
  for (const char* other : {"layers", "seq_len", "latent_size", "attention", "gradient_checkpointing"}) {
    EXPECT_FALSE(j["scenario"].contains(other)) << other;
  }
  const std::string path = (dir_ / "keys.json").string();
  write_record(path, r);
  RunRecord expected = r;
  expected.scenario.model_options.erase("layers");
  expected.scenario.model_options.erase("seq_len");
  EXPECT_TRUE(read_record(path) == expected);
}

TEST_F(RecordFileTest, SchemaOneRecordsWithEveryModelsKeysStillCompareWithNewOnes) {
  // Before models declared their keys, a record's scenario held every model's key with its default and no
  // model.scenario_keys. Read now, it keeps only the keys its model took, so it pairs with a new record.
  RunRecord fresh = sample_record();
  fresh.model.scenario_keys = {"image_size", "num_classes"};
  fresh.scenario.model_options = {{"image_size", 224}, {"num_classes", 1000}};
  nlohmann::json old = fresh;
  old["schema_version"] = 1;
  old["model"].erase("scenario_keys");
  old["epochs"][0].erase("metrics");
  old["summary"].erase("metrics");
  const nlohmann::json every_other{{"seq_len", 128},   {"num_labels", 2},  {"latent_size", 64},
                                   {"attention", "sdpa"}, {"layers", nullptr}, {"width", nullptr},
                                   {"heads", nullptr},  {"dropout", nullptr}, {"gradient_checkpointing", false}};
  for (const auto& [k, v] : every_other.items()) old["scenario"][k] = v;
  const RunRecord back = old.get<RunRecord>();
  EXPECT_EQ(back.schema_version, kRecordSchemaVersion);  // upgraded as it is read
  EXPECT_EQ(back.scenario.model_options, fresh.scenario.model_options);
  EXPECT_EQ(comparable_scenario(back.scenario), comparable_scenario(fresh.scenario));
  // Before the driver versions had their names, only `driver_version` (the CUDA driver API) and the telemetry's
  // NVIDIA driver existed: both are found under their names now.
  old["environment"].erase("nvidia_driver_version");
  old["environment"].erase("cuda_driver_api_version");
  old["environment"]["driver_version"] = "13.0";
  old["telemetry"]["driver_version"] = "580.159.04";
  const RunRecord named = old.get<RunRecord>();
  EXPECT_EQ(named.environment.cuda_driver_api_version, "13.0");
  EXPECT_EQ(named.environment.nvidia_driver_version, "580.159.04");
  // Its metrics are derived from its fields as for any record.
  const Metrics m = run_metrics(back);
  ASSERT_NE(find_metric(m, kThroughputTag), nullptr);
  EXPECT_DOUBLE_EQ(find_metric(m, kThroughputTag)->value, fresh.summary.samples_per_s);
}

TEST_F(RecordFileTest, ASchemaOneBertRecordsWidthReadsAsHiddenAndStaysSoWhenWrittenAndReadAgain) {
  // Found by the record fuzzer: a schema-1 bert-base record (no model.scenario_keys) kept `width`, read it as
  // `hidden`, and then dropped `hidden` as another model's key when its own rewrite was read.
  RunRecord r = sample_record();
  r.scenario.model = "bert-base";
  r.model.scenario_keys.clear();
  nlohmann::json old = r;
  old["model"].erase("scenario_keys");
  old["scenario"]["width"] = 768;
  const RunRecord first = old.get<RunRecord>();
  ASSERT_EQ(first.scenario.model_options.count("hidden"), 1u);
  EXPECT_EQ(first.scenario.model_options.count("width"), 0u);
  const RunRecord again = nlohmann::json(first).get<RunRecord>();
  EXPECT_TRUE(again == first);
}

TEST_F(RecordFileTest, ImpossibleValuesAndNonRecordsAreRefusedNamingTheFile) {
  const RunRecord good = sample_record();
  EXPECT_TRUE(record_problems(good).empty());
  auto refused = [&](const std::string& name, const std::function<void(RunRecord&)>& change, const std::string& what) {
    RunRecord r = good;
    change(r);
    const std::string path = (dir_ / name).string();
    write_record(path, r);
    try {
      (void)read_record(path);
      ADD_FAILURE() << name << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused("neg.json", [](RunRecord& r) { r.epochs[0].seconds = -2; }, "epochs[0].seconds");
  refused("zero.json", [](RunRecord& r) { r.epochs[0].step_times_ms = {1.0, 0.0}; }, "step_times_ms[1]");
  refused("batch.json", [](RunRecord& r) { r.scenario.batch_size = 0; }, "scenario.batch_size");
  refused("nobatch.json", [](RunRecord& r) {
    r.status = RunStatus::kOk;
    r.scenario.batch_size.reset();
  }, "batch_size is missing");
  refused("rate.json", [](RunRecord& r) { r.summary.samples_per_s = -1; }, "summary.samples_per_s");
  refused("repeat.json", [](RunRecord& r) { r.repeat_index = 3; }, "repeat_index");
  // Not a record at all, or not a regular file: refused before any parsing, never read forever.
  std::ofstream(dir_ / "text.json") << "[1, 2";
  EXPECT_THROW((void)read_record((dir_ / "text.json").string()), std::runtime_error);
  EXPECT_THROW((void)read_record("/dev/zero"), std::runtime_error);
  EXPECT_THROW((void)read_record(dir_.string()), std::runtime_error);
  EXPECT_THROW((void)read_text_file((dir_ / "text.json").string(), 3, "record"), std::runtime_error);
}

TEST_F(RecordFileTest, AFailedAppendIsCutBackSoTheStreamNeverEndsInAPartialLine) {
  const std::string path = (dir_ / "s.jsonl").string();
  append_json_line(path, nlohmann::json{{"a", 1}});
  const auto size_before = fs::file_size(path);
  // A file-size limit just above the current size: the next line is written only in part, then EFBIG.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit tight = old;
  tight.rlim_cur = size_before + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tight), 0);
  std::string error;
  try {
    append_json_line(path, nlohmann::json{{"long", std::string(1000, 'x')}});
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, SIG_DFL);
  EXPECT_NE(error.find("s.jsonl"), std::string::npos) << error;
  EXPECT_NE(error.find("File too large"), std::string::npos) << error;
  EXPECT_EQ(fs::file_size(path), size_before) << "the partial line was cut back";
  // /dev/full: no space at all, and the message says so.
  try {
    append_json_line("/dev/full", nlohmann::json{{"a", 1}});
    ADD_FAILURE() << "wrote to /dev/full";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

TEST_F(RecordFileTest, InvalidUtf8IsReplacedAndTheRecordSaysSo) {
  RunRecord r = sample_record();
  r.scenario.name = "caf\xe9";
  r.environment.command_line = "gpubench run --name \xff";
  const std::string path = (dir_ / "u.json").string();
  write_record(path, r);
  const RunRecord back = read_record(path);
  EXPECT_EQ(back.scenario.name, "caf\xef\xbf\xbd");
  EXPECT_EQ(back.notes.back(), kInvalidUtf8Note);
  bool replaced = false;
  (void)json_text(nlohmann::json("ok"), -1, &replaced);
  EXPECT_FALSE(replaced);
}

TEST_F(RecordFileTest, AStreamRebuildsTheRecordOfAKilledRunSkippingACutLine) {
  RunRecord header = sample_record();
  header.epochs.clear();
  const std::string path = (dir_ / "k.epochs.jsonl").string();
  append_json_line(path, nlohmann::json{{"header", header}});
  append_json_line(path, nlohmann::json(sample_record().epochs[0]));
  std::ofstream(path, std::ios::app) << "{\"index\": 1, \"steps\":";  // a writer from before the cut-back fix
  const auto r = recover_from_stream(path);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->model.name, "resnet50");
  ASSERT_EQ(r->epochs.size(), 1u);
  EXPECT_EQ(r->summary.samples, 390 * 256);
  EXPECT_FALSE(recover_from_stream((dir_ / "missing.jsonl").string()).has_value());
}

TEST(RunStatusTest, NamesRoundTrip) {
  for (auto s : {RunStatus::kOk, RunStatus::kOom, RunStatus::kNan, RunStatus::kInterrupted, RunStatus::kFailed}) {
    EXPECT_EQ(run_status_from_string(to_string(s)), s);
  }
  EXPECT_THROW(run_status_from_string("fine"), std::invalid_argument);
}

TEST(NodesTest, RanksMergeIntoOneEntryPerMachineInOrderOfTheirLowestRank) {
  auto rank = [](int64_t r, const std::string& host, const std::string& addr) {
    NodeRecord n;
    n.hostname = host;
    n.address = addr;
    n.ranks = {r};
    n.cpu_cores = 8;
    return n;
  };
  // Indexed by rank; node b's ranks come first in launch order but rank 0 is on a.
  const std::vector<NodeRecord> per_rank{rank(0, "a", "10.0.0.1"), rank(1, "b", "10.0.0.2"), rank(2, "a", "10.0.0.1"),
                                         rank(3, "b", "10.0.0.2"), rank(4, "a", "10.0.0.9")};
  const auto nodes = nodes_of_ranks(per_rank);
  ASSERT_EQ(nodes.size(), 3u);  // the same name on another address is another machine
  EXPECT_EQ(nodes[0].ranks, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(nodes[1].ranks, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(nodes[2].ranks, (std::vector<int64_t>{4}));
  // And round-trips through the record.
  RunRecord r;
  r.distributed = DistributedRecord{};
  r.distributed->nodes = nodes;
  r.distributed->rendezvous = "a:29500";
  EXPECT_EQ(nlohmann::json(r).get<RunRecord>(), r);
}

}  // namespace
}  // namespace gpubench
