// The views (views.hpp) through the printers: what each command shows, in the formats users read.

#include <gtest/gtest.h>

#include <algorithm>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench {
namespace {

std::string render(const std::string& format, const Document& d) { return make_printer(format)->render(d); }

TEST(ViewsTest, BytesUseBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(11LL * 1024 * 1024 * 1024), "11.00 GiB");
}

TEST(ViewsTest, RunSummaryShowsThroughputStatusAndPartialEpochs) {
  RunRecord r;
  r.model = ModelRecord{"resnet50", 25557032, 24.5e9, 0, "images"};
  r.scenario.batch_size = 16;
  r.environment.device = "cpu";
  EpochRecord e;
  e.steps = 3;
  e.samples = 48;
  e.seconds = 2.0;
  e.samples_per_s = 24.0;
  e.complete = false;
  r.epochs.push_back(e);
  summarize_run(r, {600, 700, 700});
  r.status = RunStatus::kOk;
  const std::string text = render("console", run_summary_document(r));
  EXPECT_NE(text.find("throughput (images/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("24.0"), std::string::npos) << text;
  EXPECT_NE(text.find("(partial)"), std::string::npos) << text;
  EXPECT_NE(text.find("status: ok"), std::string::npos) << text;
}

CompareResult compare_sample() {
  CompareResult r;
  Comparison a;
  a.label = "resnet50 bs256 bf16 cuda:0";
  a.base_samples_per_s = a.base_value = 4700;
  a.new_samples_per_s = a.new_value = 4465;
  a.metric_unit = "images/s";
  a.ratio = 0.95;
  a.ci_low = 0.947;
  a.ci_high = 0.953;
  a.verdict = Verdict::kRegression;
  Comparison b;
  b.label = "resnet50 bs128 bf16 cuda:0";
  b.verdict = Verdict::kNotComparable;
  b.differing_keys = {"precision"};
  r.comparisons = {a, b};
  r.environment.differences = {"nvidia_driver: 580.159.04 -> 590.10.01"};
  return r;
}

// A run without an optimizer (generation, inference) never names one: it printed `batch 1, adamw` and `none optimizer`.
TEST(ViewsTest, AGenerateRunNamesItsModeNotAnOptimizer) {
  RunRecord r;
  r.model = ModelRecord{"gpt2", 124439808, 1e9, 0, "tokens"};
  r.scenario.model = "gpt2";
  r.scenario.mode = "generate";
  r.scenario.batch_size = 1;
  r.scenario.optimizer.name = "adamw";  // the recipe's, unused
  r.execution.optimizer_implementation = "none";
  r.environment.device = "cpu";
  r.status = RunStatus::kOk;
  const std::string text = render("console", run_summary_document(r));
  EXPECT_NE(text.find("batch 1, generate"), std::string::npos) << text;
  EXPECT_EQ(text.find("adamw"), std::string::npos) << text;
  EXPECT_EQ(text.find("none optimizer"), std::string::npos) << text;
}

// A capped run is labelled as what it emulated (it read `resnet50 bs128 fp32 train eager, NVIDIA H100 80GB HBM3`).
TEST(ViewsTest, ACappedRunIsLabelledWithItsCap) {
  RunRecord r;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = 128;
  r.environment.device_name = "NVIDIA H100 80GB HBM3";
  r.scenario.emulate = "NVIDIA GeForce RTX 4070 Ti";
  r.scenario.memory_limit = int64_t{11} << 30;
  EXPECT_NE(identity_label(r).find("emulating NVIDIA GeForce RTX 4070 Ti"), std::string::npos) << identity_label(r);
  r.scenario.emulate.clear();
  EXPECT_NE(identity_label(r).find("capped at 11 GiB"), std::string::npos) << identity_label(r);
}

TEST(ViewsTest, CompareMarkdownGolden) {
  EXPECT_EQ(render("md", compare_document(compare_sample(), 0.02)),
            "| scenario | base (images/s) | new (images/s) | change [95% CI] | verdict | detail |\n"
            "| --- | ---: | ---: | --- | --- | --- |\n"
            "| resnet50 bs256 bf16 cuda:0 | 4700.0 | 4465.0 | -5.00% [-5.30%, -4.70%] | REGRESSION | - |\n"
            "| resnet50 bs128 bf16 cuda:0 | - | - | - | not the same scenario | differs in: precision |\n"
            "\n"
            "A regression is a change for the worse whose 95% interval excludes no change and which exceeds 2.0%. "
            "With two or more runs on a side the interval is over runs; with one run per side it is within-run only "
            "and changes inside the noise floor get no verdict.\n"
            "\n"
            "Environment differences:\n"
            "\n"
            "- nvidia_driver: 580.159.04 -> 590.10.01\n");
}

TEST(ViewsTest, CompareShowsEachSidesSharesAndSaysWhenTheTopFactorChanged) {
  CompareResult r = compare_sample();
  Comparison& a = r.comparisons[0];
  a.base_bounded_by = "kernels";
  a.base_factors = {{"kernels", 0.78, "", ""}, {"compute", 0.19, "", ""}, {"power", 0.03, "", ""}};
  a.new_bounded_by = "power";
  a.new_factors = {{"power", 0.45, "", ""}, {"kernels", 0.40, "", ""}, {"compute", 0.15, "", ""}};
  a.bottleneck_change = "bounded by kernels -> power (power 3 % -> 45 %, kernels 78 % -> 40 % of the step)";
  const std::string md = render("md", compare_document(r, 0.02));
  EXPECT_NE(md.find("| REGRESSION | bounded by kernels -> power (power 3 % -> 45 %"), std::string::npos) << md;
  EXPECT_NE(md.find("| resnet50 bs256 bf16 cuda:0 | kernels (kernels 78 %, compute 19 %, power 3 %) "
                    "| power (power 45 %, kernels 40 %, compute 15 %) |"),
            std::string::npos)
      << md;
  const nlohmann::json j = nlohmann::json::parse(render("json", compare_document(r, 0.02)));
  EXPECT_EQ(j["comparisons"][0]["new_bottleneck"]["bounded_by"], "power");
  EXPECT_DOUBLE_EQ(j["comparisons"][0]["new_bottleneck"]["shares"]["power"].get<double>(), 0.45);
  EXPECT_EQ(j["comparisons"][1]["base_bottleneck"]["bounded_by"], "");
}

TEST(ViewsTest, CompareJUnitGolden) {
  EXPECT_EQ(render("junit", compare_document(compare_sample(), 0.02)),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuite name=\"gpubench compare\" tests=\"2\" failures=\"1\" skipped=\"1\">\n"
            "  <testcase classname=\"gpubench\" name=\"resnet50 bs256 bf16 cuda:0\">\n"
            "    <failure message=\"regression: throughput -5.00% [-5.30%, -4.70%] beyond the 2.0% threshold\">"
            "regression: throughput -5.00% [-5.30%, -4.70%] beyond the 2.0% threshold</failure>\n"
            "  </testcase>\n"
            "  <testcase classname=\"gpubench\" name=\"resnet50 bs128 bf16 cuda:0\">\n"
            "    <skipped message=\"not the same scenario: differs in: precision\"/>\n"
            "  </testcase>\n"
            "</testsuite>\n");
}

TEST(ViewsTest, CompareJsonSaysWhetherAnythingRegressed) {
  const nlohmann::json j = nlohmann::json::parse(render("json", compare_document(compare_sample(), 0.02)));
  EXPECT_EQ(j["schema"], "gpubench.compare");
  EXPECT_EQ(j["regression"], true);
  EXPECT_EQ(j["metric"], "samples_per_s");
  EXPECT_EQ(j["comparisons"][0]["verdict"], "regression");
  EXPECT_EQ(j["comparisons"][0]["base_samples_per_s"], 4700.0);  // the v1 key stays for old readers
  EXPECT_EQ(j["comparisons"][1]["differing_keys"][0], "precision");
}

LoadedRecord run(int64_t batch, double rate, RunStatus status = RunStatus::kOk) {
  LoadedRecord l;
  l.path = "runs/sweep/bs" + std::to_string(batch) + ".json";
  RunRecord& r = l.record;
  r.status = status;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.precision = "bf16";
  r.precision.resolved = "bf16";
  r.model.sample_unit = "images";
  r.environment.device_name = "NVIDIA H200";
  r.execution.mode = "eager";
  if (status == RunStatus::kOk) {
    r.summary.steps = 100;
    r.summary.samples_per_s = rate;
    r.summary.epoch_seconds_mean = 10.0;
    r.summary.step_time.count = 100;
    r.summary.step_time.median_ms = 1000.0 * static_cast<double>(batch) / rate;
    r.summary.step_time.p95_ms = 1000.0 * static_cast<double>(batch) / rate + 0.1;
    r.summary.peak_reserved_bytes = int64_t{1} << 30;
    r.summary.mfu = 0.125;
    EpochRecord e;  // 600 W for 10 s over 46,875 samples: 6 kJ, 0.128 J/sample
    e.seconds = 10.0;
    e.samples = 46875;
    e.telemetry = EpochTelemetry{};
    e.telemetry->power_avg_w = 600;
    e.telemetry->energy_j = 6000;
    e.telemetry->joules_per_sample = 0.128;
    r.epochs.push_back(e);
  }
  return l;
}

/// A generate point of a sweep: decode tokens/s at (batch, prompt).
SweepPointResult generate_point(int64_t batch, int64_t prompt, double decode) {
  RunRecord r;
  r.status = RunStatus::kOk;
  r.scenario.model = "llama";
  r.scenario.mode = "generate";
  r.scenario.batch_size = batch;
  r.scenario.prompt_tokens = prompt;
  r.summary.samples_per_s = decode * 0.9;
  r.summary.metrics.push_back(Metric{"decode_tokens_per_s", "decode", "tokens/s", Better::kHigher, decode});
  const std::string label = "batch_size=" + std::to_string(batch) + ",prompt_tokens=" + std::to_string(prompt);
  return SweepPointResult{label, {}, "runs/" + label + ".json", 0, r, ""};
}

TEST(ViewsTest, AGenerateSweepTablesDecodeByPromptAndBatchAndSaysWhereItStopsGrowing) {
  // 128-token prompts: 1 -> 8 grows 7x, 8 -> 32 by 6 %: stops at 8. 512-token prompts: still growing at 32.
  const std::vector<SweepPointResult> points{generate_point(1, 128, 100), generate_point(8, 128, 700),
                                             generate_point(32, 128, 742), generate_point(1, 512, 90),
                                             generate_point(8, 512, 600), generate_point(32, 512, 1500)};
  const Document d = sweep_document("llama", points);
  const Table* t = nullptr;
  for (const auto& b : d.blocks) {
    if (b.kind == Block::Kind::kTable && b.table.id == "decode") t = &b.table;
  }
  ASSERT_NE(t, nullptr) << "a decode table";
  ASSERT_EQ(t->rows.size(), 2u);
  ASSERT_EQ(t->columns.size(), 5u);  // prompt, batch 1, 8, 32, where it stops
  EXPECT_EQ(t->columns[1].header, "batch 1");
  EXPECT_EQ(t->rows[0][0].number, 128.0);
  EXPECT_EQ(t->rows[0][2].number, 700.0);
  EXPECT_EQ(t->rows[0][4].number, 8.0);
  EXPECT_FALSE(t->rows[1][4].number.has_value()) << "512-token prompts still grow at the largest batch";
  EXPECT_EQ(d.data["decode_saturating_batch"]["128"], 8);
  EXPECT_TRUE(d.data["decode_saturating_batch"]["512"].is_null());
  // A training sweep has no decode table.
  for (const auto& b : sweep_document("resnet50", {SweepPointResult{"batch_size=8", {}, "a.json", 0, run(8, 900).record, ""}}).blocks) {
    EXPECT_FALSE(b.kind == Block::Kind::kTable && b.table.id == "decode");
  }
}

ReportInput report_sample() {
  ReportInput in;
  in.title = "H200 sweep";
  in.runs = {run(128, 4300), run(256, 4700), run(512, 0, RunStatus::kOom)};
  for (auto& lr : in.runs) {
    EnvironmentRecord& e = lr.record.environment;
    e.nvidia_driver_version = "580.159.04";
    e.cuda_runtime_version = "13.0";
    e.cudnn_version = "9.19.0";
    e.libtorch_version = "2.11.0";
    e.hostname = "h200-a";
    e.start_time_utc = "2026-11-30T10:00:00Z";
    lr.record.telemetry.power_limit_w = 700;
    lr.record.telemetry.clocks_locked = false;
  }
  in.runs[2].record.environment.start_time_utc = "2026-12-01T09:00:00Z";
  in.charts = {"throughput.png", "batch_size.png"};
  return in;
}

TEST(ViewsTest, ReportMarkdownGolden) {
  EXPECT_EQ(render("md", report_document(report_sample())),
            "# H200 sweep\n\n3 run record(s) (2 ok), 3 scenario(s), on NVIDIA H200, 2026-11-30 to 2026-12-01.\n\n"
            "## Headline\n\n### NVIDIA H200\n\n"
            "| environment | NVIDIA H200 |\n| --- | --- |\n| GPUs per run | 1 |\n| NVIDIA driver | 580.159.04 |\n"
            "| CUDA runtime | 13.0 |\n| cuDNN | 9.19.0 |\n| LibTorch | 2.11.0 |\n| power limit | 700 W |\n"
            "| clocks locked | no |\n| host | h200-a |\n| gpubench revision | not recorded |\n"
            "| dates (UTC) | 2026-11-30 to 2026-12-01 |\n| runs | 3 |\n\n"
            "Training, throughput in images/s:\n\n"
            "| scenario | runs | throughput (images/s) | ± 95 % (images/s) | step p50 (ms) | step p95 (ms) "
            "| energy per image (J) | MFU | peak memory | bounded by |\n"
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
            "| resnet50 bs128 bf16 train eager | 1 | 4300.0 | - | 29.77 | 29.87 | 0.128 | 12.5% | 1.00 GiB | - |\n"
            "| resnet50 bs256 bf16 train eager | 1 | 4700.0 | - | 54.47 | 54.57 | 0.128 | 12.5% | 1.00 GiB | - |\n"
            "| resnet50 bs512 bf16 train eager | 0 (+1 oom) | - | - | - | - | - | - | - | capacity |\n\n"
            "one row per scenario identity (as compare pairs runs); throughput is the mean over its ok runs ± the "
            "half-width of a Student t 95 % interval (none from one run); step times, energy and MFU are means over "
            "runs, peak memory (reserved) the largest\n"
            "runs: ok runs, then those that ended otherwise (oom, nan, interrupted, failed)\n\n"
            "## Runs\n\nEvery run, grouped by scenario as in the headline; more of each record's figures are one click "
            "away.\n\nNVIDIA H200, training (images/s):\n\n"
            "| scenario | record | status | throughput (images/s) | epoch time (s) | step p50 (ms) | step p95 (ms) "
            "| peak reserved |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n"
            "| resnet50 bs128 bf16 train eager | bs128.json | ok | 4300.0 | 10.00 | 29.77 | 29.87 | 1.00 GiB |\n"
            "| resnet50 bs256 bf16 train eager | bs256.json | ok | 4700.0 | 10.00 | 54.47 | 54.57 | 1.00 GiB |\n"
            "| resnet50 bs512 bf16 train eager | bs512.json | oom | - | - | - | - | - |\n\n"
            "<details><summary>Step times, compute and memory of these runs</summary>\n\n"
            "| record | step time mean (ms) | step time p5 (ms) | step time max (ms) | step time stdev (ms) | MFU |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: |\n"
            "| bs128.json | 0.00 | 0.00 | 0.00 | 0.00 | 12.5% |\n| bs256.json | 0.00 | 0.00 | 0.00 | 0.00 | 12.5% |\n"
            "| bs512.json | - | - | - | - | - |\n\n</details>\n\n"
            "<details><summary>Energy, power, clocks and drift of these runs</summary>\n\n"
            "| record | energy (J) | energy per sample (J/sample) | power (W) |\n| --- | ---: | ---: | ---: |\n"
            "| bs128.json | 6000 | 0.128 | 600 |\n| bs256.json | 6000 | 0.128 | 600 |\n| bs512.json | - | - | - |\n\n"
            "</details>\n\n"
            "## Bottlenecks\n\n| scenario | record | bounded by | shares of the step | evidence |\n"
            "| --- | --- | --- | --- | --- |\n"
            "| resnet50 bs512 bf16 train eager, NVIDIA H200 | bs512.json | capacity | capacity 100 % "
            "| out of device memory at batch 512 |\n\n"
            "each factor's share of the timed step, decided from the record as it is read (records written before the "
            "attribution included); docs/bottleneck.md explains the estimates\n"
            "2 other run(s) hold too little evidence for a verdict (failed, or no telemetry and no --profile)\n\n"
            "## Throughput against batch size\n\n"
            "resnet50 bf16 train on NVIDIA H200:\n\n| batch | status | throughput (images/s) | peak reserved |\n"
            "| ---: | --- | ---: | ---: |\n"
            "| 128 | ok | 4300.0 | 1.00 GiB |\n| 256 | ok | 4700.0 | 1.00 GiB |\n| 512 | oom | - | - |\n"
            "\n## Charts\n\n![Throughput per scenario: mean over runs with its 95 % interval, one panel per model and unit](throughput.png)"
            "\n\n![Throughput against batch size](batch_size.png)\n");
}

TEST(ViewsTest, ReportHtmlIsSelfContainedWithTheChartsEmbedded) {
  ReportInput in = report_sample();
  in.chart_labels["throughput.png"] = {"resnet50 bs128 <bf16>", "resnet50 bs256"};
  const std::string html = make_printer("html", [](const std::string& name) {
                             return name == "throughput.png" ? std::string("\x89PNG fake") : std::string();
                           })->render(report_document(in));
  EXPECT_NE(html.find("<title>H200 sweep</title>"), std::string::npos);
  EXPECT_NE(html.find("src=\"data:image/png;base64,iVBORyBmYWtl\""), std::string::npos) << html;
  EXPECT_EQ(html.find("batch_size.png"), std::string::npos);  // unreadable chart left out, not a broken link
  EXPECT_EQ(html.find("src=\"throughput.png\""), std::string::npos);  // nothing refers to files beside the page
  EXPECT_NE(html.find("<td class=\"n\">4700.0</td>"), std::string::npos);
  // The chart's labels ride along, escaped; folded tables are <details>; each table says which it is.
  EXPECT_NE(html.find("data-labels=\"[&quot;resnet50 bs128 &lt;bf16&gt;&quot;,&quot;resnet50 bs256&quot;]\""),
            std::string::npos) << html;
  EXPECT_NE(html.find("<details><summary>Step times, compute and memory of these runs</summary>"), std::string::npos);
  EXPECT_NE(html.find("<table data-table=\"headline\">"), std::string::npos);
  EXPECT_NE(html.find("max-width:1240px"), std::string::npos);  // a 1,280 px screen holds the page
}

TEST(ViewsTest, RepeatsCollapseToOneRowWithTheirMeanIntervalAndSpread) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4850), run(256, 4900), run(128, 4300)};
  const std::string md = render("md", report_document(in));
  // Sample standard deviation 50 over mean 4850: 1.03 %; the 95 % interval 4850 -+ 4.303 x 50 / sqrt(3) = 124.2.
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager | 3 | 4850.0 | 124.2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| resnet50 bs128 bf16 train eager | 1 | 4300.0 | - |"), std::string::npos) << md;
  // The spread, folded: only the scenario run more than once.
  EXPECT_NE(md.find("<details><summary>Spread over repeats (images/s)</summary>"), std::string::npos) << md;
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager | 3 | 4850.0 | 4800.0 | 4900.0 | 1.03% |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| resnet50 bs128 bf16 train eager | 1 | 4300.0 | 4300.0"), std::string::npos) << md;
}

