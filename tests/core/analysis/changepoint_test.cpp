// Change-point detection on synthetic series with known answers.

#include <gtest/gtest.h>

#include <random>

#include "gpubench/core/analysis/changepoint.hpp"

namespace gpubench {
namespace {

std::vector<double> noise(size_t n, double mean, double sd, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(ChangePointTest, FindsAFivePercentStepInOnePercentNoiseAtItsPlace) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::vector<double> s = noise(30, 1000, 10, seed);            // 1 % noise around 1000
    const std::vector<double> after = noise(30, 950, 9.5, seed + 100);  // 5 % slower from point 30 on
    s.insert(s.end(), after.begin(), after.end());
    const auto changes = detect_changes(s);
    ASSERT_EQ(changes.size(), 1u) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(changes[0].index), 30.0, 2.0) << "seed " << seed;
    EXPECT_NEAR(changes[0].after_mean / changes[0].before_mean, 0.95, 0.01);
    EXPECT_LE(changes[0].p_value, 0.01);
  }
}

TEST(ChangePointTest, FindsTwoStepsAndAShortSeriesHasNone) {
  std::vector<double> s = noise(20, 100, 1, 7);
  for (double level : {105.0, 98.0}) {
    const auto more = noise(20, level, 1, static_cast<uint64_t>(level));
    s.insert(s.end(), more.begin(), more.end());
  }
  const auto changes = detect_changes(s);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_NEAR(static_cast<double>(changes[0].index), 20.0, 1.0);
  EXPECT_NEAR(static_cast<double>(changes[1].index), 40.0, 1.0);
  EXPECT_TRUE(detect_changes({1, 2, 3}).empty());  // fewer than two segments' worth of points
}

TEST(ChangePointTest, PureNoiseRaisesAlarmsAtMostAtTheDocumentedRate) {
  // 200 series of 200 points of pure noise at alpha = 1 %: about 2 false alarms expected; more than 7 would happen
  // with probability < 0.1 % if the rate held, so it would mean the documented rate is wrong.
  DetectOptions o;
  o.permutations = 199;  // coarser p-values keep the test fast; the rate guarantee holds for any count
  o.alpha = 0.01;
  int alarms = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    o.seed = seed;
    alarms += detect_changes(noise(200, 1000, 10, seed * 7919), o).empty() ? 0 : 1;
  }
  EXPECT_LE(alarms, 7);
  // And the single 200-point series the issue names stays quiet with the default options.
  EXPECT_TRUE(detect_changes(noise(200, 1000, 10, 42)).empty());
}

}  // namespace
}  // namespace gpubench
