// Live addresses a front end sends (a `names` batch, a `run`'s prepared
// stop_at_end) are read by the one parser (render/json_fields.h,
// address_value): a malformed one is an invalid_request naming it, never an
// exception and never a number read from its first digits.
#include <gtest/gtest.h>

#include "render/json_fields.h"
#include "serve/names_cache.h"
#include "serve/start_text.h"

namespace xref::serve {
namespace {

TEST(ServeMalformedAddress, TheParserTakesHexAndUnsignedOnly) {
  EXPECT_EQ(render::address_value("0x7f60b9f74a80"), 0x7f60b9f74a80u);
  EXPECT_EQ(render::address_value(4096), 4096u);
  for (const nlohmann::json& bad : {nlohmann::json("0x12zz"), nlohmann::json("0x"), nlohmann::json("123"),
                                    nlohmann::json("0x1ffffffffffffffff"), nlohmann::json(-1), nlohmann::json(nullptr),
                                    nlohmann::json(" 0x10"), nlohmann::json("0x10 ")}) {
    EXPECT_FALSE(render::address_value(bad).has_value()) << bad.dump();
  }
}

TEST(ServeMalformedAddress, PreparedStopAtEndAddressIsChecked) {
  EXPECT_FALSE(check_prepared({{"stop_at_end", {{"breakpoint", 2}, {"address", "0x55d0c9e01a48"}, {"thread", 1}}}}));
  EXPECT_FALSE(check_prepared({{"disabled", {1}}}));
  for (const nlohmann::json& address : {nlohmann::json("0x55d0zz"), nlohmann::json("return"), nlohmann::json(nullptr)}) {
    const auto error = check_prepared({{"stop_at_end", {{"breakpoint", 2}, {"address", address}, {"thread", 1}}}});
    ASSERT_TRUE(error.has_value()) << address.dump();
    EXPECT_EQ(error->code, "invalid_request");
    EXPECT_NE(error->message.find("prepared.stop_at_end.address"), std::string::npos) << error->message;
  }
  EXPECT_TRUE(check_prepared({{"stop_at_end", true}}).has_value());
}

TEST(ServeMalformedAddress, NamesBatchWithABadAddressIsRefused) {
  NamesCache cache;
  const auto error = cache.add({{"pid", 42}, {"names", {{{"address", "0x12zz"}, {"function", "f"}}}}});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "invalid_request");
  EXPECT_NE(error->message.find("0x12zz"), std::string::npos) << error->message;
  EXPECT_FALSE(cache.has(42, 0x12));
  EXPECT_FALSE(cache.add({{"pid", 42}, {"names", {{{"address", "0x1c40"}, {"function", "f"}}}}}));
  EXPECT_TRUE(cache.has(42, 0x1c40));
}

}  // namespace
}  // namespace xref::serve

namespace xref::serve {
namespace {

// names_for hands out the snapshot of the moment: a later batch makes a new
// one and leaves the texts rendering with the old one as they were.
TEST(ServeNamesCache, NamesForIsASnapshotOfTheDebuggersNames) {
  NamesCache cache;
  ASSERT_FALSE(cache.add({{"pid", 7}, {"names", {{{"address", "0x1000"}, {"function", "svc::a(int)"}}}}}));
  auto before = cache.names_for(7);
  ASSERT_FALSE(cache.add({{"pid", 7}, {"names", {{{"address", "0x2000"}, {"function", "b"}, {"offset", 4}}}}}));
  auto after = cache.names_for(7);
  const render::CodeAddress first{"", std::nullopt, 0x1000}, second{"", std::nullopt, 0x2000};
  ASSERT_TRUE(before->place(first).has_value());
  EXPECT_EQ(before->place(first)->function, "svc::a(int)");
  EXPECT_FALSE(before->place(second).has_value());
  ASSERT_TRUE(after->place(second).has_value());
  EXPECT_EQ(after->place(second)->function, "b");
  EXPECT_EQ(after->place(second)->offset, 4u);
  EXPECT_EQ(after->place(first)->function, "svc::a(int)");
  EXPECT_FALSE(cache.names_for(7, /*debugger=*/false)->place(first).has_value());
}

}  // namespace
}  // namespace xref::serve
