// :string fetches: the spec syntax (as the kernel's uprobe events write it,
// plus a bound), the string comparisons of a filter, and the lowered
// program's string instructions, checked against the tree's reference
// evaluation on the same strings.
#include <gtest/gtest.h>

#include "fetch_spec.h"
#include "filter_expr.h"
#include "filter_program.h"

namespace xref {
namespace {

FetchItem only_item(std::string_view spec) {
  auto items = parse_fetch_spec(spec);
  EXPECT_TRUE(items) << spec << ": " << (items ? "" : items.error().message);
  return items && items->size() == 1 ? items->front() : FetchItem{};
}

Error spec_error(std::string_view spec) {
  auto items = parse_fetch_spec(spec);
  EXPECT_FALSE(items) << spec;
  return items ? Error{} : items.error();
}

TEST(StringFetch, DefaultBoundIsSixtyFourBytes) {
  const FetchItem item = only_item("key=+0(%di):string");
  EXPECT_TRUE(item.type.is_string());
  EXPECT_EQ(item.type.string_bound, 64);
  EXPECT_EQ(item.deref_offsets, std::vector<int32_t>{0});
  EXPECT_EQ(to_string(item), "key=+0(%di):string[64]");
}

TEST(StringFetch, BoundAndRoundTrip) {
  const FetchItem item = only_item("name=+8(+16(%si)):string[256]");
  EXPECT_EQ(item.type.string_bound, 256);
  EXPECT_EQ(only_item(to_string(item)), item);
  // The kernel knows no bound: its type is plain "string".
  const std::vector<FetchItem> items{item};
  EXPECT_EQ(tracefs_fetch_args(items), "name=+8(+16(%si)):string");
}

TEST(StringFetch, Refusals) {
  EXPECT_EQ(spec_error("key=%di:string").column, 5);
  EXPECT_NE(spec_error("key=%di:string").hint.find("+0(%di)"), std::string::npos);
  EXPECT_EQ(spec_error("key=+0(%di):string[0]").column, 20);
  EXPECT_EQ(spec_error("key=+0(%di):string[257]").message, "string bound 257 is out of range");
  EXPECT_EQ(spec_error("key=+0(%di):string[8").column, 21);
  EXPECT_EQ(spec_error("a=+0(%di):string,b=+0(%si):string,c=+0(%dx):string,d=+0(%cx):string,e=+0(%r8):string")
                .message,
            "too many :string fetches: the limit is 4");
}

TEST(StringFetch, CompiledIntoSlots) {
  auto items = parse_fetch_spec("n=%r8:u32,a=+0(%di):string[8],b=+4(%si):string");
  ASSERT_TRUE(items);
  EXPECT_EQ(fetch_string_slots(*items), (std::vector<int>{-1, 0, 1}));
  const std::vector<xref_fetch> compiled = compile_fetches(*items);
  EXPECT_EQ(compiled[0].string_slot, 0);
  EXPECT_EQ(compiled[1].string_slot, 1);
  EXPECT_EQ(compiled[1].string_bound, 8);
  EXPECT_EQ(compiled[2].string_slot, 2);
  EXPECT_EQ(compiled[2].string_bound, 64);
  EXPECT_EQ(compiled[2].deref_offsets[0], 4);
}

struct Strings {
  std::vector<FetchItem> items = *parse_fetch_spec("n=%r8:u64,key=+0(%di):string[8]");
  std::vector<FilterVariable> variables = filter_variables(items);

  // The value BPF stores for a string: its length, | CUT when cut.
  static uint64_t value_of(const std::string& bytes, bool cut) { return bytes.size() | (cut ? XREF_STRING_CUT : 0); }
};

Result<FilterNode> parse(const Strings& strings, std::string_view text) { return parse_filter(text, strings.variables); }

TEST(StringFilter, ParsesEqualNotEqualAndPrefix) {
  Strings strings;
  auto equal = parse(strings, R"(key == "set")");
  ASSERT_TRUE(equal);
  EXPECT_TRUE(equal->comparison.rhs.is_string);
  EXPECT_EQ(equal->comparison.rhs.text, "set");
  EXPECT_FALSE(equal->comparison.rhs.prefix);
  auto prefix = parse(strings, R"("se*" != key)");
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->comparison.lhs.name, "key") << "the fetch goes on the left";
  EXPECT_TRUE(prefix->comparison.rhs.prefix);
  EXPECT_EQ(prefix->comparison.rhs.text, "se");
  auto escaped = parse(strings, R"(key == "a\*\"\x41\\")");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->comparison.rhs.text, "a*\"A\\");
  EXPECT_FALSE(escaped->comparison.rhs.prefix);
  EXPECT_EQ(to_string(*escaped), R"(key == "a\*\"A\\")");
  EXPECT_EQ(*parse(strings, to_string(*prefix)), *prefix);
}

