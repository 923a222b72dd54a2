#include "fetch_spec.h"

#include <asm/ptrace.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "parse_error_render.h"

namespace xref {
namespace {

constexpr FetchType u8{1, false, false};
constexpr FetchType u32{4, false, false};
constexpr FetchType u64{8, false, false};
constexpr FetchType s32{4, true, false};
constexpr FetchType x64{8, false, true};

std::vector<FetchItem> parse_ok(std::string_view spec) {
  auto parsed = parse_fetch_spec(spec);
  EXPECT_TRUE(parsed.ok()) << spec << ": " << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : std::vector<FetchItem>{};
}

FetchItem parse_one(std::string_view spec) {
  auto items = parse_ok(spec);
  EXPECT_EQ(items.size(), 1u) << spec;
  return items.empty() ? FetchItem{} : items.front();
}

Error parse_error(std::string_view spec) {
  auto parsed = parse_fetch_spec(spec);
  EXPECT_FALSE(parsed.ok()) << spec << " parsed, expected an error";
  return parsed.ok() ? Error{} : parsed.error();
}

// The brief's examples, field by field.

TEST(FetchSpec, RegisterListWithTypes) {
  auto items = parse_ok("amount=%r8:u64,price=%r9:u64,debit=%cx:u64");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0], (FetchItem{"amount", Register::r8, {}, u64, std::nullopt, 1}));
  EXPECT_EQ(items[1], (FetchItem{"price", Register::r9, {}, u64, std::nullopt, 1}));
  EXPECT_EQ(items[2], (FetchItem{"debit", Register::cx, {}, u64, std::nullopt, 1}));
}

TEST(FetchSpec, SingleDereference) {
  EXPECT_EQ(parse_one("asset=+16(%dx):u64"), (FetchItem{"asset", Register::dx, {16}, u64, std::nullopt, 1}));
  EXPECT_EQ(parse_one("op=+40(%sp):s32"), (FetchItem{"op", Register::sp, {40}, s32, std::nullopt, 1}));
}

TEST(FetchSpec, NegativeOffsetAndDefaultType) {
  EXPECT_EQ(parse_one("x=-8(%sp)"), (FetchItem{"x", Register::sp, {-8}, u64, std::nullopt, 1}));
}

TEST(FetchSpec, NestedDereferencesAreInnermostFirst) {
  EXPECT_EQ(parse_one("v=+8(+16(%di)):u32"), (FetchItem{"v", Register::di, {16, 8}, u32, std::nullopt, 1}));
  EXPECT_EQ(parse_one("deep=+1(-2(+3(-4(%r15)))):u8"),
            (FetchItem{"deep", Register::r15, {-4, 3, -2, 1}, u8, std::nullopt, 1}));
}

TEST(FetchSpec, HexOffsetAndAliasRegister) {
  EXPECT_EQ(parse_one("p=+0x30(%rcx):x64"), (FetchItem{"p", Register::cx, {0x30}, x64, std::nullopt, 1}));
  EXPECT_EQ(parse_one("p=-0X1F(%rbp)").deref_offsets, std::vector<int32_t>{-0x1f});
}

TEST(FetchSpec, OffsetWithoutSignMeansPlus) {
  EXPECT_EQ(parse_one("a=16(%dx)").deref_offsets, std::vector<int32_t>{16});
  EXPECT_EQ(parse_one("a=0x10(%dx)").deref_offsets, std::vector<int32_t>{16});
  EXPECT_EQ(parse_one("a=0(%dx)").deref_offsets, std::vector<int32_t>{0});
}

TEST(FetchSpec, OffsetsSpanTheKernels32BitRange) {
  EXPECT_EQ(parse_one("a=+2147483647(%dx)").deref_offsets, std::vector<int32_t>{INT32_MAX});
  EXPECT_EQ(parse_one("a=-2147483648(%dx)").deref_offsets, std::vector<int32_t>{INT32_MIN});
  EXPECT_EQ(parse_one("a=-0x80000000(%dx)").deref_offsets, std::vector<int32_t>{INT32_MIN});
}