TEST(ViewsTest, EachHeadlineTableHasOneUnitAndOneMode) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4900)};
  for (double rate : {198.0, 202.0}) {
    LoadedRecord g = run(8, rate);
    g.record.scenario.model = "gpt2";
    g.record.model.sample_unit = "sequences";
    in.runs.push_back(g);
  }
  LoadedRecord inference = run(1, 494);
  inference.record.scenario.model = "gpt2";
  inference.record.scenario.mode = "inference";
  inference.record.model.sample_unit = "sequences";
  in.runs.push_back(inference);
  const std::string md = render("md", report_document(in));
  const size_t images = md.find("Training, throughput in images/s:");
  const size_t sequences = md.find("Training, throughput in sequences/s:");
  const size_t infer = md.find("Inference, throughput in sequences/s:");
  ASSERT_NE(images, std::string::npos) << md;
  ASSERT_NE(sequences, std::string::npos) << md;
  ASSERT_NE(infer, std::string::npos) << md;
  EXPECT_LT(images, sequences);  // training first, then inference
  EXPECT_LT(sequences, infer);
  EXPECT_LT(md.find("| gpt2 bs8 bf16 train eager | 2 | 200.0 |", sequences), infer) << md;
  EXPECT_GT(md.find("| gpt2 bs1 bf16 inference eager | 1 | 494.0 |"), infer) << md;
  EXPECT_NE(md.find("NVIDIA H200, inference (sequences/s):"), std::string::npos) << md;
}

