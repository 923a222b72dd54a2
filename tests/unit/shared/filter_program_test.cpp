#include "filter_program.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace xref {
namespace {

constexpr uint64_t all_ones = std::numeric_limits<uint64_t>::max();
constexpr uint8_t accept = XREF_FILTER_ACCEPT;
constexpr uint8_t reject = XREF_FILTER_REJECT;
constexpr uint8_t constant_slot = XREF_FILTER_CONSTANT_SLOT;

// x: u64 (slot 0), y: s32 (slot 1), z: u8 (slot 2).
const std::vector<FilterVariable> variables{{"x", false}, {"y", true}, {"z", false}};

FilterProgram lower_ok(std::string_view text) {
  auto parsed = parse_filter(text, variables);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed.ok()) return {};
  auto program = lower_filter(*parsed);
  EXPECT_TRUE(program.ok()) << text << ": " << (program.ok() ? "" : program.error().message);
  return program.ok() ? *program : FilterProgram{};
}

Error lower_error(std::string_view text) {
  auto parsed = parse_filter(text, variables);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed.ok()) return {};
  auto program = lower_filter(*parsed);
  EXPECT_FALSE(program.ok()) << text << " lowered, expected an error";
  return program.ok() ? Error{} : program.error();
}

struct Expected {
  uint8_t lhs_slot;
  uint8_t rhs_slot;
  uint8_t op;
  uint8_t is_signed;
  uint8_t on_true;
  uint8_t on_false;
  uint64_t constant;
};

void expect_instructions(const FilterProgram& program, const std::vector<Expected>& expected) {
  ASSERT_EQ(program.instructions.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("instruction " + std::to_string(i));
    const xref_filter_insn& insn = program.instructions[i];
    EXPECT_EQ(insn.lhs_slot, expected[i].lhs_slot);
    EXPECT_EQ(insn.rhs_slot, expected[i].rhs_slot);
    EXPECT_EQ(insn.op, expected[i].op);
    EXPECT_EQ(insn.is_signed, expected[i].is_signed);
    EXPECT_EQ(insn.on_true, expected[i].on_true);
    EXPECT_EQ(insn.on_false, expected[i].on_false);
    EXPECT_EQ(insn.constant, expected[i].constant);
    EXPECT_EQ(insn.string_slot, 0);  // a number's comparison
    EXPECT_EQ(insn.reserved, 0);
  }
}

// Every target is ACCEPT, REJECT or a later instruction of the program.
void expect_forward_jumps(const FilterProgram& program) {
  const size_t count = program.instructions.size();
  for (size_t i = 0; i < count; ++i) {
    for (uint8_t target : {program.instructions[i].on_true, program.instructions[i].on_false}) {
      const bool special = target == accept || target == reject;
      EXPECT_TRUE(special || (target > i && target < count))
          << "instruction " << i << " jumps to " << int{target} << " in a program of " << count;
    }
  }
}

// Lowering shapes.

TEST(FilterProgram, OneComparison) {
  expect_instructions(lower_ok("x == 7"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, accept, reject, 7}});
  expect_instructions(lower_ok("y < -3"), {{1, constant_slot, XREF_FILTER_OP_LT, 1, accept, reject,
                                            static_cast<uint64_t>(-3)}});
  expect_instructions(lower_ok("z"), {{2, constant_slot, XREF_FILTER_OP_NE, 0, accept, reject, 0}});
}

TEST(FilterProgram, EveryOperatorHasItsOpcode) {
  const struct {
    const char* text;
    uint8_t op;
  } cases[] = {{"x == 1", XREF_FILTER_OP_EQ}, {"x != 1", XREF_FILTER_OP_NE},
               {"x < 1", XREF_FILTER_OP_LT},  {"x <= 1", XREF_FILTER_OP_LE},
               {"x > 1", XREF_FILTER_OP_GT},  {"x >= 1", XREF_FILTER_OP_GE}};
  for (const auto& expected : cases) {
    SCOPED_TRACE(expected.text);
    const FilterProgram program = lower_ok(expected.text);
    ASSERT_EQ(program.instructions.size(), 1u);
    EXPECT_EQ(program.instructions[0].op, expected.op);
  }
}

