#include "command/option_values.h"

#include <gtest/gtest.h>

#include <optional>

namespace xref {
namespace {

std::string message_of(const Result<uint64_t>& result) { return result ? "" : result.error().message; }

// Each text and the message parse_number_in refuses it with.
void expect_messages(const NumberRange& range, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, message] : cases) EXPECT_EQ(message_of(parse_number_in(text, range)), message) << text;
}

// What `app` refuses `args` with, as the CLI reports it; none when it parses.
std::optional<Error> parse_error_of(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& failure) {
    return usage_error(failure, "see --help");
  }
  return std::nullopt;
}

TEST(OptionValues, WholeNumbersInRange) {
  const NumberRange range{0, 1000000, ""};
  EXPECT_EQ(*parse_number_in("0", range), 0u);
  EXPECT_EQ(*parse_number_in("1000000", range), 1000000u);
  EXPECT_EQ(*parse_number_in("0x10", range), 16u);
  // Decimal, not octal as strtoull would read it.
  EXPECT_EQ(*parse_number_in("010", range), 10u);
  EXPECT_EQ(*parse_number_in("18446744073709551615", NumberRange{}), UINT64_MAX);
}

TEST(OptionValues, NegativesAndJunkAreNotNumbers) {
  const NumberRange range{0, 1000000, ""};
  for (const char* text : {"-1", "-0", "+5", " 5", "5 ", "1.5", "1e3", "abc", "0x", "", "12a"}) {
    auto value = parse_number_in(text, range);
    ASSERT_FALSE(value) << text;
    EXPECT_EQ(value.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(value.error().message.find("is not a valid non-negative number"), std::string::npos)
        << value.error().message;
    EXPECT_EQ(value.error().hint, "give a whole number from 0 to 1000000");
  }
  expect_messages(range, {{"-1", "'-1' is not a valid non-negative number (unexpected '-' at column 1)"},
                          {"12a", "'12a' is not a valid non-negative number (unexpected 'a' at column 3)"},
                          {"", "'' is not a valid non-negative number (empty)"},
                          {"0x", "'0x' is not a valid non-negative number (no digits after 0x)"}});
}

TEST(OptionValues, OverflowAndBoundsAreOutOfRange) {
  const NumberRange range{1, 16, ""};
  expect_messages(range, {{"18446744073709551616", "'18446744073709551616' is out of range (more than 64 bits)"},
                          {"99999999999999999999", "'99999999999999999999' is out of range (more than 64 bits)"},
                          {"0x10000000000000000", "'0x10000000000000000' is out of range (more than 64 bits)"},
                          {"0", "'0' is out of range"},
                          {"17", "'17' is out of range"}});
  EXPECT_EQ(parse_number_in("17", range).error().hint, "give a whole number from 1 to 16");
  const NumberRange pid{1, kMaxPid, "give the target's process ID"};
  EXPECT_EQ(parse_number_in("0", pid).error().hint, "give the target's process ID");
}

TEST(OptionValues, TheValueIsShownOnOneShortLine) {
  const std::string message = message_of(parse_number_in("1\n2" + std::string(100, '9'), NumberRange{}));
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_LT(message.size(), 120u) << message;
  EXPECT_NE(message.find("'1?2999"), std::string::npos) << message;
}

// The shape every numeric option has: CLI11 hands the value to number_in
// before converting it, so the field only ever sees a checked number.
struct Parsed {
  std::optional<Error> error;
  uint64_t count = 7;
  int pid = 0;
  std::optional<uint64_t> window;
};

Parsed parse(std::vector<std::string> args) {
  Parsed parsed;
  CLI::App app{"test"};
  app.add_option("--count", parsed.count)->transform(number_in({0, 1000000, ""}));
  app.add_option("--pid", parsed.pid)->transform(number_in({1, kMaxPid, "give the target's process ID"}));
  app.add_option("--window", parsed.window)->transform(number_in({}));
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& failure) {
    parsed.error = usage_error(failure, "see --help");
  }
  return parsed;
}

