// `xref probe` on a terminal: a status line whose hits move while the
// probe runs, erased before the result is printed, with the default
// one-second bound it stops at; none when stderr is a file.
#include <gtest/gtest.h>

#include <regex>

#include "require.h"
#include "run_xref.h"
#include "sample_target.h"
#include "terminal_run.h"

namespace xref::test {
namespace {

TEST(ProbeStatusLine, HitsMoveAndTheLineIsGoneBeforeTheResult) {
  XREF_REQUIRE(geteuid() == 0, "root for BPF");
  SampleTarget target;
  const TerminalRun run = run_on_terminal({"probe", "--pid", target.pid(), "validate", "--json"}, false);
  ASSERT_EQ(run.exit_status, 0) << run.terminal;
  static const std::regex shape(R"(xref: (\d+\.\d) s  ([\d,]+) hits \([\d,]+/s\)  lost ([\d,]+)  (.*))");
  std::vector<uint64_t> hits;
  for (const std::string& text : status_draws(run.terminal)) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(text, match, shape)) << text;
    hits.push_back(grouped_value(match[2]));
    EXPECT_EQ(match[4], "(stops at 1.0 s or Ctrl-C)");  // the shell's default bound
  }
  ASSERT_GE(hits.size(), 2u) << run.terminal;
  EXPECT_GT(hits.back(), hits.front()) << "the hits never moved";
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i], hits[i - 1]);
  const auto document = nlohmann::json::parse(run.out);
  EXPECT_GE(document["addresses"][0]["hits"].get<uint64_t>(), hits.back());
  const std::vector<std::string> screen = screen_lines(run.terminal);
  ASSERT_EQ(screen.size(), 1u) << run.terminal;
  EXPECT_EQ(screen[0].rfind("xref: probing PID " + target.pid(), 0), 0u) << screen[0];

  // The result on the same terminal: whole lines, no status text among them.
  const TerminalRun shared = run_on_terminal({"probe", "--pid", target.pid(), "validate"}, true);
  ASSERT_EQ(shared.exit_status, 0) << shared.terminal;
  EXPECT_GE(status_draws(shared.terminal).size(), 2u);
  for (const std::string& line : screen_lines(shared.terminal)) {
    EXPECT_EQ(line.find(" hits ("), std::string::npos) << line;
  }

  const XrefRun file = run_xref({"probe", "--pid", target.pid(), "validate", "--duration-ms", "500"});
  ASSERT_EQ(file.exit_status, 0) << file.err;
  EXPECT_EQ(file.err.find('\r'), std::string::npos) << file.err;
  EXPECT_EQ(file.err.find(" hits ("), std::string::npos) << file.err;
}

}  // namespace
}  // namespace xref::test