TEST(FilterProgram, NameAgainstNameUsesTheRightSlot) {
  expect_instructions(lower_ok("x <= y"), {{0, 1, XREF_FILTER_OP_LE, 1, accept, reject, 0}});
  expect_instructions(lower_ok("z > x"), {{2, 0, XREF_FILTER_OP_GT, 0, accept, reject, 0}});
}

TEST(FilterProgram, ConstantOnTheLeftMovesRightWithTheMirroredOperator) {
  expect_instructions(lower_ok("5 < x"),
                      {{0, constant_slot, XREF_FILTER_OP_GT, 0, accept, reject, 5}});
  expect_instructions(lower_ok("5 >= x"),
                      {{0, constant_slot, XREF_FILTER_OP_LE, 0, accept, reject, 5}});
  expect_instructions(lower_ok("-5 == y"), {{1, constant_slot, XREF_FILTER_OP_EQ, 1, accept, reject,
                                             static_cast<uint64_t>(-5)}});
}

TEST(FilterProgram, NotSwapsTheTargets) {
  expect_instructions(lower_ok("!(x == 1)"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, reject, accept, 1}});
  expect_instructions(lower_ok("!!(x == 1)"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, accept, reject, 1}});
}

TEST(FilterProgram, AndShortCircuitsToReject) {
  expect_instructions(lower_ok("x == 1 && y == 2 && z == 3"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, 1, reject, 1},
                       {1, constant_slot, XREF_FILTER_OP_EQ, 1, 2, reject, 2},
                       {2, constant_slot, XREF_FILTER_OP_EQ, 0, accept, reject, 3}});
}

TEST(FilterProgram, OrShortCircuitsToAccept) {
  expect_instructions(lower_ok("x == 1 || z == 3"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, accept, 1, 1},
                       {2, constant_slot, XREF_FILTER_OP_EQ, 0, accept, reject, 3}});
}

TEST(FilterProgram, PrecedenceShapesTheJumps) {
  // x || (y && z): x true accepts, else try y; y false rejects.
  expect_instructions(lower_ok("x || y && z"),
                      {{0, constant_slot, XREF_FILTER_OP_NE, 0, accept, 1, 0},
                       {1, constant_slot, XREF_FILTER_OP_NE, 1, 2, reject, 0},
                       {2, constant_slot, XREF_FILTER_OP_NE, 0, accept, reject, 0}});
  // (x || y) && z: x true skips y and goes to z.
  expect_instructions(lower_ok("(x || y) && z"),
                      {{0, constant_slot, XREF_FILTER_OP_NE, 0, 2, 1, 0},
                       {1, constant_slot, XREF_FILTER_OP_NE, 1, 2, reject, 0},
                       {2, constant_slot, XREF_FILTER_OP_NE, 0, accept, reject, 0}});
  // !(x && y) || z: De Morgan through target swaps.
  expect_instructions(lower_ok("!(x && y) || z"),
                      {{0, constant_slot, XREF_FILTER_OP_NE, 0, 1, accept, 0},
                       {1, constant_slot, XREF_FILTER_OP_NE, 1, 2, accept, 0},
                       {2, constant_slot, XREF_FILTER_OP_NE, 0, accept, reject, 0}});
}

// Folding.

TEST(FilterProgram, ConstantOnlyFiltersFoldAway) {
  EXPECT_TRUE(lower_ok("1 < 2").instructions.empty());
  EXPECT_TRUE(lower_ok("x == 1 || 2 > 1").instructions.empty());
  EXPECT_TRUE(lower_ok("!(0)").instructions.empty());
  expect_instructions(lower_ok("1 > 2"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, reject, reject, 0}});
  expect_instructions(lower_ok("x == 1 && -1 > 1"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, reject, reject, 0}});
  expect_instructions(lower_ok("x == 1 && 2 > 1"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, accept, reject, 1}});
  expect_instructions(lower_ok("0 || !(x == 1) || 0"),
                      {{0, constant_slot, XREF_FILTER_OP_EQ, 0, reject, accept, 1}});
}

TEST(FilterProgram, FoldedProgramsBehaveAsConstants) {
  const std::vector<uint64_t> values{5, 6, 7};
  EXPECT_TRUE(evaluate_program(lower_ok("1 < 2"), values));
  EXPECT_FALSE(evaluate_program(lower_ok("1 > 2"), values));
  EXPECT_FALSE(evaluate_program(lower_ok("1 > 2"), std::vector<uint64_t>{}));
}

