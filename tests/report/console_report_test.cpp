#include <gtest/gtest.h>

#include "gpubench/report/console.hpp"

namespace gpubench {
namespace {

TEST(ConsoleReportTest, BytesUseBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(11LL * 1024 * 1024 * 1024), "11.00 GiB");
}

TEST(ConsoleReportTest, SummaryShowsThroughputStatusAndPartialEpochs) {
  RunRecord r;
  r.model = ModelRecord{"resnet50", 25557032, 24.5e9, "images"};
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
  const std::string text = format_run_summary(r);
  EXPECT_NE(text.find("images/s"), std::string::npos) << text;
  EXPECT_NE(text.find("24.0"), std::string::npos) << text;
  EXPECT_NE(text.find("(partial)"), std::string::npos) << text;
  EXPECT_NE(text.find("status: ok"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpubench
