// test_error_metrics: the suite's error measures fail on NaN and infinity instead of reporting 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/error_metrics.h"

namespace {

TEST(ErrorMetrics, MeasureTheLargestDifference) {
  const std::vector<float> a = {1.0f, 4.0f, 0.5f}, b = {1.0f, 2.0f, 0.25f};
  EXPECT_DOUBLE_EQ(testutil::max_abs_err(a.data(), b.data(), 3), 2.0);
  EXPECT_DOUBLE_EQ(testutil::max_rel_err(a, b), 0.5);  // |4 - 2| / 4
  EXPECT_DOUBLE_EQ(testutil::max_rel_err(a, a), 0.0);
}

TEST(ErrorMetrics, NanInfinityAndSizeMismatchAreFailures) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ref = {1.0f, 2.0f}, with_nan = {nan, nan}, with_inf = {1.0f, inf};
  EXPECT_EQ(testutil::max_rel_err(with_nan, ref), HUGE_VAL);
  EXPECT_EQ(testutil::max_abs_err(with_nan.data(), ref.data(), 2), HUGE_VAL);
  EXPECT_EQ(testutil::max_rel_err(with_inf, ref), HUGE_VAL);
  EXPECT_EQ(testutil::max_rel_err(ref, std::vector<float>{1.0f}), HUGE_VAL);
  EXPECT_EQ(testutil::max_rel_err(std::vector<float>{}, std::vector<float>{}), HUGE_VAL);
}

// The building block every measure (and every hand-written loop of the suite) folds with.
TEST(ErrorMetrics, WorseErrKeepsTheLargerAndNeverForgetsANan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(testutil::worse_err(0.1, 0.2), 0.2);
  EXPECT_EQ(testutil::worse_err(0.2, 0.1), 0.2);
  EXPECT_EQ(testutil::worse_err(0.1, nan), HUGE_VAL);
  EXPECT_EQ(testutil::worse_err(nan, 0.1), HUGE_VAL);
  EXPECT_EQ(testutil::worse_err(testutil::worse_err(0.0, nan), 0.5), HUGE_VAL) << "a NaN earlier in the fold";
  EXPECT_EQ(testutil::worse_err(0.0, HUGE_VAL), HUGE_VAL);
}

// One NaN among finite values (not only an all-NaN output) fails the measure.
TEST(ErrorMetrics, ASingleNanAmongGoodValuesFails) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> ref = {1.0f, 2.0f, 3.0f}, one_nan = {1.0f, nan, 3.0f};
  EXPECT_EQ(testutil::max_abs_err(one_nan.data(), ref.data(), 3), HUGE_VAL);
  EXPECT_EQ(testutil::max_rel_err(one_nan, ref), HUGE_VAL);
  EXPECT_EQ(testutil::max_rel_err(ref, one_nan), HUGE_VAL);
}

}  // namespace