TEST(FilterProgram, EmptyProgramAcceptsEverything) {
  EXPECT_TRUE(evaluate_program(FilterProgram{}, std::vector<uint64_t>{}));
  EXPECT_TRUE(evaluate_program(FilterProgram{}, std::vector<uint64_t>{1, 2, 3}));
  const xref_filter_program zeroed{};
  EXPECT_TRUE(evaluate_program(zeroed, std::vector<uint64_t>{}));
}

// The limit.

std::string or_chain(int comparisons) {
  std::string text;
  for (int i = 0; i < comparisons; ++i) text += (i ? " || x == " : "x == ") + std::to_string(i);
  return text;
}

TEST(FilterProgram, ThirtyTwoInstructionsFit) {
  const FilterProgram program = lower_ok(or_chain(32));
  EXPECT_EQ(program.instructions.size(), 32u);
  expect_forward_jumps(program);
  EXPECT_TRUE(evaluate_program(program, std::vector<uint64_t>{31}));
  EXPECT_FALSE(evaluate_program(program, std::vector<uint64_t>{32}));
}

TEST(FilterProgram, ThirtyThreeAreRejectedAtTheFirstComparisonPastTheLimit) {
  const std::string text = or_chain(33);
  const Error error = lower_error(text);
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_EQ(error.message, "filter needs 33 instructions; the limit is 32");
  EXPECT_EQ(error.column, static_cast<int>(text.rfind("x == 32")) + 1);
  EXPECT_FALSE(error.hint.empty());

  const Error nested = lower_error("!(" + or_chain(20) + ") && (" + or_chain(20) + ")");
  EXPECT_EQ(nested.message, "filter needs 40 instructions; the limit is 32");
}

TEST(FilterProgram, FoldedComparisonsDoNotCountTowardTheLimit) {
  const FilterProgram program = lower_ok(or_chain(32) + " || 1 > 2 || 3 == 4 || -1 > 0");
  EXPECT_EQ(program.instructions.size(), 32u);
}

// The evaluator's defences mirror the BPF program's.

xref_filter_program one_instruction(xref_filter_insn insn) {
  xref_filter_program program{};
  program.insn_count = 1;
  program.insns[0] = insn;
  return program;
}

TEST(FilterProgram, MalformedProgramsReject) {
  const std::vector<uint64_t> values{1, 2, 3};
  // Sanity: the well-formed instruction accepts.
  xref_filter_insn good{};
  good.lhs_slot = 0;
  good.rhs_slot = constant_slot;
  good.op = XREF_FILTER_OP_EQ;
  good.on_true = accept;
  good.on_false = reject;
  good.constant = 1;
  EXPECT_TRUE(evaluate_program(one_instruction(good), values));

  xref_filter_insn self_loop = good;
  self_loop.on_true = 0;
  EXPECT_FALSE(evaluate_program(one_instruction(self_loop), values));

  xref_filter_insn past_end = good;
  past_end.on_true = 1;
  EXPECT_FALSE(evaluate_program(one_instruction(past_end), values));

  xref_filter_insn bad_op = good;
  bad_op.op = XREF_FILTER_OP_STR_PREFIX + 1;  // the first op no program has
  EXPECT_FALSE(evaluate_program(one_instruction(bad_op), values));

  xref_filter_insn bad_lhs = good;
  bad_lhs.lhs_slot = XREF_FETCH_MAX_ITEMS;
  EXPECT_FALSE(evaluate_program(one_instruction(bad_lhs), values));

  xref_filter_insn bad_rhs = good;
  bad_rhs.rhs_slot = XREF_FETCH_MAX_ITEMS;
  EXPECT_FALSE(evaluate_program(one_instruction(bad_rhs), values));

  xref_filter_program too_long = one_instruction(good);
  too_long.insn_count = XREF_FILTER_MAX_INSNS + 1;
  EXPECT_FALSE(evaluate_program(too_long, values));

  // Two instructions jumping back and forth: the bound ends it.
  xref_filter_program ping_pong{};
  ping_pong.insn_count = 2;
  ping_pong.insns[0] = good;
  ping_pong.insns[0].on_true = 1;
  ping_pong.insns[1] = good;
  ping_pong.insns[1].on_true = 0;
  EXPECT_FALSE(evaluate_program(ping_pong, values));
}

