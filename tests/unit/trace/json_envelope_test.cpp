#include "output/json_envelope.h"

#include <gtest/gtest.h>

#include "render/window_text.h"

namespace xref {
namespace {

// A log line, a symbol name or a path may hold bytes that are not UTF-8;
// nlohmann::json::dump() throws on them, which aborted `xref trace` in
// every output mode when a --mark-regex match held such a byte.
TEST(JsonText, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(json_text({{"mark_match", "request \xff\xfe 7"}}),
            "{\"mark_match\":\"request \xef\xbf\xbd\xef\xbf\xbd 7\"}");
  EXPECT_EQ(json_text({{"symbol", "caf\xc3\xa9"}}), "{\"symbol\":\"caf\xc3\xa9\"}");
}

TEST(JsonText, AMarkThatIsNotUtf8RendersInTheWindowLine) {
  const nlohmann::json window = {{"mark_status", "matched"}, {"mark_match", "\xff 7"}, {"mark_certain", true}};
  EXPECT_EQ(render::window_mark_text(window), "mark \"\xef\xbf\xbd 7\"");
}

}  // namespace
}  // namespace xref