TEST(ViewsTest, OneAndTwoGpuRunsAreDifferentScenarios) {
  ReportInput in;
  in.runs = {run(256, 6100), run(256, 6110)};
  RunRecord two = run(256, 11886).record;
  DistributedRecord d;
  d.world_size = 2;
  two.distributed = d;
  in.runs.push_back(LoadedRecord{"two.json", two});
  const std::string md = render("md", report_document(in));
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager | 2 | 6105.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager, 2 GPUs | 1 | 11886.0 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| GPUs per run | 1 (2), 2 (1) |"), std::string::npos) << md;
}

TEST(ViewsTest, ScenariosThatShareALabelAreToldApartByWhatDiffers) {
  ReportInput in;
  in.runs = {run(256, 6100), run(256, 6200)};
  in.runs[1].record.scenario.dataset_size = 25600;
  const std::string md = render("md", report_document(in));
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager [dataset_size=" + std::to_string(Scenario{}.dataset_size) +
                    "] | 1 | 6100.0 |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager [dataset_size=25600] | 1 | 6200.0 |"), std::string::npos) << md;
}

TEST(ViewsTest, TheChartScriptGetsEveryScenarioWithItsInterval) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4850), run(256, 4900), run(512, 0, RunStatus::kOom)};
  const nlohmann::json g = report_chart_groups(in);
  ASSERT_EQ(g["scenarios"].size(), 2u);
  const nlohmann::json& s = g["scenarios"][0];
  EXPECT_EQ(s["label"], "resnet50 bs256 bf16 train eager, NVIDIA H200");
  EXPECT_EQ(s["unit"], "images/s");
  EXPECT_EQ(s["mode"], "train");
  EXPECT_EQ(s["n"], 3);
  EXPECT_DOUBLE_EQ(s["mean"].get<double>(), 4850.0);
  EXPECT_NEAR(s["half_width_95"].get<double>(), 124.2, 0.05);
  EXPECT_EQ(s["values"].size(), 3u);
  EXPECT_EQ(g["scenarios"][1]["n"], 0);  // the OOM run: a scenario without a throughput
  EXPECT_TRUE(g["scenarios"][1]["half_width_95"].is_null());
  EXPECT_EQ(g["scenarios"][1]["paths"].size(), 1u);
}