TEST(FilterProgram, SlotsBeyondTheGivenValuesReadAsZero) {
  EXPECT_TRUE(evaluate_program(lower_ok("z == 0"), std::vector<uint64_t>{9}));
  EXPECT_FALSE(evaluate_program(lower_ok("z == 0"), std::vector<uint64_t>{9, 9, 9}));
}

TEST(FilterProgram, PackingForTheMap) {
  const FilterProgram program = lower_ok("x == 1 || z == 3");
  const xref_filter_program packed = to_bpf_program(program);
  EXPECT_EQ(packed.insn_count, 2u);
  EXPECT_EQ(packed.reserved, 0u);
  EXPECT_EQ(packed.insns[1].lhs_slot, 2);
  EXPECT_EQ(packed.insns[1].constant, 3u);
  EXPECT_EQ(packed.insns[2].on_true, 0);  // unused slots stay zero

  FilterProgram oversized;
  oversized.instructions.resize(XREF_FILTER_MAX_INSNS + 1);
  EXPECT_EQ(to_bpf_program(oversized).insn_count, XREF_FILTER_MAX_INSNS);
  EXPECT_FALSE(evaluate_program(oversized, std::vector<uint64_t>{}));
}

TEST(FilterProgram, SignedAndUnsignedComparisonsInTheProgram) {
  const uint64_t minus_one_s32 = all_ones;  // s32 0xffffffff sign-extended
  EXPECT_TRUE(evaluate_program(lower_ok("y < 0"), std::vector<uint64_t>{0, minus_one_s32, 0}));
  EXPECT_FALSE(evaluate_program(lower_ok("x < 0"), std::vector<uint64_t>{0xffffffff, 0, 0}));
  EXPECT_TRUE(evaluate_program(lower_ok("x < -1 || x > 1"),
                               std::vector<uint64_t>{uint64_t{1} << 63, 0, 0}));
  EXPECT_TRUE(evaluate_program(lower_ok("x > y"),
                               std::vector<uint64_t>{1, all_ones, 0}));  // signed: 1 > -1
  EXPECT_FALSE(
      evaluate_program(lower_ok("x > z"), std::vector<uint64_t>{1, 0, all_ones}));  // unsigned
}

// Property: for generated expressions and values, the flat program agrees
// with the tree evaluator, and both agree with an oracle that evaluates the
// generator's own tree (so parsing, precedence and signedness are checked
// too, not only lowering).

// SplitMix64: deterministic on every platform, unlike std distributions.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }
  size_t below(size_t bound) { return static_cast<size_t>(next() % bound); }
  bool percent(size_t chance) { return below(100) < chance; }

 private:
  uint64_t state_;
};

__extension__ typedef __int128 Wide;

struct GenOperand {
  bool is_constant = false;
  size_t slot = 0;
  uint64_t bits = 0;
  bool negative = false;
  std::string text;
};

struct GenNode {
  enum class Kind { comparison, negation, conjunction, disjunction } kind = Kind::comparison;
  GenOperand lhs;
  GenOperand rhs;
  bool bare = false;  // "x" meaning x != 0
  int op = 0;         // index into op_texts
  std::vector<GenNode> children;
};

const char* const op_texts[] = {"==", "!=", "<", "<=", ">", ">="};

const uint64_t magnitudes[] = {0,
                               1,
                               2,
                               5,
                               0x7f,
                               0x80,
                               0xff,
                               0x7fffffff,
                               0x80000000,
                               0xffffffff,
                               0x100000000,
                               uint64_t{INT64_MAX},
                               uint64_t{1} << 63,
                               all_ones};

class ExpressionGenerator {
 public:
  explicit ExpressionGenerator(Random& random) : random_(random) {}

  GenNode generate(size_t comparison_budget) {
    budget_ = comparison_budget;
    constants_.clear();
    return node(0);
  }
  const std::vector<uint64_t>& constants() const { return constants_; }

