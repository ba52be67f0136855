// A metric added in one place (where it is measured: set_metric on the epoch and the summary) reaches the record's
// JSON, every view that lists metrics in every format, and `compare --metric`, with no other change anywhere.

#include <gtest/gtest.h>

#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench {
namespace {

/// The one place: a made-up measurement, "GPU busy", as a fraction where higher is better.
void measure_busy(RunRecord& r, const std::vector<double>& per_epoch) {
  double sum = 0;
  for (size_t i = 0; i < r.epochs.size(); ++i) {
    set_metric(r.epochs[i].metrics, Metric{"gpu_busy_fraction", "GPU busy", "fraction", Better::kHigher, per_epoch[i]});
    sum += per_epoch[i];
  }
  set_metric(r.summary.metrics, Metric{"gpu_busy_fraction", "GPU busy", "fraction", Better::kHigher,
                                       sum / static_cast<double>(per_epoch.size())});
}

LoadedRecord record(const std::string& path, const std::vector<double>& busy) {
  LoadedRecord l;
  l.path = path;
  RunRecord& r = l.record;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = 32;
  r.model.name = "resnet50";
  r.model.sample_unit = "images";
  r.environment.device = "cpu";
  std::vector<double> all;
  for (size_t i = 0; i < busy.size(); ++i) {
    EpochRecord e;
    e.index = static_cast<int64_t>(i);
    e.steps = 4;
    e.samples = 128;
    e.seconds = 1.0;
    e.samples_per_s = 128;
    e.step_times_ms = {250, 250, 250, 250};
    e.step_time = summarize_step_times(e.step_times_ms);
    all.insert(all.end(), e.step_times_ms.begin(), e.step_times_ms.end());
    r.epochs.push_back(e);
  }
  summarize_run(r, all);
  measure_busy(r, busy);
  return l;
}

TEST(MetricsEverywhereTest, AnExtraMetricTravelsThroughTheRecordAndEveryPrinter) {
  const LoadedRecord l = record("runs/a.json", {0.91, 0.93, 0.95});
  // The record: written with its tag, unit and direction, read back equal.
  const nlohmann::json j = l.record;
  bool found = false;
  for (const auto& m : j["summary"]["metrics"]) found = found || (m["tag"] == "gpu_busy_fraction" && m["better"] == "higher");
  EXPECT_TRUE(found) << j["summary"]["metrics"].dump();
  EXPECT_EQ(j["epochs"][1]["metrics"].back()["value"], 0.93);
  EXPECT_EQ(j.get<RunRecord>(), l.record);

  // Every printer of the views that list metrics.
  const Document exported = export_document({l}, ExportPer::kEpoch);
  const Document per_run = export_document({l}, ExportPer::kRun);
  ReportInput in;
  in.runs = {l};
  const Document report = report_document(in);
  for (const char* f : {"console", "md", "html"}) {
    EXPECT_NE(make_printer(f)->render(exported).find("GPU busy"), std::string::npos) << f;
    EXPECT_NE(make_printer(f)->render(exported).find("93.0%"), std::string::npos) << f;
    EXPECT_NE(make_printer(f)->render(report).find("GPU busy"), std::string::npos) << f;
    EXPECT_NE(make_printer(f)->render(report).find("93.0%"), std::string::npos) << f;  // the run's mean
  }
  EXPECT_NE(make_printer("console")->render(run_summary_document(l.record)).find("GPU busy: 93.0%"), std::string::npos);
  for (const Document* d : {&exported, &per_run}) {  // a report's CSV is its first table, the environment
    EXPECT_NE(make_printer("csv")->render(*d).find("gpu_busy_fraction"), std::string::npos);
  }
  for (const Document* d : {&exported, &per_run}) {
    EXPECT_NE(make_printer("jsonl")->render(*d).find("\"gpu_busy_fraction\":0.93"), std::string::npos);
    EXPECT_NE(make_printer("json")->render(*d).find("\"gpu_busy_fraction\": 0.93"), std::string::npos);
  }
  // The report lists a run's extra figures one per row (any number of them fits the page): tag and value as shown.
  const std::string report_jsonl = make_printer("jsonl")->render(report);
  EXPECT_NE(report_jsonl.find("\"tag\":\"gpu_busy_fraction\""), std::string::npos) << report_jsonl;
  EXPECT_NE(report_jsonl.find("\"value\":\"93.0%\""), std::string::npos) << report_jsonl;
}

TEST(MetricsEverywhereTest, CompareTakesTheExtraMetricAndItsDirection) {
  const std::vector<LoadedRecord> base{record("base.json", {0.93, 0.94, 0.92, 0.93})};
  const std::vector<LoadedRecord> worse{record("new.json", {0.80, 0.81, 0.79, 0.80})};
  const std::vector<LoadedRecord> better{record("new2.json", {0.97, 0.98, 0.97, 0.98})};
  CompareOptions o;
  o.metric = "gpu_busy_fraction";
  EXPECT_NE(std::find(metric_tags(base).begin(), metric_tags(base).end(), o.metric), metric_tags(base).end());
  const CompareResult down = compare_runs(base, worse, o);
  ASSERT_EQ(down.comparisons.size(), 1u);
  const Comparison& c = down.comparisons[0];
  EXPECT_EQ(c.metric_name, "GPU busy");
  EXPECT_NEAR(c.base_value, 0.93, 1e-9);
  EXPECT_NEAR(c.new_value, 0.80, 1e-9);
  EXPECT_EQ(c.verdict, Verdict::kRegression);  // higher is better, and it fell 14 %
  EXPECT_EQ(c.interval_basis, "epochs");
  EXPECT_TRUE(down.any_regression());
  const std::string junit = make_printer("junit")->render(compare_document(down, o.threshold));
  EXPECT_NE(junit.find("regression: GPU busy"), std::string::npos) << junit;
  EXPECT_NE(make_printer("md")->render(compare_document(down, o.threshold)).find("| 93.0% | 80.0% |"),
            std::string::npos);
  const CompareResult up = compare_runs(base, better, o);
  EXPECT_EQ(up.comparisons[0].verdict, Verdict::kFaster);
  EXPECT_EQ(verdict_text(up.comparisons[0]), "better");
}

TEST(MetricsEverywhereTest, LowerIsBetterMetricsTurnTheVerdictAround) {
  // Step time p95 is a standard metric where lower is better: slower steps are a regression.
  std::vector<LoadedRecord> base{record("b.json", {0.9, 0.9})}, cand{record("c.json", {0.9, 0.9})};
  for (auto& e : cand[0].record.epochs) {
    e.step_times_ms = {300, 300, 300, 330};
    e.step_time = summarize_step_times(e.step_times_ms);
  }
  CompareOptions o;
  o.metric = "step_time_p95_ms";
  const CompareResult r = compare_runs(base, cand, o);
  EXPECT_EQ(r.comparisons[0].verdict, Verdict::kRegression);
  EXPECT_EQ(r.comparisons[0].better, Better::kLower);
  EXPECT_GT(r.comparisons[0].ratio, 1.0);
}

}  // namespace
}  // namespace gpubench
