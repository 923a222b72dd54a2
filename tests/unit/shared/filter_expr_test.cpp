#include "filter_expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "parse_error_render.h"

namespace xref {
namespace {

constexpr uint64_t all_ones = std::numeric_limits<uint64_t>::max();

// Slots: asset 0 (u64), op 1 (s32), amount 2 (u64), a 3, b 4, c 5 (u64),
// flag 6 (u8), s 7 (s32), u 8 (u32).
const std::vector<FilterVariable>& variables() {
  static const std::vector<FilterVariable> list = filter_variables(*parse_fetch_spec(
      "asset=+16(%dx):u64,op=+40(%sp):s32,amount=%r8,a=%r9,b=%r10,c=%r11,flag=%ax:u8,"
      "s=%si:s32,u=%di:u32"));
  return list;
}

enum Slot : size_t { asset, op, amount, a, b, c, flag, s, u, slot_count };

FilterNode parse_ok(std::string_view text) {
  auto parsed = parse_filter(text, variables());
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : FilterNode{};
}

Error parse_error(std::string_view text) {
  auto parsed = parse_filter(text, variables());
  EXPECT_FALSE(parsed.ok()) << text << " parsed, expected an error";
  return parsed.ok() ? Error{} : parsed.error();
}

struct Values {
  std::vector<uint64_t> slots = std::vector<uint64_t>(slot_count, 0);
  Values& set(Slot slot, uint64_t value) {
    slots[slot] = value;
    return *this;
  }
};

bool holds(std::string_view text, const Values& values) {
  return evaluate_filter(parse_ok(text), values.slots);
}

TEST(FilterExpr, VariablesComeFromTheFetchSpecInOrder) {
  ASSERT_EQ(variables().size(), slot_count);
  EXPECT_EQ(variables()[asset].name, "asset");
  EXPECT_FALSE(variables()[asset].is_signed);
  EXPECT_TRUE(variables()[op].is_signed);
  EXPECT_EQ(variables()[u].name, "u");
  EXPECT_FALSE(variables()[u].is_signed);
}

// The brief's examples.

TEST(FilterExpr, ThresholdOnOneName) {
  const FilterNode node = parse_ok("asset >= 100000000");
  ASSERT_EQ(node.kind, FilterNode::Kind::comparison);
  EXPECT_EQ(node.comparison.lhs.slot, asset);
  EXPECT_EQ(node.comparison.op, CompareOp::greater_equal);
  EXPECT_TRUE(node.comparison.rhs.is_constant);
  EXPECT_EQ(node.comparison.rhs.constant, 100000000u);
  EXPECT_FALSE(node.comparison.is_signed);
  EXPECT_EQ(node.comparison.column, 1);
  EXPECT_TRUE(holds("asset >= 100000000", Values().set(asset, 100000000)));
  EXPECT_FALSE(holds("asset >= 100000000", Values().set(asset, 99999999)));
}

TEST(FilterExpr, ConjunctionOfTwoComparisons) {
  const FilterNode node = parse_ok("op == 1 && amount > 0");
  ASSERT_EQ(node.kind, FilterNode::Kind::logical_and);
  ASSERT_EQ(node.children.size(), 2u);
  EXPECT_EQ(node.children[1].comparison.column, 12);
  EXPECT_TRUE(holds("op == 1 && amount > 0", Values().set(op, 1).set(amount, 5)));
  EXPECT_FALSE(holds("op == 1 && amount > 0", Values().set(op, 1).set(amount, 0)));
  EXPECT_FALSE(holds("op == 1 && amount > 0", Values().set(op, 2).set(amount, 5)));
}

TEST(FilterExpr, NegationHexAndNegativeConstant) {
  const std::string text = "!(a == 0x10) || b < -5";
  const FilterNode node = parse_ok(text);
  EXPECT_EQ(to_string(node), "!(a == 16) || b < -5");
  ASSERT_EQ(node.kind, FilterNode::Kind::logical_or);
  EXPECT_EQ(node.children[0].kind, FilterNode::Kind::logical_not);
  // b is unsigned, but the negative constant makes the comparison signed.
  EXPECT_TRUE(node.children[1].comparison.is_signed);
  EXPECT_TRUE(node.children[1].comparison.rhs.negative);
  EXPECT_EQ(node.children[1].comparison.rhs.constant, static_cast<uint64_t>(-5));

  EXPECT_TRUE(holds(text, Values().set(a, 0x11)));
  EXPECT_FALSE(holds(text, Values().set(a, 0x10).set(b, 0)));
  EXPECT_TRUE(holds(text, Values().set(a, 0x10).set(b, static_cast<uint64_t>(-6))));
  EXPECT_FALSE(holds(text, Values().set(a, 0x10).set(b, static_cast<uint64_t>(-5))));
}

TEST(FilterExpr, BareNameMeansNotZero) {
  const FilterNode node = parse_ok("flag");
  ASSERT_EQ(node.kind, FilterNode::Kind::comparison);
  EXPECT_EQ(node.comparison.op, CompareOp::not_equal);
  EXPECT_TRUE(node.comparison.rhs.is_constant);
  EXPECT_EQ(node.comparison.rhs.constant, 0u);
  EXPECT_EQ(to_string(node), "flag != 0");
  EXPECT_TRUE(holds("flag", Values().set(flag, 1)));
  EXPECT_FALSE(holds("flag", Values().set(flag, 0)));
  EXPECT_TRUE(holds("!flag", Values().set(flag, 0)));
}

// Structure.

TEST(FilterExpr, AndBindsTighterThanOr) {
  EXPECT_EQ(to_string(parse_ok("a || b && c")), "a != 0 || (b != 0 && c != 0)");
  EXPECT_EQ(to_string(parse_ok("a && b || c")), "(a != 0 && b != 0) || c != 0");
  for (int bits = 0; bits < 8; ++bits) {
    const bool va = bits & 1, vb = bits & 2, vc = bits & 4;
    const Values values = Values().set(a, va).set(b, vb).set(c, vc);
    SCOPED_TRACE(bits);
    EXPECT_EQ(holds("a || b && c", values), va || (vb && vc));
    EXPECT_EQ(holds("a && b || c", values), (va && vb) || vc);
    EXPECT_EQ(holds("(a || b) && c", values), (va || vb) && vc);
    EXPECT_EQ(holds("!a && b", values), !va && vb);
    EXPECT_EQ(holds("!(a && b)", values), !(va && vb));
    EXPECT_EQ(holds("!!a", values), va);
  }
}

TEST(FilterExpr, ChainsCollectAllOperandsInOneNode) {
  const FilterNode chain = parse_ok("a || b || c || flag");
  ASSERT_EQ(chain.kind, FilterNode::Kind::logical_or);
  EXPECT_EQ(chain.children.size(), 4u);
  const FilterNode grouped = parse_ok("(a || b) || c");
  ASSERT_EQ(grouped.kind, FilterNode::Kind::logical_or);
  EXPECT_EQ(grouped.children.size(), 2u);
  EXPECT_EQ(grouped.children[0].kind, FilterNode::Kind::logical_or);
}

TEST(FilterExpr, RedundantParenthesesChangeNothing) {
  EXPECT_EQ(to_string(parse_ok("((a == 1))")), "a == 1");
  EXPECT_EQ(to_string(parse_ok("(a) && ((b))")), "a != 0 && b != 0");
}

TEST(FilterExpr, NameAgainstNameAndConstantOnTheLeft) {
  const FilterNode names = parse_ok("a < b");
  EXPECT_FALSE(names.comparison.rhs.is_constant);
  EXPECT_EQ(names.comparison.rhs.slot, b);
  EXPECT_TRUE(holds("a < b", Values().set(a, 1).set(b, 2)));
  EXPECT_FALSE(holds("a < b", Values().set(a, 2).set(b, 2)));
  EXPECT_TRUE(holds("5 < a", Values().set(a, 6)));
  EXPECT_FALSE(holds("5 < a", Values().set(a, 5)));
}

TEST(FilterExpr, EveryOperator) {
  const struct {
    const char* text;
    bool at_4, at_5, at_6;
  } cases[] = {
      {"a == 5", false, true, false}, {"a != 5", true, false, true}, {"a < 5", true, false, false},
      {"a <= 5", true, true, false},  {"a > 5", false, false, true}, {"a >= 5", false, true, true},
  };
  for (const auto& expected : cases) {
    SCOPED_TRACE(expected.text);
    EXPECT_EQ(holds(expected.text, Values().set(a, 4)), expected.at_4);
    EXPECT_EQ(holds(expected.text, Values().set(a, 5)), expected.at_5);
    EXPECT_EQ(holds(expected.text, Values().set(a, 6)), expected.at_6);
  }
}

TEST(FilterExpr, WhitespaceAnywhereOrNowhere) {
  EXPECT_EQ(to_string(parse_ok(" \t(a==1)&&!b||c>=-2\n")), "(a == 1 && !(b != 0)) || c >= -2");
  EXPECT_EQ(to_string(parse_ok("a==-1")), "a == -1");
}

TEST(FilterExpr, NumberForms) {
  EXPECT_EQ(parse_ok("a == 0xFFFFFFFFFFFFFFFF").comparison.rhs.constant, all_ones);
  EXPECT_EQ(parse_ok("a == 18446744073709551615").comparison.rhs.constant, all_ones);
  EXPECT_EQ(parse_ok("a == -9223372036854775808").comparison.rhs.constant, uint64_t{1} << 63);
  EXPECT_EQ(parse_ok("a == -0x10").comparison.rhs.constant, static_cast<uint64_t>(-16));
  // "-0" is zero, not a negative number, so it does not make the comparison signed.
  EXPECT_FALSE(parse_ok("a < -0").comparison.is_signed);
}

// Signedness.

TEST(FilterExpr, SignedFetchComparesSigned) {
  const uint64_t minus_one_s32 = extend_fetched_value(0xffffffff, FetchType{4, true, false});
  const uint64_t max_u32 = extend_fetched_value(0xffffffff, FetchType{4, false, false});
  EXPECT_EQ(minus_one_s32, all_ones);
  EXPECT_TRUE(parse_ok("s < 0").comparison.is_signed);
  EXPECT_FALSE(parse_ok("u < 0").comparison.is_signed);
  EXPECT_TRUE(holds("s < 0", Values().set(s, minus_one_s32)));
  EXPECT_FALSE(holds("u < 0", Values().set(u, max_u32)));
  EXPECT_TRUE(holds("u > 0x7fffffff", Values().set(u, max_u32)));
  EXPECT_TRUE(holds("s == -1", Values().set(s, minus_one_s32)));
}

TEST(FilterExpr, SignednessRule) {
  EXPECT_FALSE(parse_ok("a < b").comparison.is_signed);  // both unsigned
  EXPECT_TRUE(parse_ok("a < s").comparison.is_signed);   // a signed fetch on the right
  EXPECT_TRUE(parse_ok("s < a").comparison.is_signed);   // ... or on the left
  EXPECT_TRUE(parse_ok("-1 < a").comparison.is_signed);  // a negative constant
  EXPECT_FALSE(parse_ok("a < 0xffffffffffffffff").comparison.is_signed);
  EXPECT_TRUE(parse_ok("s").comparison.is_signed);

  // The same bits compare differently: all ones is -1 signed, the maximum unsigned.
  EXPECT_FALSE(holds("a < b", Values().set(a, all_ones).set(b, 1)));
  EXPECT_TRUE(holds("a < s", Values().set(a, all_ones).set(s, 1)));
  EXPECT_FALSE(holds("a < -0", Values().set(a, 5)));             // unsigned: nothing is below 0
  EXPECT_FALSE(holds("a > -2", Values().set(a, all_ones - 5)));  // signed: -6 > -2 is false
  EXPECT_TRUE(holds("a > 2", Values().set(a, all_ones - 5)));    // unsigned: huge > 2
}

TEST(FilterExpr, ConstantOnlyComparisonsAreAllowed) {
  const FilterNode node = parse_ok("1 < 2");
  EXPECT_TRUE(node.comparison.lhs.is_constant);
  EXPECT_TRUE(evaluate_filter(node, {}));
  EXPECT_FALSE(evaluate_filter(parse_ok("2 < 1"), {}));
  EXPECT_TRUE(evaluate_filter(parse_ok("-1 < 1"), {}));  // signed: a negative constant
  EXPECT_TRUE(evaluate_filter(parse_ok("0xffffffffffffffff > 1"), {}));  // unsigned
  EXPECT_TRUE(evaluate_filter(parse_ok("0xffffffffffffffff == -1"), {}));
  EXPECT_TRUE(evaluate_filter(parse_ok("7"), {}));
  EXPECT_FALSE(evaluate_filter(parse_ok("0"), {}));
}

TEST(FilterExpr, MissingValuesReadAsZero) {
  EXPECT_TRUE(evaluate_filter(parse_ok("u == 0"), std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(evaluate_filter(parse_ok("b"), std::vector<uint64_t>{}));
}

TEST(FilterExpr, CompareValuesSignedAndUnsigned) {
  EXPECT_TRUE(compare_values(all_ones, CompareOp::less, 0, true));
  EXPECT_FALSE(compare_values(all_ones, CompareOp::less, 0, false));
  EXPECT_TRUE(compare_values(uint64_t{1} << 63, CompareOp::less_equal, uint64_t{1} << 62, true));
  EXPECT_TRUE(
      compare_values(uint64_t{1} << 63, CompareOp::greater_equal, uint64_t{1} << 62, false));
  EXPECT_TRUE(compare_values(3, CompareOp::equal, 3, true));
  EXPECT_TRUE(compare_values(3, CompareOp::not_equal, 4, false));
}

TEST(FilterExpr, RenderedTextParsesBackToTheSameMeaning) {
  for (const char* text :
       {"asset >= 100000000", "op == 1 && amount > 0", "!(a == 0x10) || b < -5", "flag",
        "a || b && c", "!(a && (b || !c)) && s >= -9223372036854775808", "3 > a"}) {
    SCOPED_TRACE(text);
    const std::string rendered = to_string(parse_ok(text));
    EXPECT_EQ(to_string(parse_ok(rendered)), rendered);
  }
}

// Errors: code, exact column, what went wrong.

struct ErrorCase {
  const char* text;
  int column;
  const char* message_part;
};

TEST(FilterExpr, ErrorsPointAtTheOffendingToken) {
  const ErrorCase cases[] = {
      {"assett >= 1", 1,
       "unknown name 'assett'; the fetches are: asset, op, amount, a, b, c, flag, s, u"},
      {"asset >= 1 && opp == 2", 15, "unknown name 'opp'"},
      {"a == zz", 6, "unknown name 'zz'"},
      {"", 1, "empty filter expression"},
      {"  \t ", 1, "empty filter expression"},
      {"a ==", 5, "expected a name, a number, '!' or '(' but found the end of the expression"},
      {"a == && b", 6, "expected a name, a number, '!' or '(' but found '&&'"},
      {"&& a", 1, "expected a name, a number, '!' or '(' but found '&&'"},
      {"a && ", 6, "expected a name, a number, '!' or '(' but found the end of the expression"},
      {"()", 2, "expected a name, a number, '!' or '(' but found ')'"},
      {"!", 2, "expected a name, a number, '!' or '(' but found the end of the expression"},
      {"(a == 1", 8,
       "unbalanced parenthesis: expected ')' to close the '(' at column 1 but found the end"},
      {"a && (b || (c)", 15, "unbalanced parenthesis: expected ')' to close the '(' at column 6"},
      {"(a b)", 4,
       "unbalanced parenthesis: expected ')' to close the '(' at column 1 but found 'b'"},
      {"a == 1)", 7, "unbalanced parenthesis: ')' without a matching '('"},
      {"a == 1 b", 8, "expected '&&', '||' or the end of the expression but found 'b'"},
      {"a 5", 3, "expected '&&', '||' or the end of the expression but found '5'"},
      {"a-5", 2, "expected '&&', '||' or the end of the expression but found '-5'"},
      {"a < b < c", 7, "comparisons do not chain"},
      {"a = 1", 3, "unexpected '='; compare with '=='"},
      {"a & b", 3, "unexpected '&'; write '&&'"},
      {"a | b", 3, "unexpected '|'; write '||'"},
      {"a $ b", 3, "unexpected character '$'"},
      {"a == - 5", 6, "expected a digit right after '-'"},
      {"a == 18446744073709551616", 25, "number '18446744073709551616': does not fit in 64 bits"},
      {"a == -9223372036854775809", 6, "does not fit in a signed 64-bit value"},
      {"a == 0x1g", 9, "number '0x1g': unexpected character 'g'"},
      {"a == 12ab", 8, "unexpected character 'a'"},
      // The leftmost mistake wins, even when a later token cannot be lexed.
      {"== 0x1g", 1, "expected a name, a number, '!' or '(' but found '=='"},
      {"zz == 0x1g", 1, "unknown name 'zz'"},
  };
  for (const ErrorCase& expected : cases) {
    SCOPED_TRACE(expected.text);
    const Error error = parse_error(expected.text);
    EXPECT_EQ(error.code, ErrorCode::invalid_argument);
    EXPECT_EQ(error.column, expected.column);
    EXPECT_NE(error.message.find(expected.message_part), std::string::npos) << error.message;
    EXPECT_FALSE(error.hint.empty());
  }
}

TEST(FilterExpr, UnknownNameMessageListsTheFetches) {
  const std::vector<FilterVariable> two{{"asset", false}, {"op", true}};
  auto parsed = parse_filter("asset > 0 && assett == 1", two);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message, "unknown name 'assett'; the fetches are: asset, op");
  EXPECT_EQ(parsed.error().column, 14);

  auto none = parse_filter("x", std::vector<FilterVariable>{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "unknown name 'x'; there are no fetches");
}

TEST(FilterExpr, OnlyTheFirstSixteenVariablesAreAddressable) {
  std::vector<FilterVariable> many;
  for (int i = 0; i < 20; ++i) many.push_back({"v" + std::to_string(i), false});
  EXPECT_TRUE(parse_filter("v15 == 1", many).ok());
  auto beyond = parse_filter("v0 == 1 || v16 == 1", many);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.error().column, 12);
}

TEST(FilterExpr, NestingIsBounded) {
  const std::string deepest = std::string(filter_max_nesting, '!') + "a";
  EXPECT_TRUE(parse_filter(deepest, variables()).ok());
  const std::string too_deep =
      std::string(filter_max_nesting + 1, '(') + "a" + std::string(filter_max_nesting + 1, ')');
  const Error error = parse_error(too_deep);
  EXPECT_EQ(error.column, filter_max_nesting + 1);
  EXPECT_NE(error.message.find("deeper than 64"), std::string::npos) << error.message;
}

TEST(FilterExpr, LongChainsStayFlat) {
  // 10000 operands in one '||' chain: one node, so no pass recurses 10000 deep.
  std::string text = "a == 0";
  for (int i = 1; i < 10000; ++i) text += " || a == " + std::to_string(i);
  const FilterNode node = parse_ok(text);
  EXPECT_EQ(node.children.size(), 10000u);
  EXPECT_TRUE(evaluate_filter(node, Values().set(a, 9999).slots));
  EXPECT_FALSE(evaluate_filter(node, Values().set(a, 10000).slots));
}

TEST(FilterExpr, ErrorRendersWithACaret) {
  const std::string text = "asset > 0 && assett == 1";
  EXPECT_EQ(render_parse_error("filter", text, parse_error(text)),
            "filter: unknown name 'assett'; the fetches are: asset, op, amount, a, b, c, flag, s, "
            "u (column 14)\n"
            "  asset > 0 && assett == 1\n"
            "               ^");
}

TEST(FilterExpr, AnUnprintableCharacterIsNamedByItsValue) {
  const Error error = parse_error("a == 1 \x7f");
  EXPECT_EQ(error.column, 8);
  EXPECT_EQ(error.message, "unexpected character byte 0x7f");
}

}  // namespace
}  // namespace xref
