#include "gpubench/core/record/stats.hpp"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

TEST(StepTimeStatsTest, MatchesNumpyOnOneToTen) {
  // numpy: percentile([1..10], 5) = 1.45, 95 -> 9.55, median 5.5, std(ddof=1) = 3.0276503540974917
  const StepTimeStats s = summarize_step_times({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_NEAR(s.p5_ms, 1.45, 1e-12);
  EXPECT_NEAR(s.p95_ms, 9.55, 1e-12);
  EXPECT_NEAR(s.stdev_ms, 3.0276503540974917, 1e-12);
  EXPECT_EQ(s.min_ms, 1);
  EXPECT_EQ(s.max_ms, 10);
}

TEST(StepTimeStatsTest, EmptyAndSingleSample) {
  EXPECT_EQ(summarize_step_times({}).count, 0);
  const StepTimeStats one = summarize_step_times({4.0});
  EXPECT_EQ(one.median_ms, 4.0);
  EXPECT_EQ(one.stdev_ms, 0.0);
}

}  // namespace
}  // namespace gpubench