TEST(ViewsTest, ARecordWithoutAVerdictGetsOneFromItsTelemetryInTheReport) {
  // Written before the attribution: no bounded_by, but NVML saw the GPU idle most of the time.
  LoadedRecord old = run(64, 3900);
  EpochTelemetry t;
  t.gpu_util_avg_pct = 30;
  for (auto& e : old.record.epochs) e.telemetry = t;
  if (old.record.epochs.empty()) {
    EpochRecord e;
    e.telemetry = t;
    old.record.epochs.push_back(e);
  }
  old.record.summary.steps = 10;
  ReportInput in;
  in.runs = {old};
  const std::string md = render("md", report_document(in));
  EXPECT_NE(md.find("## Bottlenecks"), std::string::npos) << md;
  EXPECT_NE(md.find("| launch | launch 70 %"), std::string::npos) << md;
  EXPECT_NE(md.find("NVML saw no kernel running 70 %"), std::string::npos) << md;
}

TEST(ViewsTest, NoChartsSaysWhy) {
  ReportInput in = report_sample();
  in.charts.clear();
  in.chart_note = "python3-matplotlib is missing";
  EXPECT_NE(render("md", report_document(in)).find("No charts: python3-matplotlib is missing"), std::string::npos);
}

TEST(ViewsTest, ExportHasARowPerEpochAndAColumnPerMetric) {
  const std::vector<LoadedRecord> records{run(128, 4300), run(256, 4700)};
  const std::string csv = render("csv", export_document(records, ExportPer::kEpoch));
  const auto header = "," + csv.substr(0, csv.find('\n')) + ",";
  for (const char* col : {"record", "model", "batch_size", "epoch", "energy_j", "joules_per_sample", "power_avg_w"}) {
    EXPECT_NE(header.find(std::string(",") + col + ","), std::string::npos) << col << " in " << header;
  }
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);  // header + one epoch per record
  EXPECT_NE(render("csv", export_document(records, ExportPer::kRun)).find(",mfu"), std::string::npos);
}

