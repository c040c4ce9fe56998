// test_parse_int: src/parse_int.h, the strict decimal reader behind ./launch's counts and ports,
// the rank environment (rank_env, torchrun_env), hostfile slots and the agent's status lines.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "src/parse_int.h"

namespace {

IntText read(const std::string& s, IntSign sign, long long lo, long long hi, long long* out) {
  return parse_decimal(s, sign, lo, hi, out);
}

}  // namespace

TEST(ParseDecimal, DigitsOnlyInRange) {
  long long x = -7;
  EXPECT_EQ(read("0", IntSign::kNone, 0, 10, &x), IntText::kOk);
  EXPECT_EQ(x, 0);
  EXPECT_EQ(read("0010", IntSign::kNone, 0, 10, &x), IntText::kOk);
  EXPECT_EQ(x, 10);
  EXPECT_EQ(read("9223372036854775807", IntSign::kNone, 0, LLONG_MAX, &x), IntText::kOk);
  EXPECT_EQ(x, LLONG_MAX);
}

TEST(ParseDecimal, RefusesEverythingElseAndLeavesOutAlone) {
  long long x = 42;
  EXPECT_EQ(read("", IntSign::kPlusOrMinus, 0, 10, &x), IntText::kEmpty);
  for (const char* bad : {" 1", "1 ", "1x", "0x1", "1.0", "--1", "+-1", "-", "+", "\t1", "1\n", "１"})
    EXPECT_EQ(read(bad, IntSign::kPlusOrMinus, -10, 10, &x), IntText::kNotDigits) << bad;
  EXPECT_EQ(read("-1", IntSign::kNone, -10, 10, &x), IntText::kNotDigits);   // no sign allowed
  EXPECT_EQ(read("+1", IntSign::kMinus, -10, 10, &x), IntText::kNotDigits);  // '-' only
  EXPECT_EQ(read(std::string("1\0", 2), IntSign::kNone, 0, 10, &x), IntText::kNotDigits);
  EXPECT_EQ(x, 42);
}

TEST(ParseDecimal, SignsAndRange) {
  long long x = 0;
  EXPECT_EQ(read("-5", IntSign::kMinus, -10, 10, &x), IntText::kOk);
  EXPECT_EQ(x, -5);
  EXPECT_EQ(read("+5", IntSign::kPlusOrMinus, -10, 10, &x), IntText::kOk);
  EXPECT_EQ(x, 5);
  EXPECT_EQ(read("11", IntSign::kNone, 0, 10, &x), IntText::kOutOfRange);
  EXPECT_EQ(read("-11", IntSign::kMinus, -10, 10, &x), IntText::kOutOfRange);
  EXPECT_EQ(read("0", IntSign::kNone, 1, 10, &x), IntText::kOutOfRange);
  EXPECT_EQ(read("99999999999999999999", IntSign::kNone, 0, LLONG_MAX, &x), IntText::kOutOfRange);
  EXPECT_EQ(read("-99999999999999999999", IntSign::kMinus, LLONG_MIN, 0, &x), IntText::kOutOfRange);
  EXPECT_EQ(x, 5);
}

TEST(ParseDecimal, IntResult) {
  int n = 3;
  EXPECT_TRUE(parse_decimal_int("2147483647", IntSign::kNone, 0, INT_MAX, &n));
  EXPECT_EQ(n, INT_MAX);
  EXPECT_FALSE(parse_decimal_int("2147483648", IntSign::kNone, 0, INT_MAX, &n));
  EXPECT_FALSE(parse_decimal_int("x", IntSign::kNone, 0, INT_MAX, &n));
  EXPECT_EQ(n, INT_MAX);
}