TEST(OptionValues, EveryOptionTypeGetsTheCheckedNumber) {
  const Parsed good = parse({"--count", "0x20", "--pid", "010", "--window", "18446744073709551615"});
  ASSERT_FALSE(good.error) << good.error->message;
  EXPECT_EQ(good.count, 32u);
  EXPECT_EQ(good.pid, 10);
  EXPECT_EQ(good.window, UINT64_MAX);
  EXPECT_EQ(parse({}).count, 7u);
}

TEST(OptionValues, ARefusalNamesTheOptionAndKeepsItsHint) {
  const Parsed negative = parse({"--count", "-1"});
  ASSERT_TRUE(negative.error);
  EXPECT_EQ(negative.error->code, ErrorCode::invalid_argument);
  EXPECT_EQ(negative.error->message, "--count: '-1' is not a valid non-negative number (unexpected '-' at column 1)");
  EXPECT_EQ(negative.error->hint, "give a whole number from 0 to 1000000");

  const Parsed window = parse({"--window", "-1"});
  ASSERT_TRUE(window.error);
  EXPECT_EQ(window.error->message, "--window: '-1' is not a valid non-negative number (unexpected '-' at column 1)");

  const Parsed pid = parse({"--pid", "0"});
  ASSERT_TRUE(pid.error);
  EXPECT_EQ(pid.error->message, "--pid: '0' is out of range");
  EXPECT_EQ(pid.error->hint, "give the target's process ID");
  // An int option: what strtoll would take as a huge negative is refused too.
  EXPECT_TRUE(parse({"--pid", "18446744073709551615"}).error);

  // CLI11's own mistakes keep the caller's hint.
  const Parsed unknown = parse({"--no-such-option"});
  ASSERT_TRUE(unknown.error);
  EXPECT_EQ(unknown.error->hint, "see --help");
}

TEST(OptionValues, OneOfRefusesOtherValuesAndKeepsItsSet) {
  std::string backend = "auto";
  std::string free_text;
  CLI::App app{"test"};
  CLI::Option* checked = app.add_option("--backend", backend)->check(one_of(kBackends));
  CLI::Option* free = app.add_option("--start", free_text)->check(not_empty("a function", "--start main"));
  EXPECT_EQ(option_choices(*checked), kBackends);
  EXPECT_TRUE(option_choices(*free).empty());
  auto error_of = [&](std::vector<std::string> args) { return parse_error_of(app, std::move(args)); };
  EXPECT_FALSE(error_of({"--backend", "tracefs"}));
  EXPECT_EQ(backend, "tracefs");
  const auto refused = error_of({"--backend", "ftrace"});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, ErrorCode::invalid_argument);
  EXPECT_EQ(refused->message, "--backend: 'ftrace' is not auto, uprobe_multi, perf_uprobe or tracefs");
  EXPECT_EQ(refused->hint, "give one of auto, uprobe_multi, perf_uprobe or tracefs");
}

TEST(OptionValues, AnEmptyValueIsRefused) {
  std::string spec = "unset";
  std::vector<std::pair<std::string, std::string>> pairs;
  CLI::App app{"test"};
  app.add_option("--fetch", spec)->check(not_empty("a fetch spec", "--fetch 'id=%di:u64'"));
  app.add_option("--fetch-at", pairs)->type_size(2)->check(not_empty("a function or a fetch spec", "x"));
  auto error_of = [&](std::vector<std::string> args) { return parse_error_of(app, std::move(args)); };
  const auto empty = error_of({"--fetch", ""});
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->message, "--fetch: an empty value is not a fetch spec");
  EXPECT_EQ(empty->hint, "e.g. --fetch 'id=%di:u64', or leave the option out");
  EXPECT_TRUE(error_of({"--fetch-at", "validate", ""}));
  EXPECT_TRUE(error_of({"--fetch-at", "", "n=%di:u64"}));
  EXPECT_FALSE(error_of({"--fetch", "id=%di:u64", "--fetch-at", "validate", "n=%di:u64"}));
  EXPECT_EQ(spec, "id=%di:u64");
}

}  // namespace
}  // namespace xref
