// The views (views.hpp) through the printers: what each command shows, in the formats users read.

#include <gtest/gtest.h>

#include <algorithm>

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

ReportInput report_sample() {
  ReportInput in;
  in.title = "H200 sweep";
  in.runs = {run(128, 4300), run(256, 4700), run(512, 0, RunStatus::kOom)};
  in.charts = {"throughput.png", "batch_size.png"};
  return in;
}

TEST(ViewsTest, ReportMarkdownGolden) {
  EXPECT_EQ(render("md", report_document(report_sample())),
            "# H200 sweep\n\n3 run record(s).\n\n## Runs\n\n"
            "| record | model | device | precision | batch | GPUs | train/inference | execution | status | throughput (images/s) | epoch time (s) "
            "| step time median (ms) | step time p95 (ms) | peak reserved | power (W) | energy per sample (J/sample) | MFU |\n"
            "| --- | --- | --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            "| bs128.json | resnet50 | NVIDIA H200 | bf16 | 128 | 1 | train | eager | ok | 4300.0 | 10.00 | 29.77 | 29.87 | 1.00 GiB "
            "| 600 | 0.128 | 12.5% |\n"
            "| bs256.json | resnet50 | NVIDIA H200 | bf16 | 256 | 1 | train | eager | ok | 4700.0 | 10.00 | 54.47 | 54.57 | 1.00 GiB "
            "| 600 | 0.128 | 12.5% |\n"
            "| bs512.json | resnet50 | NVIDIA H200 | bf16 | 512 | 1 | train | eager | oom | - | - | - | - | - | - | - | - |\n"
            "\n## Bottlenecks\n\n"
            "| record | model | device | precision | batch | GPUs | train/inference | execution | status | bounded by | evidence |\n"
            "| --- | --- | --- | --- | ---: | ---: | --- | --- | --- | --- | --- |\n"
            "| bs128.json | resnet50 | NVIDIA H200 | bf16 | 128 | 1 | train | eager | ok | - | no verdict without a kernel profile: "
            "run with --profile |\n"
            "| bs256.json | resnet50 | NVIDIA H200 | bf16 | 256 | 1 | train | eager | ok | - | no verdict without a kernel profile: "
            "run with --profile |\n"
            "| bs512.json | resnet50 | NVIDIA H200 | bf16 | 512 | 1 | train | eager | oom | capacity | out of device memory at batch "
            "512 |\n\n"
            "verdicts of records that carry none are decided from the record as it is read\n"
            "\n## Throughput against batch size\n\n"
            "resnet50 bf16 on NVIDIA H200:\n\n| batch | status | throughput (images/s) | peak reserved |\n"
            "| ---: | --- | ---: | ---: |\n"
            "| 128 | ok | 4300.0 | 1.00 GiB |\n| 256 | ok | 4700.0 | 1.00 GiB |\n| 512 | oom | - | - |\n"
            "\n## Charts\n\n![Throughput per run](throughput.png)\n\n![Throughput against batch size](batch_size.png)\n");
}

TEST(ViewsTest, ReportHtmlIsSelfContainedWithTheChartsEmbedded) {
  const std::string html = make_printer("html", [](const std::string& name) {
                             return name == "throughput.png" ? std::string("\x89PNG fake") : std::string();
                           })->render(report_document(report_sample()));
  EXPECT_NE(html.find("<title>H200 sweep</title>"), std::string::npos);
  EXPECT_NE(html.find("src=\"data:image/png;base64,iVBORyBmYWtl\""), std::string::npos) << html;
  EXPECT_EQ(html.find("batch_size.png"), std::string::npos);  // unreadable chart left out, not a broken link
  EXPECT_EQ(html.find("src=\"throughput.png\""), std::string::npos);  // nothing refers to files beside the page
  EXPECT_NE(html.find("<td class=\"n\">4700.0</td>"), std::string::npos);
}

TEST(ViewsTest, RepeatsOfOneScenarioGetTheirCoefficientOfVariation) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4850), run(256, 4900), run(128, 4300)};
  const std::string md = render("md", report_document(in));
  // Sample standard deviation 50 over mean 4850: 1.03 %; the 95 % interval 4850 -+ 4.303 x 50 / sqrt(3); the lone
  // bs128 run forms no group. The group is named by its scenario identity.
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager, NVIDIA H200 | 3 | 4850.0 | 4725.8 | 4974.2 | 4800.0 | 4900.0 | 1.03% |"),
            std::string::npos) << md;
  EXPECT_EQ(md.find("| resnet50 bs128 bf16 train eager, NVIDIA H200 | 1 |"), std::string::npos);
}

TEST(ViewsTest, RepeatsOfModelsWithOtherUnitsGetTablesOfTheirOwn) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4900)};
  for (double rate : {198.0, 202.0}) {
    LoadedRecord g = run(8, rate);
    g.record.scenario.model = "gpt2";
    g.record.model.sample_unit = "sequences";
    in.runs.push_back(g);
  }
  const std::string md = render("md", report_document(in));
  EXPECT_NE(md.find("Throughput in images/s:"), std::string::npos) << md;
  EXPECT_NE(md.find("Throughput in sequences/s:"), std::string::npos) << md;
  const size_t images = md.find("| scenario | runs | mean (images/s) |");
  const size_t sequences = md.find("| scenario | runs | mean (sequences/s) |");
  ASSERT_NE(images, std::string::npos) << md;
  ASSERT_NE(sequences, std::string::npos) << md;
  EXPECT_LT(md.find("| gpt2 bs8", sequences), md.find("Throughput in", sequences + 1)) << "gpt2 sits under its unit";
}

TEST(ViewsTest, RepeatsNeverPoolOneAndTwoGpuRuns) {
  ReportInput in;
  in.runs = {run(256, 6100), run(256, 6110)};
  RunRecord two = run(256, 11886).record;
  DistributedRecord d;
  d.world_size = 2;
  two.distributed = d;
  in.runs.push_back(LoadedRecord{"two.json", two});
  const std::string md = render("md", report_document(in));
  EXPECT_NE(md.find("| resnet50 bs256 bf16 train eager, NVIDIA H200 | 2 | 6105.0 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("11886.0 | 11886.0"), std::string::npos) << md;  // the 2-GPU run joins no group
}

TEST(ViewsTest, ARecordWithoutAVerdictGetsOneFromItsTelemetryInTheReport) {
  // Written before verdicts needed no profile: no bounded_by, but NVML saw the GPU idle most of the time.
  LoadedRecord old = run(64, 3900);
  EpochTelemetry t;
  t.gpu_util_avg_pct = 54;
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
  EXPECT_NE(md.find("| launch |"), std::string::npos) << md;
  EXPECT_NE(md.find("NVML saw a kernel running 54 %"), std::string::npos) << md;
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

}  // namespace
}  // namespace gpubench