  std::string render(const GenNode& n) {
    switch (n.kind) {
      case GenNode::Kind::comparison: {
        if (n.bare) return n.lhs.text;
        return n.lhs.text + space() + op_texts[n.op] + space() + n.rhs.text;
      }
      case GenNode::Kind::negation: {
        // '!' takes a whole comparison ("!x == 1" is "!(x == 1)"), so only
        // a chain under '!' needs parentheses.
        const GenNode& child = n.children[0];
        const bool needs_parens =
            child.kind == GenNode::Kind::conjunction || child.kind == GenNode::Kind::disjunction;
        const std::string inner = render(child);
        return "!" + space() + (needs_parens || random_.percent(50) ? "(" + inner + ")" : inner);
      }
      case GenNode::Kind::conjunction:
      case GenNode::Kind::disjunction: {
        const bool is_and = n.kind == GenNode::Kind::conjunction;
        std::string text;
        for (size_t i = 0; i < n.children.size(); ++i) {
          if (i) text += space() + (is_and ? "&&" : "||") + space();
          const GenNode& child = n.children[i];
          const bool needs_parens = is_and && child.kind == GenNode::Kind::disjunction;
          const std::string inner = render(child);
          text +=
              needs_parens || random_.percent(15) ? "(" + space() + inner + space() + ")" : inner;
        }
        return text;
      }
    }
    return {};
  }

 private:
  GenNode node(int depth) {
    GenNode n;
    if (depth >= 5 || budget_ <= 1 || random_.percent(35)) return comparison();
    const size_t pick = random_.below(10);
    if (pick < 2) {
      n.kind = GenNode::Kind::negation;
      n.children.push_back(node(depth + 1));
      return n;
    }
    n.kind = pick < 6 ? GenNode::Kind::conjunction : GenNode::Kind::disjunction;
    const size_t wanted = 2 + random_.below(3);
    for (size_t i = 0; i < wanted && (i < 2 || budget_ > 0); ++i)
      n.children.push_back(node(depth + 1));
    return n;
  }

  GenNode comparison() {
    if (budget_ > 0) --budget_;
    GenNode n;
    n.lhs = operand(random_.percent(15));
    n.bare = random_.percent(10);
    if (!n.bare) {
      n.op = static_cast<int>(random_.below(6));
      n.rhs = operand(random_.percent(70));
    } else {
      n.op = 1;  // != 0
      n.rhs.is_constant = true;
    }
    return n;
  }

  GenOperand operand(bool constant) {
    GenOperand o;
    if (!constant) {
      o.slot = random_.below(variables.size());
      o.text = variables[o.slot].name;
      return o;
    }
    o.is_constant = true;
    uint64_t magnitude =
        random_.percent(80) ? magnitudes[random_.below(std::size(magnitudes))] : random_.next();
    o.negative = magnitude != 0 && magnitude <= (uint64_t{1} << 63) && random_.percent(30);
    o.bits = o.negative ? 0 - magnitude : magnitude;
    const bool hex = random_.percent(40);
    char digits[32];
    std::snprintf(digits, sizeof(digits), hex ? "0x%llx" : "%llu",
                  static_cast<unsigned long long>(magnitude));
    o.text = (o.negative ? "-" : "") + std::string(digits);
    constants_.push_back(o.bits);
    return o;
  }

  std::string space() { return random_.percent(30) ? "" : random_.percent(80) ? " " : "  "; }

  Random& random_;
  size_t budget_ = 0;
  std::vector<uint64_t> constants_;
};

bool makes_signed(const GenOperand& o) {
  return o.is_constant ? o.negative : variables[o.slot].is_signed;
}

uint64_t value_of(const GenOperand& o, const std::vector<uint64_t>& values) {
  return o.is_constant ? o.bits : values[o.slot];
}

// Compares in 128 bits, where signed and unsigned 64-bit values all fit
// exactly, so no operator table is shared with the code under test.
bool oracle(const GenNode& n, const std::vector<uint64_t>& values) {
  switch (n.kind) {
    case GenNode::Kind::comparison: {
      const bool is_signed = makes_signed(n.lhs) || makes_signed(n.rhs);
      auto widen = [&](uint64_t v) -> Wide {
        return is_signed ? Wide{static_cast<int64_t>(v)} : Wide{v};
      };
      const Wide l = widen(value_of(n.lhs, values));
      const Wide r = widen(value_of(n.rhs, values));
      const Wide difference = l - r;
      switch (n.op) {
        case 0: return difference == 0;
        case 1: return difference != 0;
        case 2: return difference < 0;
        case 3: return difference <= 0;
        case 4: return difference > 0;
        default: return difference >= 0;
      }
    }
    case GenNode::Kind::negation: return !oracle(n.children[0], values);
    case GenNode::Kind::conjunction:
      for (const GenNode& child : n.children) {
        if (!oracle(child, values)) return false;
      }
      return true;
    case GenNode::Kind::disjunction:
      for (const GenNode& child : n.children) {
        if (oracle(child, values)) return true;
      }
      return false;
  }
  return false;
}