TEST(FetchSpec, EveryRegisterSpellingNormalizes) {
  const struct {
    const char* spelling;
    Register reg;
  } cases[] = {
      {"ax", Register::ax},       {"rax", Register::ax},       {"bx", Register::bx},
      {"rbx", Register::bx},      {"cx", Register::cx},        {"rcx", Register::cx},
      {"dx", Register::dx},       {"rdx", Register::dx},       {"si", Register::si},
      {"rsi", Register::si},      {"di", Register::di},        {"rdi", Register::di},
      {"bp", Register::bp},       {"rbp", Register::bp},       {"sp", Register::sp},
      {"rsp", Register::sp},      {"ip", Register::ip},        {"rip", Register::ip},
      {"flags", Register::flags}, {"eflags", Register::flags}, {"r8", Register::r8},
      {"r9", Register::r9},       {"r10", Register::r10},      {"r11", Register::r11},
      {"r12", Register::r12},     {"r13", Register::r13},      {"r14", Register::r14},
      {"r15", Register::r15},
  };
  for (const auto& expected : cases) {
    SCOPED_TRACE(expected.spelling);
    const FetchItem item = parse_one(std::string("v=%") + expected.spelling);
    EXPECT_EQ(item.base, expected.reg);
    // Rendering always uses the kernel spelling.
    EXPECT_EQ(to_string(item),
              std::string("v=%") + std::string(register_kernel_name(expected.reg)) + ":u64");
  }
}

TEST(FetchSpec, EveryType) {
  const struct {
    const char* name;
    uint8_t width;
    bool is_signed;
    bool hex;
  } cases[] = {
      {"u8", 1, false, false},  {"u16", 2, false, false}, {"u32", 4, false, false},
      {"u64", 8, false, false}, {"s8", 1, true, false},   {"s16", 2, true, false},
      {"s32", 4, true, false},  {"s64", 8, true, false},  {"x8", 1, false, true},
      {"x16", 2, false, true},  {"x32", 4, false, true},  {"x64", 8, false, true},
  };
  for (const auto& expected : cases) {
    SCOPED_TRACE(expected.name);
    const FetchItem item = parse_one(std::string("v=%ax:") + expected.name);
    EXPECT_EQ(item.type.width_bytes, expected.width);
    EXPECT_EQ(item.type.is_signed, expected.is_signed);
    EXPECT_EQ(item.type.hex, expected.hex);
    EXPECT_EQ(fetch_type_name(item.type), expected.name);
  }
  EXPECT_EQ(parse_one("v=%ax").type, u64);
}

TEST(FetchSpec, SpacesAroundItemsAreAllowed) {
  auto items = parse_ok("  a=%r8:u64 ,\tb=+8(%di) ");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].name, "a");
  EXPECT_EQ(items[1].name, "b");
}

TEST(FetchSpec, NamesMayUseUnderscoresDigitsAndThirtyTwoCharacters) {
  EXPECT_EQ(parse_one("_x9_Y=%ax").name, "_x9_Y");
  const std::string longest(32, 'n');
  EXPECT_EQ(parse_one(longest + "=%ax").name, longest);
}

TEST(FetchSpec, SixteenItemsAndFourDereferencesAreTheLimits) {
  std::string spec;
  for (int i = 0; i < 16; ++i) spec += (i ? ",f" : "f") + std::to_string(i) + "=%ax";
  EXPECT_EQ(parse_ok(spec).size(), 16u);
  EXPECT_EQ(parse_one("a=+1(+2(+3(+4(%di))))").deref_offsets, (std::vector<int32_t>{4, 3, 2, 1}));
}

// Rendering.

TEST(FetchSpec, CanonicalSpecsRenderBackUnchanged) {
  for (const char* spec :
       {"amount=%r8:u64,price=%r9:u64,debit=%cx:u64", "asset=+16(%dx):u64", "x=-8(%sp):u64",
        "v=+8(+16(%di)):u32", "op=+40(%sp):s32", "p=+48(%cx):x64", "f=%flags:x16",
        "m=-2147483648(%bp):s8", "deep=+1(-2(+3(-4(%r15)))):u8"}) {
    SCOPED_TRACE(spec);
    EXPECT_EQ(to_string(parse_ok(spec)), spec);
  }
}

