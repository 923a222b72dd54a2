// `xref watch EXPR...`: the front end's part only, in real lldb-19 against
// tests/lldb/fake_helper.py, which asks to evaluate each expression
// (`prepare.evaluate`) and prints back what the plugin answered
// (`prepared.evaluated`, `context.debug_registers_used`). The truth is
// watch_target's own `obj NAME 0xADDR SIZE` lines and its struct layout
// (watch_target.c: limit at 8, name at 16, window at 48, weights at 64),
// for the gcc and the clang -O2 builds. The watch itself (real helper,
// BPF) is tested in lldb_watch_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "lldb_batch.h"

namespace xref::test {
namespace {

std::string target_of(const std::string& compiler) {
  return compiler == "clang" ? XREF_WATCH_TARGET_CLANG : XREF_WATCH_TARGET_GCC;
}

// watch_target's `obj NAME 0xADDR SIZE` lines: NAME -> ADDR.
std::map<std::string, uint64_t> objects(const std::string& output) {
  std::map<std::string, uint64_t> found;
  static const std::regex line("(^|\n)obj ([a-z_]+) 0x([0-9a-f]+) [0-9]+");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    found[(*it)[2]] = std::stoull((*it)[3], nullptr, 16);
  }
  return found;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The fake's line for item INDEX: "fake watch: [I] EXPR = ADDR SIZE TYPE"
// or "fake watch: [I] EXPR: error: TEXT"; the part after "[I] ".
std::vector<std::string> answers(const std::string& output, const std::string& marker) {
  std::vector<std::string> lines;
  const size_t from = output.find(marker);
  if (from == std::string::npos) return lines;
  static const std::regex answer("\nfake watch: \\[([0-9]+)\\] ([^\n]*)");
  const std::string text = output.substr(from);
  for (std::sregex_iterator it(text.begin(), text.end(), answer), end; it != end; ++it) {
    const size_t index = std::stoul((*it)[1]);
    if (index < lines.size()) break;  // the next command's
    lines.push_back((*it)[2]);
  }
  return lines;
}

class LldbWatchEvaluation : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { XREF_REQUIRE(lldb_available(), "lldb-19 (Debian package lldb-19)"); }
};

// Stopped at configure(config, round)'s first instruction: lvalues give
// their own address and size, -l the address they hold and the pointee's
// size; what has no address in the program is one line saying why.
TEST_P(LldbWatchEvaluation, ExpressionsGiveTheProgramsAddressesAndSizes) {
  const std::string lvalues = "xref watch g_total config->limit *buf g_config.name g_config.weights[3] "
                              "'config->weights[round % 8]' config round 'g_total + 1' no_such_name '(round)' '$rsp'";
  const std::string locations = "xref watch -l buf moving_slot g_config.name &g_flag g_config";
  const LldbRun run = run_lldb({"b configure", "run", lvalues, locations},
                               {target_of(GetParam()), "--threads", "1", "--rounds", "2", "--interval-us", "0"},
                               {std::string("XREF_HELPER=") + XREF_FAKE_HELPER});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  const auto object = objects(run.output);
  ASSERT_EQ(object.size(), 7u) << run.output;
  const uint64_t config = object.at("g_config");
  // round is 0 at the first stop: weights[0].
  const std::vector<std::string> expected_lvalues = {
      "g_total = " + hex(object.at("g_total")) + " 8 uint64_t",
      "config->limit = " + hex(config + 8) + " 8 uint64_t",
      "*buf = " + hex(object.at("buf")) + " 1 uint8_t",
      "g_config.name = " + hex(config + 16) + " 32 char[32]",
      "g_config.weights[3] = " + hex(config + 64 + 12) + " 4 uint32_t",
      "config->weights[round % 8] = " + hex(config + 64) + " 4 uint32_t",
  };
  const auto lvalue_answers = answers(run.output, "(lldb) " + lvalues);
  ASSERT_EQ(lvalue_answers.size(), 12u) << run.output;
  for (size_t i = 0; i < expected_lvalues.size(); ++i) EXPECT_EQ(lvalue_answers[i], expected_lvalues[i]) << run.output;
  // At the first instruction both parameters are still in their registers.
  EXPECT_EQ(lvalue_answers[6], "config: error: it lives in register rdi here (optimized code), not in memory: there "
                               "is no address to watch")
      << run.output;
  EXPECT_EQ(lvalue_answers[7].rfind("round: error: it lives in register rsi here", 0), 0u) << run.output;
  EXPECT_EQ(lvalue_answers[8], "g_total + 1: error: not an lvalue: use -l to watch the address it holds") << run.output;
  EXPECT_EQ(lvalue_answers[9], "no_such_name: error: use of undeclared identifier 'no_such_name'") << run.output;
  // Past the variable paths, the evaluator's &(EXPR) of a register is its
  // copy in LLDB's scratch memory: refused, not watched.
  for (size_t i : {10, 11}) {
    EXPECT_NE(lvalue_answers[i].find(": error: LLDB holds its value in a register, not in the program's memory: there "
                                     "is no address to watch"),
              std::string::npos)
        << run.output;
  }

  const auto location_answers = answers(run.output, "(lldb) " + locations);
  ASSERT_EQ(location_answers.size(), 5u) << run.output;
  EXPECT_EQ(location_answers[0], "buf = " + hex(object.at("buf")) + " 1 uint8_t") << run.output;
  EXPECT_EQ(location_answers[1], "moving_slot = " + hex(object.at("moving")) + " 32 moving") << run.output;
  EXPECT_EQ(location_answers[2], "g_config.name = " + hex(config + 16) + " 1 char") << run.output;
  EXPECT_EQ(location_answers[3], "&g_flag = " + hex(object.at("g_flag")) + " 1 uint8_t") << run.output;
  EXPECT_EQ(location_answers[4], "g_config: error: -l takes a pointer or an integer, and this is config: drop -l to "
                                 "watch its own bytes")
      << run.output;
}

// The debug registers LLDB holds: a 1-byte watchpoint (1), a 16-byte one
// over two aligned 8-byte blocks (2), a hardware breakpoint's location (1);
// a disabled watchpoint holds none.
TEST_P(LldbWatchEvaluation, DebugRegistersLldbHoldsAreCounted) {
  const LldbRun run = run_lldb({"b configure", "run", "xref watch g_total", "watchpoint set variable g_flag",
                                "xref watch g_total", "watchpoint set variable g_config.window",
                                "breakpoint set -H -n set_flag", "xref watch g_total", "watchpoint disable 1",
                                "xref watch g_total"},
                               {target_of(GetParam()), "--threads", "1", "--rounds", "2", "--interval-us", "0"},
                               {std::string("XREF_HELPER=") + XREF_FAKE_HELPER});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  std::vector<std::string> counts;
  static const std::regex used("fake watch: debug_registers_used ([0-9]+)");
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), used), end; it != end; ++it) {
    counts.push_back((*it)[1]);
  }
  EXPECT_EQ(counts, (std::vector<std::string>{"0", "1", "4", "3"})) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Compilers, LldbWatchEvaluation, ::testing::Values("gcc", "clang"));

}  // namespace
}  // namespace xref::test