size_t comparison_count(const GenNode& n) {
  if (n.kind == GenNode::Kind::comparison) return 1;
  size_t count = 0;
  for (const GenNode& child : n.children) count += comparison_count(child);
  return count;
}

TEST(FilterProgram, LoweredProgramsAgreeWithTheTreeAndAnOracle) {
  Random random(0x5eed'f11e'0000'0001);
  ExpressionGenerator generator(random);
  const uint64_t boundaries[] = {0,
                                 1,
                                 2,
                                 all_ones,
                                 all_ones - 1,
                                 uint64_t{INT64_MAX},
                                 uint64_t{1} << 63,
                                 0x7fffffff,
                                 0x80000000,
                                 0xffffffff,
                                 0x7f,
                                 0x80,
                                 0xff,
                                 5,
                                 static_cast<uint64_t>(-5)};
  constexpr int expression_count = 2000;
  constexpr int value_tuples_per_expression = 40;
  int accepted = 0, rejected = 0, folded = 0, accept_all = 0, reject_all = 0, longest = 0;

  for (int e = 0; e < expression_count; ++e) {
    const GenNode generated = generator.generate(1 + random.below(filter_max_instructions));
    const std::string text = generator.render(generated);
    SCOPED_TRACE(text);
    auto parsed = parse_filter(text, variables);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message << " at column " << parsed.error().column;
    auto lowered = lower_filter(*parsed);
    ASSERT_TRUE(lowered.ok()) << lowered.error().message;
    const FilterProgram& program = *lowered;
    ASSERT_LE(program.instructions.size(), filter_max_instructions);
    ASSERT_LE(program.instructions.size(), comparison_count(generated));
    expect_forward_jumps(program);
    for (const xref_filter_insn& insn : program.instructions) {
      EXPECT_LT(insn.lhs_slot, variables.size());
      EXPECT_TRUE(insn.rhs_slot == constant_slot || insn.rhs_slot < variables.size());
      EXPECT_LE(insn.op, XREF_FILTER_OP_GE);
    }
    if (program.instructions.size() < comparison_count(generated)) ++folded;
    if (program.instructions.empty()) ++accept_all;
    if (program.instructions.size() == 1 && program.instructions[0].on_true == reject &&
        program.instructions[0].on_false == reject) {
      ++reject_all;
    }
    longest = std::max(longest, static_cast<int>(program.instructions.size()));

    const xref_filter_program packed = to_bpf_program(program);
    auto reparsed = parse_filter(to_string(*parsed), variables);
    ASSERT_TRUE(reparsed.ok()) << to_string(*parsed);

    // Values from the boundaries, from the expression's constants and their
    // neighbours (so == and < flip), and random.
    std::vector<uint64_t> pool(std::begin(boundaries), std::end(boundaries));
    for (uint64_t constant : generator.constants()) {
      pool.insert(pool.end(), {constant, constant + 1, constant - 1});
    }
    for (int t = 0; t < value_tuples_per_expression; ++t) {
      std::vector<uint64_t> values(variables.size());
      for (uint64_t& value : values)
        value = random.percent(85) ? pool[random.below(pool.size())] : random.next();
      const bool expected = oracle(generated, values);
      const bool by_tree = evaluate_filter(*parsed, values);
      const bool by_program = evaluate_program(packed, values);
      ASSERT_EQ(by_tree, expected)
          << "values " << values[0] << ", " << values[1] << ", " << values[2];
      ASSERT_EQ(by_program, expected)
          << "values " << values[0] << ", " << values[1] << ", " << values[2];
      ASSERT_EQ(evaluate_filter(*reparsed, values), expected) << to_string(*parsed);
      (expected ? accepted : rejected)++;
    }
  }
  // The generator must exercise both outcomes, folding, both constant
  // programs and programs near the limit, or the agreement above means little.
  const int total = expression_count * value_tuples_per_expression;
  EXPECT_GT(accepted, total / 10);
  EXPECT_GT(rejected, total / 10);
  EXPECT_GT(folded, expression_count / 20);
  EXPECT_GT(accept_all, 0);
  EXPECT_GT(reject_all, 0);
  EXPECT_GE(longest, 20);
}

}  // namespace
}  // namespace xref
