// Tab completion's table (serve/frontend_commands.h): option names with
// how many values each takes and whether they are code, which LLDB 19
// needs declared up front (lldb-plugin/xref_complete.py). Compared with the
// commands' CLI11 definitions as `xref COMMAND --help` prints them.
#include <gtest/gtest.h>

#include <algorithm>

#include "serve/frontend_commands.h"

namespace xref::serve {
namespace {

const nlohmann::json* option_named(const Completion& completion, const std::string& name) {
  for (const auto& option : completion.options) {
    if (option["name"] == name) return &option;
  }
  return nullptr;
}

TEST(ServeCompletion, OptionsSayWhetherTheyTakeAValueAndWhetherItIsCode) {
  const Completion trace = complete_words({"trace"}, "-");
  ASSERT_EQ(trace.options.size(), trace.candidates.size());
  const nlohmann::json* start = option_named(trace, "--start");
  const nlohmann::json* here = option_named(trace, "--here");
  const nlohmann::json* depth = option_named(trace, "--depth");
  ASSERT_TRUE(start && here && depth);
  EXPECT_EQ((*start)["values"], 1);
  EXPECT_EQ((*start)["code"], true);
  EXPECT_EQ((*here)["values"], 0);
  EXPECT_EQ((*depth)["values"], 1);
  EXPECT_EQ((*depth)["code"], false);
  EXPECT_FALSE(trace.positional_code);
  // --fetch-at VA SPEC: two values each time.
  const nlohmann::json* fetch_at = option_named(trace, "--fetch-at");
  ASSERT_TRUE(fetch_at);
  EXPECT_EQ((*fetch_at)["values"], 2);
  EXPECT_EQ((*fetch_at)["code"], true);
  const nlohmann::json* help = option_named(trace, "--help");
  ASSERT_TRUE(help);
  EXPECT_EQ((*help)["short"], "h");
}

// profile in a debugger: its own options, and those of report, annotate and
// diff described once each (LLDB declares them with the command), but not
// offered as profile's; its subcommands complete, and their options after them.
TEST(ServeCompletion, ProfileDescribesItsSubcommandsOptions) {
  const Completion profile = complete_words({"profile"}, "-");
  for (const char* own : {"--until-stop", "--duration", "--callers", "--freq", "--out"}) {
    EXPECT_NE(std::find(profile.candidates.begin(), profile.candidates.end(), own), profile.candidates.end()) << own;
    EXPECT_TRUE(option_named(profile, own)) << own;
  }
  for (const char* nested : {"--by", "--top", "--within", "--percent", "--min-samples", "--min-delta", "--other"}) {
    EXPECT_EQ(std::find(profile.candidates.begin(), profile.candidates.end(), nested), profile.candidates.end()) << nested;
    EXPECT_TRUE(option_named(profile, nested)) << nested;
  }
  size_t helps = 0;
  for (const auto& option : profile.options) helps += option["name"] == "--help" ? 1 : 0;
  EXPECT_EQ(helps, 1u);
  EXPECT_EQ(complete_words({"profile"}, "").candidates, (std::vector<std::string>{"annotate", "diff", "report"}));
  EXPECT_EQ(complete_words({"profile", "report"}, "--wi").candidates, std::vector<std::string>{"--within"});
  // trace's subcommands read saved traces, in a shell: not offered in a debugger.
  EXPECT_TRUE(complete_words({"trace"}, "").candidates.empty());
}

TEST(ServeCompletion, ProbesPositionalWordsAreCode) {
  const Completion probe = complete_words({"probe"}, "--fe");
  ASSERT_EQ(probe.candidates, std::vector<std::string>{"--fetch"});
  ASSERT_EQ(probe.options.size(), 1u);
  EXPECT_EQ(probe.options[0]["values"], 1);
  EXPECT_EQ(probe.options[0]["code"], false);
  EXPECT_TRUE(probe.positional_code);
}

TEST(ServeCompletion, NoTableForAValueOrAPositionalWord) {
  EXPECT_TRUE(complete_words({"trace", "--start"}, "han").options.empty());
  EXPECT_TRUE(complete_words({"probe"}, "han").options.empty());
}

}  // namespace
}  // namespace xref::serve
