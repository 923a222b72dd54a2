// JSON from outside parsed with its nesting bounded: deep input is refused
// while it is parsed, before anything that deep exists to copy or dump.
#include "input/untrusted_json.h"

#include <gtest/gtest.h>

#include <string>

namespace xref {
namespace {

std::string nested_arrays(size_t depth, bool closed) {
  return std::string(depth, '[') + (closed ? std::string(depth, ']') : std::string());
}

std::string nested_objects(size_t depth) {
  std::string text;
  for (size_t level = 0; level < depth; ++level) text += "{\"a\":";
  return text + "1" + std::string(depth, '}');
}

TEST(UntrustedJson, ParsesOrdinaryJson) {
  const UntrustedJson parsed = parse_untrusted_json(R"( {"id": 7, "params": {"argv": ["trace", "--here"]}} )");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value["id"], 7);
  EXPECT_EQ(parsed.value["params"]["argv"][1], "--here");
}

TEST(UntrustedJson, SyntaxErrorsAreNotDepthErrors) {
  for (const char* text : {"", "{", "{\"a\": 1} x", "[1,]", "nul"}) {
    const UntrustedJson parsed = parse_untrusted_json(text);
    EXPECT_EQ(parsed.failure, UntrustedJson::Failure::syntax) << text;
    EXPECT_TRUE(parsed.value.is_null()) << text;
  }
}

TEST(UntrustedJson, TheDepthLimitIsExact) {
  const UntrustedJson deepest = parse_untrusted_json(nested_arrays(kMaxJsonDepth, true));
  ASSERT_TRUE(deepest.ok());
  // What the limit protects: copying and dumping recurse per level.
  const nlohmann::json copy = deepest.value;
  EXPECT_EQ(copy.dump(), nested_arrays(kMaxJsonDepth, true));
  EXPECT_EQ(parse_untrusted_json(nested_arrays(kMaxJsonDepth + 1, true)).failure, UntrustedJson::Failure::too_deep);
  EXPECT_TRUE(parse_untrusted_json(nested_objects(kMaxJsonDepth)).ok());
  EXPECT_EQ(parse_untrusted_json(nested_objects(kMaxJsonDepth + 1)).failure, UntrustedJson::Failure::too_deep);
  EXPECT_EQ(parse_untrusted_json("[1]", 0).failure, UntrustedJson::Failure::too_deep);
  EXPECT_TRUE(parse_untrusted_json("1", 0).ok());
}

// 300k levels (about 1 MiB of `[`): refused, whether or not the text is
// closed or even complete.
TEST(UntrustedJson, HundredsOfThousandsOfLevelsAreRefused) {
  for (const std::string& text : {nested_arrays(300000, false), nested_arrays(300000, true), nested_objects(300000)}) {
    const UntrustedJson parsed = parse_untrusted_json(text);
    EXPECT_EQ(parsed.failure, UntrustedJson::Failure::too_deep);
    EXPECT_TRUE(parsed.value.is_null());
  }
  EXPECT_EQ(too_deep_text(), "nested deeper than 256 levels");
}

}  // namespace
}  // namespace xref
