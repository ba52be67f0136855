#include <gtest/gtest.h>

#include "gpubench/core/scenario/sweep.hpp"

namespace gpubench {
namespace {

TEST(SweepTest, ListsExpandIntoEveryCombinationInKeyOrder) {
  const auto points = expand_sweep({{"batch_size", "32,64"}, {"precision", "fp32,bf16"}, {"epochs", "2"}},
                                   {"batch_size", "precision", "epochs"});
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].label(), "batch_size=32,precision=fp32");
  EXPECT_EQ(points[1].label(), "batch_size=32,precision=bf16");
  EXPECT_EQ(points[3].label(), "batch_size=64,precision=bf16");
  for (const auto& p : points) EXPECT_EQ(p.values.at("epochs"), "2");  // fixed keys ride along, not swept
  EXPECT_EQ(points[2].swept.count("epochs"), 0u);
}

TEST(SweepTest, SingleValuesMakeOnePointAndFreeTextKeysAreNotSplit) {
  const auto points = expand_sweep({{"name", "a,b"}, {"batch_size", "8"}}, {"name", "batch_size"});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].values.at("name"), "a,b");
  EXPECT_EQ(points[0].label(), "single");
  EXPECT_THROW(expand_sweep({{"batch_size", "32,,64"}}, {"batch_size"}), std::invalid_argument);
  EXPECT_THROW(expand_sweep({{"batch_size", "32,"}}, {"batch_size"}), std::invalid_argument);
}

TEST(SweepTest, LargestFittingBatchDoublesThenBisects) {
  std::vector<int64_t> probes;
  EXPECT_EQ(largest_fitting_batch([](int64_t b) { return b <= 300; }, 64, 1 << 20, &probes), 300);
  EXPECT_EQ(probes.front(), 64);
  EXPECT_LE(probes.size(), 12u);  // 64,128,256,512 then 8 bisection steps
  EXPECT_EQ(largest_fitting_batch([](int64_t b) { return b <= 5; }, 64, 1024), 5);   // start too big: halve first
  EXPECT_EQ(largest_fitting_batch([](int64_t) { return false; }, 16, 1024), 0);      // nothing fits
  EXPECT_EQ(largest_fitting_batch([](int64_t) { return true; }, 16, 100), 100);      // bounded by the limit
}

TEST(SweepTest, LadderSearchAnswersOnTheLadderWithFewerProbes) {
  EXPECT_EQ(batch_ladder(50), (std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48}));
  EXPECT_EQ(ladder_at_or_below(300), 256);
  EXPECT_EQ(ladder_at_or_below(384), 384);
  EXPECT_EQ(ladder_at_or_below(0), 0);
  std::vector<int64_t> probes;
  EXPECT_EQ(largest_fitting_batch([](int64_t b) { return b <= 300; }, 64, 1 << 20, &probes, BatchGrid::kLadder), 256);
  EXPECT_EQ(probes, (std::vector<int64_t>{64, 128, 256, 512, 384}));
  probes.clear();
  EXPECT_EQ(largest_fitting_batch([](int64_t b) { return b <= 400; }, 100, 1 << 20, &probes, BatchGrid::kLadder), 384);
  EXPECT_EQ(probes.front(), 96);  // the start rounded down to the ladder
  for (int64_t top : {1, 2, 5, 7, 13, 97, 1000, 5000}) {  // every answer is the largest rung that fits
    for (int64_t start : {1, 3, 32, 256, 4096}) {
      EXPECT_EQ(largest_fitting_batch([top](int64_t b) { return b <= top; }, start, 1 << 20, nullptr, BatchGrid::kLadder),
                ladder_at_or_below(top))
          << "top " << top << " start " << start;
      EXPECT_EQ(largest_fitting_batch([top](int64_t b) { return b <= top; }, start, 1 << 20), top);
    }
  }
  EXPECT_EQ(largest_fitting_batch([](int64_t) { return false; }, 16, 1024, nullptr, BatchGrid::kLadder), 0);
  EXPECT_EQ(largest_fitting_batch([](int64_t) { return true; }, 16, 100, nullptr, BatchGrid::kLadder), 96);
}

}  // namespace
}  // namespace gpubench
