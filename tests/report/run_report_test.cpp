#include <gtest/gtest.h>

#include "gpubench/report/run_report.hpp"

namespace gpubench {
namespace {

LoadedRecord run(int64_t batch, double rate, RunStatus status = RunStatus::kOk) {
  LoadedRecord l;
  l.path = "runs/sweep/bs" + std::to_string(batch) + ".json";
  RunRecord& r = l.record;
  r.status = status;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.precision = "bf16";
  r.precision.resolved = "bf16";
  r.environment.device_name = "NVIDIA H200";
  r.execution.mode = "eager";
  if (status == RunStatus::kOk) {
    r.summary.samples_per_s = rate;
    r.summary.epoch_seconds_mean = 10.0;
    r.summary.step_time.median_ms = 1000.0 * batch / rate;
    r.summary.step_time.p95_ms = 1000.0 * batch / rate + 0.1;
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

ReportInput sample() {
  ReportInput in;
  in.title = "H200 sweep";
  in.runs = {run(128, 4300), run(256, 4700), run(512, 0, RunStatus::kOom)};
  in.charts = {"throughput.png", "batch_size.png"};
  return in;
}

TEST(RunReportTest, MarkdownGolden) {
  EXPECT_EQ(format_report_markdown(sample()),
            "# H200 sweep\n\n3 run record(s).\n\n## Runs\n\n"
            "| record | model | device | precision | batch | GPUs | mode | status | samples/s | epoch s | step ms median / p95 "
            "| peak reserved | power W | J/sample | MFU |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
            "| bs128.json | resnet50 | NVIDIA H200 | bf16 | 128 | 1 | eager | ok | 4300.0 | 10.00 | 29.77 / 29.87 | 1.00 GiB "
            "| 600 | 0.128 | 12.5% |\n"
            "| bs256.json | resnet50 | NVIDIA H200 | bf16 | 256 | 1 | eager | ok | 4700.0 | 10.00 | 54.47 / 54.57 | 1.00 GiB "
            "| 600 | 0.128 | 12.5% |\n"
            "| bs512.json | resnet50 | NVIDIA H200 | bf16 | 512 | 1 | eager | oom | - | - | - | - | - | - | - |\n"
            "\n## Throughput against batch size\n\n"
            "resnet50 bf16 on NVIDIA H200:\n\n| batch | status | samples/s | peak reserved |\n| --- | --- | --- | --- |\n"
            "| 128 | ok | 4300.0 | 1.00 GiB |\n| 256 | ok | 4700.0 | 1.00 GiB |\n| 512 | oom | - | - |\n"
            "\n## Charts\n\n![Throughput per run](throughput.png)\n\n![Throughput against batch size](batch_size.png)\n\n");
}

TEST(RunReportTest, HtmlIsSelfContainedWithTheChartsEmbedded) {
  const std::string html = format_report_html(sample(), [](const std::string& name) {
    return name == "throughput.png" ? base64_encode("\x89PNG fake") : std::string();
  });
  EXPECT_NE(html.find("<title>H200 sweep</title>"), std::string::npos);
  EXPECT_NE(html.find("src=\"data:image/png;base64,iVBORyBmYWtl\""), std::string::npos) << html;
  EXPECT_EQ(html.find("batch_size.png"), std::string::npos);  // unreadable chart left out, not a broken link
  EXPECT_EQ(html.find("src=\"throughput.png\""), std::string::npos);  // nothing refers to files beside the page
  EXPECT_NE(html.find("<td>4700.0</td>"), std::string::npos);
}

TEST(RunReportTest, RepeatsOfOneScenarioGetTheirCoefficientOfVariation) {
  ReportInput in;
  in.runs = {run(256, 4800), run(256, 4850), run(256, 4900), run(128, 4300)};
  const std::string md = format_report_markdown(in);
  // Sample standard deviation 50 over mean 4850: 1.03 %; the lone bs128 run forms no group.
  EXPECT_NE(md.find("| resnet50 bs256 bf16 eager | 3 | 4850.0 | 4800.0 | 4900.0 | 1.03% |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| resnet50 bs128 bf16 eager | 1 |"), std::string::npos);
}

TEST(RunReportTest, NoChartsSaysWhy) {
  ReportInput in = sample();
  in.charts.clear();
  in.chart_note = "python3-matplotlib is missing";
  EXPECT_NE(format_report_markdown(in).find("No charts: python3-matplotlib is missing"), std::string::npos);
}

TEST(Base64Test, Rfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

}  // namespace
}  // namespace gpubench