TEST(ViewsTest, ExportPerRunHasTheVerdictAndEveryFactorsShareFromTheRecordAsRead) {
  LoadedRecord idle = run(128, 4300), none = run(256, 4700);
  EpochTelemetry t;
  t.gpu_util_avg_pct = 30;
  idle.record.epochs.at(0).telemetry = t;
  idle.record.summary.steps = 10;
  idle.record.summary.bounded_by = "compute";  // what an older model said: the reader decides again
  const auto j = nlohmann::json::parse(render("json", export_document({idle, none}, ExportPer::kRun)));
  const auto& rows = j.at("tables").at("runs");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["bounded_by"], "launch");
  EXPECT_NEAR(rows[0]["share_launch"].get<double>(), 0.70, 1e-9);
  EXPECT_EQ(rows[0]["share_power"].get<double>(), 0.0);
  EXPECT_TRUE(rows[1]["bounded_by"].is_null());  // no clock or utilisation readings: no verdict, no shares
  EXPECT_TRUE(rows[1]["share_launch"].is_null());
  const std::string csv = render("csv", export_document({idle, none}, ExportPer::kRun));
  for (const auto& name : bottleneck_factor_names()) {
    EXPECT_NE(csv.substr(0, csv.find('\n')).find("share_" + name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace gpubench