TEST(StringFilter, Refusals) {
  Strings strings;
  auto error = [&](std::string_view text) {
    auto parsed = parse(strings, text);
    EXPECT_FALSE(parsed) << text;
    return parsed ? Error{} : parsed.error();
  };
  EXPECT_EQ(error(R"(key < "set")").message, "strings compare only with '==' and '!='");
  EXPECT_EQ(error(R"(n == "set")").column, 1);
  EXPECT_NE(error(R"(key == 3)").message.find("is a string"), std::string::npos);
  EXPECT_NE(error("key").message.find("is a string"), std::string::npos);
  EXPECT_EQ(error(R"(key == "s*t")").column, 10) << "'*' only at the end";
  EXPECT_EQ(error(R"(key == "set)").message, "unterminated string: no closing '\"'");
  EXPECT_EQ(error(R"(key == "\q")").column, 9);
  EXPECT_NE(error(R"(key == "longer than 8")").hint.find(":string[13]"), std::string::npos);
}

// The lowered program (as BPF runs it) and the tree agree on every string,
// cut or not, for ==, != and prefix, alone and joined with numbers.
TEST(StringFilter, ProgramAgreesWithTree) {
  Strings strings;
  const std::vector<std::string> filters = {
      R"(key == "set")",         R"(key != "set")",          R"(key == "set*")",
      R"(key == "*")",           R"(key == "")",             R"(key == "setexabc")",
      R"(key == "setexabc*")",   R"(!(key == "g*") && n > 2)", R"(key == "set" || key == "get" || n == 7)",
  };
  const std::vector<std::pair<std::string, bool>> fetched = {
      {"set", false}, {"setex", false}, {"get", false}, {"", false}, {"setexabc", false}, {"setexabc", true},
      {"se", false},  {"g", false},
  };
  for (const std::string& text : filters) {
    auto tree = parse(strings, text);
    ASSERT_TRUE(tree) << text;
    auto program = lower_filter(*tree);
    ASSERT_TRUE(program) << text;
    for (const auto& [bytes, cut] : fetched) {
      for (uint64_t n : {uint64_t{1}, uint64_t{7}}) {
        const std::vector<uint64_t> values = {n, Strings::value_of(bytes, cut)};
        const std::vector<std::string> by_fetch = {"", bytes};
        const std::vector<std::string> by_string_slot = {bytes};
        EXPECT_EQ(evaluate_program(*program, values, by_string_slot), evaluate_filter(*tree, values, by_fetch))
            << text << " on \"" << bytes << "\"" << (cut ? " (cut)" : "") << " n=" << n;
      }
    }
  }
  // Spot checks of the meaning itself.
  auto prefix = lower_filter(*parse(strings, R"(key == "setex*")"));
  const std::vector<std::string> cut_setexabc = {"setexabc"};
  EXPECT_TRUE(evaluate_program(*prefix, std::vector<uint64_t>{0, Strings::value_of("setexabc", true)}, cut_setexabc));
  auto equal = lower_filter(*parse(strings, R"(key == "setexabc")"));
  EXPECT_FALSE(evaluate_program(*equal, std::vector<uint64_t>{0, Strings::value_of("setexabc", true)}, cut_setexabc))
      << "a cut string equals no constant";
  EXPECT_TRUE(evaluate_program(*equal, std::vector<uint64_t>{0, Strings::value_of("setexabc", false)}, cut_setexabc));
}

TEST(StringFilter, AtMostFourStrings) {
  Strings strings;
  auto tree = parse(strings, R"(key == "a" || key == "b" || key == "c" || key == "d" || key == "a" || key == "e")");
  ASSERT_TRUE(tree);
  auto program = lower_filter(*tree);
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().column, 71) << "the sixth comparison";
  auto four = lower_filter(*parse(strings, R"(key == "a" || key == "b" || key == "c" || key == "d" || key == "a")"));
  ASSERT_TRUE(four);
  EXPECT_EQ(four->strings.size(), 4u) << "the same string is kept once";
  const xref_filter_program packed = to_bpf_program(*four);
  EXPECT_EQ(packed.string_lengths[3], 1u);
  EXPECT_EQ(packed.strings[3][0], 'd');
}

}  // namespace
}  // namespace xref
