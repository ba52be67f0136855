#include <gtest/gtest.h>

#include <stdexcept>

#include "gpubench/core/check.hpp"

namespace gpubench {
namespace {

TEST(CheckTest, ABrokenInvariantNamesItsFileLineAndCondition) {
  const int line = __LINE__ + 2;
  try {
    GPUBENCH_CHECK(1 + 1 == 3, "arithmetic");
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("tests/core/check_test.cpp:" + std::to_string(line)), std::string::npos) << m;
    EXPECT_EQ(m.find("/work/"), std::string::npos) << m;  // relative to the source tree, not this machine's path
    EXPECT_NE(m.find("1 + 1 == 3 does not hold (arithmetic)"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(GPUBENCH_CHECK(2 > 1, ""));
}

}  // namespace
}  // namespace gpubench
