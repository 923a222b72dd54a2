#include "number_parse.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

TEST(NumberParse, DecimalAndHex) {
  EXPECT_EQ(*parse_u64("0", "value"), 0u);
  EXPECT_EQ(*parse_u64("1234", "value"), 1234u);
  EXPECT_EQ(*parse_u64("0x2c5e3c0", "address"), 0x2c5e3c0u);
  EXPECT_EQ(*parse_u64("0XFFFFFFFFFFFFFFFF", "address"), 0xffffffffffffffffull);
}

TEST(NumberParse, ErrorsCarryTheColumn) {
  auto bad = parse_u64("0x12g4", "address", 5);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(bad.error().column, 9);  // "0x12g4" starting at column 5: g is the 5th character
  EXPECT_NE(bad.error().message.find("'g'"), std::string::npos);

  auto overflow = parse_u64("18446744073709551616", "value");
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.error().message.find("64 bits"), std::string::npos);

  EXPECT_FALSE(parse_u64("", "value"));
  EXPECT_FALSE(parse_u64("0x", "value"));
  EXPECT_FALSE(parse_u64("-1", "value"));
  EXPECT_FALSE(parse_u64("12 ", "value"));
}

TEST(NumberParse, SignedBounds) {
  EXPECT_EQ(*parse_i64("-8", "offset"), -8);
  EXPECT_EQ(*parse_i64("-0x8000000000000000", "offset"), INT64_MIN);
  EXPECT_EQ(*parse_i64("0x7fffffffffffffff", "offset"), INT64_MAX);
  EXPECT_FALSE(parse_i64("0x8000000000000000", "offset"));
  EXPECT_FALSE(parse_i64("-", "offset"));
}

}  // namespace
}  // namespace xref
