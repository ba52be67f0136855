#include <gtest/gtest.h>

#include "gpubench/report/compare_report.hpp"

namespace gpubench {
namespace {

CompareResult sample() {
  CompareResult r;
  Comparison a;
  a.label = "resnet50 bs256 bf16 cuda:0";
  a.base_samples_per_s = 4700;
  a.new_samples_per_s = 4465;
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

TEST(CompareReportTest, MarkdownGolden) {
  EXPECT_EQ(format_compare_markdown(sample(), 0.02),
            "| scenario | base (samples/s) | new (samples/s) | change [95% CI] | verdict |\n"
            "| --- | ---: | ---: | --- | --- |\n"
            "| resnet50 bs256 bf16 cuda:0 | 4700.0 | 4465.0 | -5.00% [-5.30%, -4.70%] | **regression** |\n"
            "| resnet50 bs128 bf16 cuda:0 | - | - | - | not comparable (differs in: precision) |\n"
            "\n"
            "A regression is a slowdown whose 95% interval excludes no change and which exceeds 2.0%.\n"
            "\n"
            "Environment differences:\n"
            "- nvidia_driver: 580.159.04 -> 590.10.01\n");
}

TEST(CompareReportTest, JUnitGolden) {
  EXPECT_EQ(format_compare_junit(sample(), 0.02),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuite name=\"gpubench compare\" tests=\"2\" failures=\"1\" skipped=\"1\">\n"
            "  <testcase classname=\"gpubench\" name=\"resnet50 bs256 bf16 cuda:0\">\n"
            "    <failure message=\"regression: -5.00% [-5.30%, -4.70%]\">throughput -5.00% [-5.30%, -4.70%] beyond "
            "the 2.0% threshold</failure>\n"
            "  </testcase>\n"
            "  <testcase classname=\"gpubench\" name=\"resnet50 bs128 bf16 cuda:0\">\n"
            "    <skipped message=\"not comparable: differs in: precision\"/>\n"
            "  </testcase>\n"
            "</testsuite>\n");
}

TEST(CompareReportTest, JsonSaysWhetherAnythingRegressed) {
  const nlohmann::json j = compare_to_json(sample(), 0.02);
  EXPECT_EQ(j["schema"], "gpubench.compare");
  EXPECT_EQ(j["regression"], true);
  EXPECT_EQ(j["comparisons"][0]["verdict"], "regression");
  EXPECT_EQ(j["comparisons"][1]["differing_keys"][0], "precision");
}

}  // namespace
}  // namespace gpubench
