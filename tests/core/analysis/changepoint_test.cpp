// Change-point detection on synthetic series with known answers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "gpubench/core/analysis/changepoint.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/record_io.hpp"

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

TEST(ChangePointTest, ARecentChangeIsFoundWithMinAfterRunsAfterIt) {
  // 10 nights of 1 % noise, then one night 5 % slower: found that night with min_after 1, not with the default 5.
  std::vector<double> s = noise(10, 1000, 10, 3);
  s.push_back(950);
  DetectOptions o;
  EXPECT_TRUE(detect_changes(s, o).empty());
  o.min_after = 1;
  const auto changes = detect_changes(s, o);
  ASSERT_EQ(changes.size(), 1u) << s[0] << " " << s[9];
  EXPECT_EQ(changes[0].index, 10u);
  EXPECT_TRUE(changes[0].recent);
  EXPECT_LE(changes[0].p_value, 0.01);
  // An older change found by the permutation search, then a recent one after it: both.
  std::vector<double> two = noise(12, 1000, 10, 5);
  const auto lower = noise(12, 900, 9, 6);
  two.insert(two.end(), lower.begin(), lower.end());
  two.push_back(800);
  const auto both = detect_changes(two, o);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NEAR(static_cast<double>(both[0].index), 12.0, 1.0);
  EXPECT_EQ(both[1].index, 24u);
}

// The false-alarm rate of each --min-after on real night-to-night noise: the committed H200 A/A repeats (6
// scenarios, 3 to 8 runs each, two of them host-bound and one with a 10 % slow outlier run) resampled into 12-run
// histories without a change. docs/guide.md quotes this test's output; the test fails when a setting's rate is above
// the bound written there, or when a 5 % drop of the newest min_after nights is found in fewer than half of the
// GPU-bound histories.
TEST(ChangePointTest, FalseAlarmRateOnTheCommittedAaSeriesForEachMinAfter) {
  std::map<std::string, std::vector<double>> groups;
  for (const auto& lr : load_records({std::string(GPUBENCH_FIXTURES) + "/records/aa-noise"}, nullptr)) {
    groups[identity_label(lr.record)].push_back(lr.record.summary.samples_per_s);
  }
  ASSERT_EQ(groups.size(), 6u);
  std::printf("min_after  false alarms (12-run A/A histories)  5%% drop of the newest runs found (GPU-bound)\n");
  for (size_t m = 1; m <= 5; ++m) {
    DetectOptions o;
    o.min_after = m;
    o.permutations = 199;
    int alarms = 0, series = 0, found = 0, drops = 0;
    std::mt19937_64 rng(1000 + m);
    for (const auto& [label, values] : groups) {
      // GPU-bound: the repeats agree within 1 % (a host-bound scenario cannot show a 5 % step in a few runs).
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      const bool steady = *hi / *lo < 1.01;
      std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
      for (int i = 0; i < 200; ++i) {
        std::vector<double> h(12);
        for (auto& x : h) x = values[pick(rng)];
        o.seed = static_cast<uint64_t>(i + 1);
        ++series;
        alarms += detect_changes(h, o).empty() ? 0 : 1;
        if (!steady) continue;
        for (size_t k = 12 - m; k < 12; ++k) h[k] *= 0.95;  // the newest m nights 5 % slower
        ++drops;
        const auto c = detect_changes(h, o);
        found += !c.empty() && c.back().index == 12 - m ? 1 : 0;
      }
    }
    const double rate = static_cast<double>(alarms) / series, power = static_cast<double>(found) / drops;
    std::printf("%9zu  %5.2f %% (%d of %d)                 %5.1f %% (%d of %d)\n", m, rate * 100, alarms, series,
                power * 100, found, drops);
    EXPECT_LE(rate, m == 5 ? 0.02 : 0.07) << "min_after " << m;  // docs/guide.md: about 1 % and 4-6 %
    EXPECT_GE(power, 0.5) << "min_after " << m;
  }
}

}  // namespace
}  // namespace gpubench