TEST(FetchSpec, OtherSpellingsRenderCanonicallyAndReparseToTheSameItems) {
  const struct {
    const char* written;
    const char* canonical;
  } cases[] = {
      {"p=+0x30(%rcx):x64", "p=+48(%cx):x64"}, {"x=-8(%rsp)", "x=-8(%sp):u64"},
      {"a=16(%rdx)", "a=+16(%dx):u64"},        {"f=%eflags:s16, r=%rip", "f=%flags:s16,r=%ip:u64"},
      {"z=-0(%ax)", "z=+0(%ax):u64"},
  };
  for (const auto& expected : cases) {
    SCOPED_TRACE(expected.written);
    const auto items = parse_ok(expected.written);
    EXPECT_EQ(to_string(items), expected.canonical);
    EXPECT_EQ(parse_ok(to_string(items)), items);
  }
}

// A deterministic sweep over generated items: every register, type and
// offset edge renders to text that parses back to the same item.
TEST(FetchSpec, GeneratedItemsRoundTrip) {
  const int32_t offsets[] = {0, 1, -1, 8, -8, 0x7fff, INT32_MAX, INT32_MIN, 123456, -654321};
  const FetchType types[] = {
      {1, false, false}, {2, true, false}, {4, false, true}, {8, true, false}};
  int checked = 0;
  for (Register reg : all_registers()) {
    for (size_t depth = 0; depth <= fetch_max_derefs; ++depth) {
      for (size_t type_index = 0; type_index < std::size(types); ++type_index) {
        FetchItem item{"v" + std::to_string(checked), reg, {}, types[type_index], std::nullopt, 1};
        for (size_t i = 0; i < depth; ++i) {
          item.deref_offsets.push_back(
              offsets[(static_cast<size_t>(checked) + i * 3) % std::size(offsets)]);
        }
        const std::string text = to_string(item);
        auto reparsed = parse_fetch_spec(text);
        ASSERT_TRUE(reparsed.ok()) << text << ": " << reparsed.error().message;
        ASSERT_EQ(reparsed->size(), 1u);
        EXPECT_EQ(reparsed->front(), item) << text;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 18 * 5 * 4);
}

TEST(FetchSpec, TracefsFetchArgsAreSpaceSeparatedKernelSyntax) {
  EXPECT_EQ(tracefs_fetch_args(parse_ok("amount=%r8:u64,asset=+16(%dx):u64")),
            "amount=%r8:u64 asset=+16(%dx):u64");
  // The kernel insists on the sign and the short register names.
  EXPECT_EQ(tracefs_fetch_args(parse_ok("a=16(%rsp),b=+0x8(+0(%rdi)):s32,c=%eflags:x32")),
            "a=+16(%sp):u64 b=+8(+0(%di)):s32 c=%flags:x32");
  EXPECT_EQ(tracefs_fetch_args(std::vector<FetchItem>{}), "");
}

// Compiling for BPF.

TEST(FetchSpec, CompilesToTheBpfStruct) {
  const xref_fetch plain = compile_fetch(parse_one("a=%r8:s16"));
  EXPECT_EQ(plain.regs_offset, offsetof(pt_regs, r8));
  EXPECT_EQ(plain.deref_count, 0);
  EXPECT_EQ(plain.width, 2);
  EXPECT_EQ(plain.is_signed, 1);

  const xref_fetch nested = compile_fetch(parse_one("v=+8(-16(%rdi)):u32"));
  EXPECT_EQ(nested.regs_offset, offsetof(pt_regs, rdi));
  EXPECT_EQ(nested.deref_count, 2);
  EXPECT_EQ(nested.deref_offsets[0], -16);
  EXPECT_EQ(nested.deref_offsets[1], 8);
  EXPECT_EQ(nested.deref_offsets[2], 0);
  EXPECT_EQ(nested.deref_offsets[3], 0);
  EXPECT_EQ(nested.width, 4);
  EXPECT_EQ(nested.is_signed, 0);

  const xref_fetch deepest = compile_fetch(parse_one("d=+1(+2(+3(+4(%sp)))):x8"));
  EXPECT_EQ(deepest.regs_offset, offsetof(pt_regs, rsp));
  EXPECT_EQ(deepest.deref_count, 4);
  EXPECT_EQ(deepest.deref_offsets[0], 4);
  EXPECT_EQ(deepest.deref_offsets[3], 1);
  EXPECT_EQ(deepest.width, 1);
  EXPECT_EQ(deepest.is_signed, 0);  // x types are unsigned

  // The padding is zeroed, so the struct can be compared or hashed as bytes.
  EXPECT_EQ(plain.string_slot, 0);  // a number, not a string
  EXPECT_EQ(plain.string_bound, 0);
  EXPECT_EQ(plain.reserved[0] | plain.reserved[1] | plain.reserved[2], 0);
  EXPECT_EQ(plain.index_word_plus_one, 0);  // no index register
}

TEST(FetchSpec, CompileClampsAHandBuiltItemToTheDerefLimit) {
  const FetchItem too_deep{"t", Register::ax, {1, 2, 3, 4, 5, 6}, u64, std::nullopt, 1};
  const xref_fetch compiled = compile_fetch(too_deep);
  EXPECT_EQ(compiled.deref_count, fetch_max_derefs);
  EXPECT_EQ(compiled.deref_offsets[3], 4);
}

TEST(FetchSpec, FetchedValuesExtendByWidthAndSign) {
  EXPECT_EQ(extend_fetched_value(0x1ff, u8), 0xffu);
  EXPECT_EQ(extend_fetched_value(0x80, FetchType{1, true, false}), 0xffffffffffffff80u);
  EXPECT_EQ(extend_fetched_value(0x7f, FetchType{1, true, false}), 0x7fu);
  EXPECT_EQ(extend_fetched_value(0x12348000, FetchType{2, true, false}), 0xffffffffffff8000u);
  EXPECT_EQ(extend_fetched_value(0x12348000, FetchType{2, false, true}), 0x8000u);
  EXPECT_EQ(extend_fetched_value(0xabcdffffffff, s32), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(extend_fetched_value(0xabcdffffffff, u32), 0xffffffffu);
  EXPECT_EQ(extend_fetched_value(0x8000000000000000, FetchType{8, true, false}),
            0x8000000000000000u);
  EXPECT_EQ(extend_fetched_value(0xfedcba9876543210, u64), 0xfedcba9876543210u);
}

// Errors: code, exact column, what was expected.

struct ErrorCase {
  const char* spec;
  int column;
  const char* message_part;
};

TEST(FetchSpec, ErrorsPointAtTheOffendingCharacter) {
  const ErrorCase cases[] = {
      {"a=%r8:u7", 7, "unknown type 'u7'; use u8..u64, s8..s64, x8..x64 or string"},
      {"a=+16(%dx:u64", 10,
       "unbalanced parenthesis: expected ')' to close the '(' at column 6 but found ':'"},
      {"a=+8(+16(%di):u32", 14,
       "unbalanced parenthesis: expected ')' to close the '(' at column 5"},
      {"a=+16(%dx", 10,
       "unbalanced parenthesis: expected ')' to close the '(' at column 6 but the spec ended"},
      {"amount=%q8:u64", 8, "unknown register '%q8'"},
      {"a=%RAX", 3, "unknown register '%RAX'"},
      {"a=%:u64", 4, "expected a register name after '%'"},
      {"a=%", 4, "expected a register name after '%'"},
      {"a=%r8,a=%r9", 7, "duplicate name 'a'"},
      {"amount=%r8,price=%r9,amount=+8(%sp)", 22, "duplicate name 'amount'"},
      {"", 1, "empty fetch spec"},
      {"   ", 1, "empty fetch spec"},
      {"a=%r8,", 7, "expected a fetch name"},
      {"a=%r8,,b=%r9", 7, "expected a fetch name"},
      {"1a=%r8", 1, "expected a fetch name (a letter or '_') but found '1'"},
      {"a%r8", 2, "expected '=' after the name 'a' but found '%'"},
      {"a = %r8", 2, "expected '=' after the name 'a' but found ' '"},
      {"abc", 4, "expected '=' after the name 'abc' but the spec ended"},
      {"a=", 3, "expected a register such as %r8 or a dereference such as +16(%dx)"},
      {"a=r8", 3,
       "expected a register such as %r8 or a dereference such as +16(%dx) but found 'r'"},
      {"a=16%dx", 5, "expected '(' after the offset but found '%'"},
      {"a=+16", 6, "expected '(' after the offset but the spec ended"},
      {"a=+(%dx)", 4, "expected an offset after '+'"},
      {"a=-(%dx)", 4, "expected an offset after '-'"},
      {"a=+0x1g(%dx)", 7, "offset '0x1g': unexpected character 'g'"},
      {"a=+0x(%dx)", 6, "offset '0x': hex prefix without digits"},
      {"a=+2147483648(%dx)", 3, "offset '+2147483648' does not fit in 32 bits"},
      {"a=-2147483649(%dx)", 3, "offset '-2147483649' does not fit in 32 bits"},
      {"a=+99999999999999999999(%dx)", 23,
       "offset '99999999999999999999': does not fit in 64 bits"},
      {"a=%r8)", 6, "unbalanced parenthesis: ')' without a matching '('"},
      {"a=+8(%r8))", 10, "unbalanced parenthesis: ')' without a matching '('"},
      {"a=%r8:", 7, "expected a type after ':' but the spec ended"},
      {"a=%r8:,b=%r9", 7, "expected a type after ':' but found ','"},
      {"a=%r8:u64x", 7, "unknown type 'u64x'"},
      {"a=%r8:string", 3, "a :string fetch needs a dereference"},
      {"a=%r8 b=%r9", 7, "expected ',' or the end of the spec but found 'b'"},
      {"a=%r8:u64:u32", 10, "expected ',' or the end of the spec but found ':'"},
      {"a=+1(+2(+3(+4(+5(%di)))))", 15, "too many nested dereferences: the limit is 4"},
      {"common_pid=%r8", 1, "name 'common_pid' is reserved"},
      {"x=%ax,__probe_ip=%r8", 7, "name '__probe_ip' is reserved"},
  };
  for (const ErrorCase& expected : cases) {
    SCOPED_TRACE(expected.spec);
    const Error error = parse_error(expected.spec);
    EXPECT_EQ(error.code, ErrorCode::invalid_argument);
    EXPECT_EQ(error.column, expected.column);
    EXPECT_NE(error.message.find(expected.message_part), std::string::npos) << error.message;
    EXPECT_FALSE(error.hint.empty());
  }
}

TEST(FetchSpec, SeventeenthItemIsRejectedAtItsColumn) {
  std::string spec;
  for (int i = 0; i < 16; ++i) spec += "f" + std::to_string(i) + "=%ax,";
  const int seventeenth_column = static_cast<int>(spec.size()) + 1;
  spec += "extra=%bx";
  const Error error = parse_error(spec);
  EXPECT_EQ(error.column, seventeenth_column);
  EXPECT_EQ(error.message, "too many fetches: the limit is 16");
}

TEST(FetchSpec, NameLongerThanTheKernelAllowsIsRejected) {
  const std::string too_long(33, 'n');
  const Error error = parse_error("a=%ax," + too_long + "=%bx");
  EXPECT_EQ(error.column, 7);
  EXPECT_EQ(error.message, "name '" + too_long + "' is longer than 32 characters");
}

TEST(FetchSpec, ErrorMessagesAreExactWhereTheBriefFixesThem) {
  EXPECT_EQ(parse_error("a=%r8:u7").message, "unknown type 'u7'; use u8..u64, s8..s64, x8..x64 or string");
  EXPECT_EQ(parse_error("a=%:u64").message, "expected a register name after '%'");
  EXPECT_EQ(parse_error("a=%r8,a=%r9").message, "duplicate name 'a'");
}

TEST(FetchSpec, ErrorRendersWithACaret) {
  const std::string spec = "amount=%q8:u64";
  EXPECT_EQ(render_parse_error("fetch spec", spec, parse_error(spec)),
            "fetch spec: unknown register '%q8' (column 8)\n"
            "  amount=%q8:u64\n"
            "         ^");
}

// Found by the fetch_spec fuzz target: a newline after a name was quoted as
// it was, and the one-line message took two.
TEST(FetchSpec, AnUnprintableCharacterIsNamedByItsValue) {
  const Error newline = parse_error("i\n");
  EXPECT_EQ(newline.column, 2);
  EXPECT_EQ(newline.message, "expected '=' after the name 'i' but found byte 0x0a");
  EXPECT_EQ(parse_error("a=%r8,\x01").message, "expected a fetch name (a letter or '_') but found byte 0x01");
  EXPECT_EQ(parse_error("a=+0x1\xc3\xa9(%dx)").message, "expected '(' after the offset but found byte 0xc3");
}

}  // namespace
}  // namespace xref
