#include "parse_error_render.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

Error error_at_column(std::string message, int column) {
  Error error = make_error(ErrorCode::invalid_argument, std::move(message), "a hint");
  error.column = column;
  return error;
}

TEST(ParseErrorRender, CaretUnderTheColumn) {
  EXPECT_EQ(render_parse_error("fetch spec", "amount=%q8:u64",
                               error_at_column("unknown register '%q8'", 8)),
            "fetch spec: unknown register '%q8' (column 8)\n"
            "  amount=%q8:u64\n"
            "         ^");
  EXPECT_EQ(render_parse_error("filter", "a == 1", error_at_column("x", 1)),
            "filter: x (column 1)\n"
            "  a == 1\n"
            "  ^");
}

TEST(ParseErrorRender, ColumnPastTheEndPointsJustAfterTheText) {
  EXPECT_EQ(render_parse_error("filter", "(a", error_at_column("missing ')'", 3)),
            "filter: missing ')' (column 3)\n"
            "  (a\n"
            "    ^");
  // A column beyond that is clamped rather than drawn in empty space.
  EXPECT_EQ(render_parse_error("filter", "(a", error_at_column("missing ')'", 40)),
            "filter: missing ')' (column 40)\n"
            "  (a\n"
            "    ^");
}

TEST(ParseErrorRender, WithoutAColumnOnlyTheMessage) {
  EXPECT_EQ(render_parse_error("filter", "a == 1", error_at_column("too big", 0)),
            "filter: too big");
}

TEST(ParseErrorRender, TabsAndMultibyteCharactersKeepTheCaretAligned) {
  EXPECT_EQ(render_parse_error("filter", "\ta ?", error_at_column("bad", 4)),
            "filter: bad (column 4)\n"
            "  \ta ?\n"
            "  \t  ^");
  // "é" is two bytes but one terminal cell: the caret under '?' (byte column 5)
  // needs three spaces, not four.
  EXPECT_EQ(render_parse_error("filter", "\xc3\xa9 a?", error_at_column("bad", 5)),
            "filter: bad (column 5)\n"
            "  \xc3\xa9 a?\n"
            "     ^");
  // A newline in the text would break the picture; it shows as a space.
  EXPECT_EQ(render_parse_error("filter", "a\n?", error_at_column("bad", 3)),
            "filter: bad (column 3)\n"
            "  a ?\n"
            "    ^");
}

TEST(ParseErrorRender, QuotedCharactersAndTextStayOnePrintableLine) {
  EXPECT_EQ(quoted_character('x'), "'x'");
  EXPECT_EQ(quoted_character(' '), "' '");
  EXPECT_EQ(quoted_character('\n'), "byte 0x0a");
  EXPECT_EQ(quoted_character('\x7f'), "byte 0x7f");
  EXPECT_EQ(quoted_character('\xc3'), "byte 0xc3");
  EXPECT_EQ(quoted_text("zR"), "\"zR\"");
  EXPECT_EQ(quoted_text("z\n\xffR"), "\"z\\x0a\\xffR\"");
}

}  // namespace
}  // namespace xref
