// The nearest option of a command to what was typed, and --duration's
// values, against a parser with the options a live command has.
#include "command/usage_text.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "command/option_values.h"

namespace xref {
namespace {

struct Command {
  CLI::App app{"test", "xref probe"};
  uint64_t duration_ms = 1000;
  uint64_t heartbeat_ms = 0;
  uint64_t max_windows = 0;
  Command() {
    add_duration_option(app, duration_ms, "stop after this long");
    app.add_option("--heartbeat-ms", heartbeat_ms);
    app.add_option("--max-windows", max_windows);
    app.add_flag("--json");
  }
  std::optional<Error> parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
    } catch (const CLI::ParseError& failure) {
      return usage_error(failure, app);
    }
    return std::nullopt;
  }
};

TEST(UsageText, NearestOptionIsATypoAwayOrTheNameCutShort) {
  Command command;
  EXPECT_EQ(nearest_option(command.app, "--durration-ms"), "--duration-ms");
  EXPECT_EQ(nearest_option(command.app, "--duraiton-ms"), "--duration-ms");  // two letters swapped
  EXPECT_EQ(nearest_option(command.app, "--max-window=5"), "--max-windows");
  EXPECT_EQ(nearest_option(command.app, "--heartbeat"), "--heartbeat-ms");
  EXPECT_EQ(nearest_option(command.app, "--jsonl"), "--json");
  EXPECT_EQ(nearest_option(command.app, "--colour"), std::nullopt);
  EXPECT_EQ(nearest_option(command.app, "--x"), std::nullopt);
}

TEST(UsageText, UnknownOptionNamesTheCommandAndTheNearest) {
  Command command;
  const auto error = command.parse({"--durration-ms", "5"});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::invalid_argument);
  EXPECT_EQ(error->message, "`xref probe` has no option --durration-ms");
  EXPECT_EQ(error->hint, "did you mean --duration-ms? see `xref probe --help`");
}

TEST(UsageText, DurationTakesAUnit) {
  for (const auto& [text, ms] : std::vector<std::pair<std::string, uint64_t>>{
           {"500ms", 500}, {"5s", 5000}, {"2m", 120000}, {"1h", 3600000}, {"0s", 0}, {"8760h", 31536000000}}) {
    EXPECT_EQ(parse_duration_ms(text).value(), ms) << text;
    Command command;
    EXPECT_FALSE(command.parse({"--duration", text})) << text;
    EXPECT_EQ(command.duration_ms, ms) << text;
  }
  for (const std::string text : {"5", "", "s", "5y", "1.5s", "-1s", "8761h", "5 s"}) {
    EXPECT_FALSE(parse_duration_ms(text).ok()) << text;
  }
  Command command;
  const auto bare = command.parse({"--duration", "5"});
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->message, "--duration: '5' has no unit");
  EXPECT_EQ(bare->hint, "give a whole number and a unit: 5s, 5ms or 5m (or --duration-ms N, in milliseconds)");
}

}  // namespace
}  // namespace xref
