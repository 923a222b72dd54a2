// The plugin in real lldb-19 against tests/lldb/fake_helper.py (protocol 2):
// what only the front end does, without BPF. The fake names nothing itself:
// every function, offset and source line below is what LLDB sent it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "lldb_batch.h"

namespace xref::test {
namespace {

std::vector<std::string> fake_environment(const std::string& log = "") {
  std::vector<std::string> environment = {std::string("XREF_HELPER=") + XREF_FAKE_HELPER};
  if (!log.empty()) environment.push_back("FAKE_HELPER_LOG=" + log);
  return environment;
}

std::vector<std::string> service(const std::string& requests = "3") {
  return {XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", requests, "--interval-us", "1000"};
}

// "sample_service.c:N" of the line holding `text`.
std::string source_line(const std::string& text) {
  std::ifstream file(XREF_SAMPLE_SERVICE_SOURCE);
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.find(text) != std::string::npos) return "sample_service.c:" + std::to_string(number);
  }
  return "sample_service.c:?";
}

class LldbFakeHelper : public ::testing::Test {
 protected:
  void SetUp() override { XREF_REQUIRE(lldb_available(), "lldb-19 (Debian package lldb-19)"); }
};

// The requests with `method` the fake received.
std::vector<nlohmann::json> requests(const std::string& log, const std::string& method) {
  std::vector<nlohmann::json> found;
  std::ifstream file(log);
  std::string line;
  while (std::getline(file, line)) {
    auto message = nlohmann::json::parse(line, nullptr, false);
    if (message.is_object() && message.value("method", "") == method) found.push_back(message);
  }
  return found;
}

// The live addresses the helper asked about are named with LLDB's symbols
// and lines (sent with `names`), and the text printed at the next stop is
// the helper's, once.
TEST_F(LldbFakeHelper, WindowsPrintAtTheNextStopWithLldbNames) {
  TempFile log("names-log");
  const LldbRun run = run_lldb({"b handle_request", "run", "xref trace --here", "continue", "xref show"}, service(),
                               fake_environment(log.path));
  EXPECT_EQ(run.exit_status, 0) << run.output;
  // Two helpers greeted: the one `plugin load` asked for the Tab-completion
  // table (closed at once; this fake knows no `complete`), then the session's,
  // asked after the first command for commands the plugin lacks.
  const auto hello = requests(log.path, "hello");
  ASSERT_EQ(hello.size(), 2u);
  EXPECT_EQ(requests(log.path, "complete").size(), 2u);
  for (const auto& greeting : hello) {
    EXPECT_EQ(greeting["params"]["protocol"], 2);
    EXPECT_EQ(greeting["params"]["names"], true);
  }
  EXPECT_TRUE(run.has("xref: session 1 tracing PID ")) << run.output;
  const std::string stop = run.after("(lldb) continue");
  EXPECT_TRUE(std::regex_search(stop, std::regex("  1:1    > validate  from handle_request\\+0x[0-9a-f]+ at " +
                                                 source_line("if (!validate(r))") + "  r=0x1234")))
      << run.output;
  EXPECT_TRUE(std::regex_search(stop, std::regex("  1:2    < validate  at validate\\+0x10 at sample_service.c:[0-9]+")))
      << run.output;
  // What LLDB sent: its function names, offsets, full source paths and lines.
  bool named_call_site = false;
  for (const auto& message : requests(log.path, "names")) {
    for (const auto& name : message["params"]["names"]) {
      if (name.value("function", "") != "handle_request" || name.value("offset", 0) == 0) continue;
      const std::string file = name.value("file", "");
      named_call_site |= file.size() > 17 && file.front() == '/' &&
                         file.substr(file.size() - 16) == "sample_service.c" &&
                         "sample_service.c:" + std::to_string(name.value("line", 0)) == source_line("if (!validate(r))");
    }
  }
  EXPECT_TRUE(named_call_site) << run.output;
  // Printed once: `xref show` afterwards has nothing new.
  EXPECT_EQ(run.count("window 1 (session 1)"), 1u) << run.output;
}

TEST_F(LldbFakeHelper, BreakAtAnEventSetsTheBreakpointAtItsLiveCallSite) {
  const LldbRun run = run_lldb({"b handle_request", "run", "xref trace --here", "continue", "xref stop",
                                "xref break 1:1", "breakpoint delete 1", "continue", "register read pc"},
                               service(), fake_environment());
  EXPECT_EQ(run.exit_status, 0) << run.output;
  const std::string line = run.after("Breakpoint 2: 0x");
  ASSERT_FALSE(line.empty()) << run.output;
  const std::string address = line.substr(14, line.find(' ', 14) - 14);
  EXPECT_TRUE(std::regex_search(line, std::regex("^Breakpoint 2: 0x[0-9a-f]+ handle_request\\+0x[0-9a-f]+ at " +
                                                 source_line("if (!validate(r))"))))
      << run.output;
  EXPECT_NE(line.find("(the call site of validate, event 1:1)"), std::string::npos) << run.output;
  EXPECT_TRUE(run.has("stop reason = breakpoint 2.1")) << run.output;
  // The process stopped exactly there.
  char expected[64];
  std::snprintf(expected, sizeof expected, "rip = 0x%016llx", std::stoull(address, nullptr, 16));
  EXPECT_TRUE(run.has(expected)) << expected << "\n" << run.output;
}

// The helper's `prepare`: breakpoint 1 goes off before the probes go in
// (the prepared run's context says so), stays off while the session runs,
// and comes back when it ends.
TEST_F(LldbFakeHelper, StartAtABreakpointDisablesItUntilTheSessionEnds) {
  TempFile log("start-bp-log");
  const LldbRun run = run_lldb({"b handle_request", "run", "xref trace --start bp:1 --functions validate",
                                "breakpoint list 1", "xref stop", "breakpoint list 1"},
                               service(), fake_environment(log.path));
  const auto runs = requests(log.path, "run");
  ASSERT_GE(runs.size(), 2u);
  EXPECT_FALSE(runs[0]["params"].contains("prepared"));
  EXPECT_EQ(runs[0]["params"]["context"]["breakpoints"][0]["enabled"], true);
  EXPECT_EQ(runs[1]["params"]["prepared"]["disabled"], nlohmann::json::array({1}));
  EXPECT_EQ(runs[1]["params"]["context"]["breakpoints"][0]["id"], 1);
  EXPECT_EQ(runs[1]["params"]["context"]["breakpoints"][0]["enabled"], false);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  const std::string between = run.after("xref trace --start").substr(0, run.after("xref trace --start").find("(lldb) xref stop"));
  EXPECT_NE(between.find("Options: disabled"), std::string::npos) << run.output;
  const std::string stopped = run.after("(lldb) xref stop");
  EXPECT_NE(stopped.find("xref: session 1 ended (stopped)"), std::string::npos) << run.output;
  EXPECT_NE(stopped.find("xref: breakpoint 1 re-enabled: session 1 ended"), std::string::npos) << run.output;
  EXPECT_EQ(stopped.find("Options: disabled"), std::string::npos) << run.output;
}

TEST_F(LldbFakeHelper, StopAtEndIsAOneShotThreadBreakpointAtTheReturnAddress) {
  TempFile log("stop-at-end-log");
  const LldbRun run = run_lldb({"b handle_request", "run", "xref trace --here --stop-at-end", "breakpoint list -v 2"},
                               service(), fake_environment(log.path));
  // Set before the session starts, so the helper's collision check sees it.
  const auto runs = requests(log.path, "run");
  ASSERT_GE(runs.size(), 2u);
  const nlohmann::json& prepared = runs[1]["params"]["prepared"]["stop_at_end"];
  EXPECT_EQ(prepared["breakpoint"], 2);
  ASSERT_EQ(runs[1]["params"]["context"]["breakpoints"].size(), 2u);
  EXPECT_EQ(runs[1]["params"]["context"]["breakpoints"][1]["id"], 2);
  EXPECT_EQ(runs[1]["params"]["context"]["breakpoints"][1]["locations"][0]["address"], prepared["address"]);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  const std::string listing = run.after("(lldb) breakpoint list -v 2");
  EXPECT_NE(listing.find("worker_main"), std::string::npos) << run.output;  // the caller's return address
  EXPECT_NE(listing.find("one-shot"), std::string::npos) << run.output;
  // On the selected thread, as the helper was told.
  char thread[64];
  std::snprintf(thread, sizeof thread, "tid: 0x%llx", prepared.value("thread", 0ull));
  EXPECT_NE(listing.find(thread), std::string::npos) << thread << "\n" << run.output;
  EXPECT_NE(listing.find("Condition: $rsp == 0x"), std::string::npos) << run.output;
}

TEST_F(LldbFakeHelper, KilledHelperIsOneClearErrorAndBreakpointsComeBack) {
  const LldbRun run = run_lldb({"b handle_request", "b settle", "run", "xref trace --start bp:1 --functions validate",
                                kill_helper_command(), "continue", "bt 1", "breakpoint list 1", "breakpoint delete --force",
                                "continue"},
                               service(), fake_environment());
  EXPECT_EQ(run.exit_status, 0) << run.output;
  EXPECT_EQ(run.count("was killed by signal 9 (SIGKILL)"), 1u) << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 1 re-enabled: session 1 ended")) << run.output;
  EXPECT_TRUE(run.has("stop reason = breakpoint 2.1")) << run.output;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
}

TEST_F(LldbFakeHelper, WindowsOfASessionEndedByTheProcessExitArePrinted) {
  const LldbRun run = run_lldb({"b handle_request", "run", "xref trace --start bp:1", "continue",
                                "script import time; time.sleep(1)", "xref sessions"},
                               service(), fake_environment());
  EXPECT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
  // Printed when the process exited, with no command asking.
  EXPECT_TRUE(run.has("  2:1    > validate  from ")) << run.output;
  EXPECT_TRUE(run.has("xref: session 1 ended (target_exited)")) << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 1 re-enabled: session 1 ended")) << run.output;
  EXPECT_EQ(run.count("window 2 (session 1)"), 1u) << run.output;
}

TEST_F(LldbFakeHelper, HelpComesFromTheHelper) {
  const LldbRun run = run_lldb({"help xref", "xref trace --help", "xref maps --help"}, {}, fake_environment());
  EXPECT_EQ(run.exit_status, 0) << run.output;
  for (const char* name : {"trace", "probe", "watch", "sessions", "show", "stop", "doctor", "maps", "resolve", "break", "helper"}) {
    EXPECT_TRUE(std::regex_search(run.output, std::regex(std::string("\n +") + name + " +-- "))) << name << "\n" << run.output;
  }
  EXPECT_TRUE(run.has("fake trace help")) << run.output;
  EXPECT_TRUE(run.has("fake help for maps")) << run.output;
}

TEST_F(LldbFakeHelper, HelperProblemsAreOneClearError) {
  LldbRun run = run_lldb({"xref helper /nonexistent/xref serve", "xref doctor"}, {});
  EXPECT_NE(run.exit_status, 0);
  EXPECT_TRUE(run.has("error: xref: cannot start the helper '/nonexistent/xref serve': No such file or directory; "
                      "set it with `xref helper PATH`"))
      << run.output;
  std::vector<std::string> environment = fake_environment();
  environment.push_back("FAKE_HELPER_PROTOCOL=1");
  run = run_lldb({"xref doctor"}, {}, environment);
  EXPECT_NE(run.exit_status, 0);
  EXPECT_TRUE(run.has("speaks protocol 1, this plugin speaks protocol 2")) << run.output;
}

TEST_F(LldbFakeHelper, LeavingLldbClosesTheHelpersInput) {
  TempFile log("fake-log");
  const LldbRun run = run_lldb({"xref doctor"}, {}, fake_environment(log.path));
  EXPECT_EQ(run.exit_status, 0) << run.output;
  std::ifstream file(log.path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // Every helper started (the completion table's at load, the command's)
  // had its input closed.
  const size_t greeted = requests(log.path, "hello").size();
  size_t closed = 0;
  for (size_t at = text.find("stdin closed"); at != std::string::npos; at = text.find("stdin closed", at + 1)) ++closed;
  EXPECT_EQ(greeted, 2u) << text;
  EXPECT_EQ(closed, greeted) << text;
}

}  // namespace
}  // namespace xref::test
