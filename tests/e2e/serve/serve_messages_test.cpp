// What a debugger user reads after a mistake, from the helper a front end
// drives (xref serve over pipes, with a debugger's context): the message,
// its hint and exit status, exactly.
#include <gtest/gtest.h>

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "require.h"
#include "sample_target.h"
#include "serve_client.h"

namespace xref::test {
namespace {

void handshake(ServeClient& helper) {
  const auto hello = helper.read();
  ASSERT_EQ(hello["type"], "hello") << hello.dump();
  const auto answer = helper.request("hello", {{"protocol", 1}, {"client", "serve_messages_test"}});
  ASSERT_EQ(answer["result"]["protocol"], 1) << answer.dump();
}

void expect_error(const nlohmann::json& answer, const std::string& code, int status, const std::string& message,
                  const std::string& hint) {
  ASSERT_TRUE(answer.contains("error")) << answer.dump();
  EXPECT_EQ(answer["error"]["code"], code) << answer.dump();
  EXPECT_EQ(answer["error"]["exit_status"], status) << answer.dump();
  EXPECT_EQ(answer["error"]["message"], message) << answer.dump();
  EXPECT_EQ(answer["error"]["hint"], hint) << answer.dump();
}

nlohmann::json start(ServeClient& helper, const std::vector<std::string>& argv, const nlohmann::json& context) {
  return helper.request("session.start", {{"argv", argv}, {"context", context}});
}

TEST(ServeMessages, StartIsRequiredSaysHereAndBreakpointsInADebugger) {
  SampleTarget target;
  ServeClient helper;
  handshake(helper);
  expect_error(start(helper, {"trace", "--functions", "validate"}, {{"pid", target.process.pid()}}),
               "invalid_argument", 2, "--start is required",
               "name the function that opens a window (--start FUNCTION, or --start bp:N at breakpoint N's "
               "locations), or open one on the stopped thread now with --here");
}

TEST(ServeMessages, HereWithAnotherPidNamesBothProcesses) {
  SampleTarget target;
  ServeClient helper;
  handshake(helper);
  const std::string own = target.pid();
  const nlohmann::json context = {
      {"pid", target.process.pid()},
      {"here", {{"tid", target.process.pid()}, {"pc", "0x1000"}, {"cfa", "0x7ffc0000"}}}};
  expect_error(start(helper, {"trace", "-p", "1", "--here"}, context), "invalid_argument", 2,
               "--here opens the window on the stopped thread of process " + own +
                   ", the debugger's; --pid 1 names another process",
               "leave --pid out, or trace process 1 with --start FUNCTION");
}

TEST(ServeMessages, UnknownOptionsAndDurationsAsInTheShell) {
  SampleTarget target;
  ServeClient helper;
  handshake(helper);
  const nlohmann::json context = {{"pid", target.process.pid()}};
  expect_error(start(helper, {"probe", "validate", "--durration-ms", "5"}, context), "invalid_argument", 2,
               "`xref probe` has no option --durration-ms", "did you mean --duration-ms? see `xref probe --help`");
  expect_error(start(helper, {"trace", "--start", "handle_request", "--duration", "5"}, context), "invalid_argument",
               2, "--duration: '5' has no unit",
               "give a whole number and a unit: 5s, 5ms or 5m (or --duration-ms N, in milliseconds)");
  expect_error(helper.request("command", {{"argv", {"maps", "--colour"}}, {"context", context}})["result"]["document"],
               "invalid_argument", 2, "`xref maps` has no option --colour", "see `xref maps --help`");
}

// In a debugger a session runs until stopped, unless its words give a
// bound: --duration is such a bound, as --duration-ms is.
TEST(ServeMessages, ASessionWithDurationEndsOnItsOwn) {
  XREF_REQUIRE(geteuid() == 0, "root for BPF");
  SampleTarget target;
  ServeClient helper;
  handshake(helper);
  const auto started = start(helper, {"probe", "validate", "--duration", "300ms"}, {{"pid", target.process.pid()}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  const auto ended = helper.await([session](const nlohmann::json& message) {
    return message.value("event", "") == "session_ended" && message["session"] == session;
  });
  EXPECT_EQ(ended["stop_reason"], "duration") << ended.dump();
  EXPECT_EQ(ended["document"]["limits"]["duration_ms"], 300) << ended.dump();
}

// A helper that is not root: the fix a debugger user has is the front
// end's `xref helper sudo -n PATH serve`, with this helper's path.
TEST(ServeMessages, NonRootHelperAdvisesXrefHelperSudo) {
  XREF_REQUIRE(geteuid() == 0, "root, to run the helper and its target as nobody");
  const std::vector<std::string> nobody = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  SampleTarget target(nobody);
  ServeClient helper({}, {}, nobody);
  handshake(helper);
  char path[PATH_MAX];
  ASSERT_NE(realpath(XREF_BINARY, path), nullptr);
  const auto answer = start(helper, {"trace", "--start", "handle_request"}, {{"pid", target.process.pid()}});
  ASSERT_TRUE(answer.contains("error")) << answer.dump();
  EXPECT_EQ(answer["error"]["code"], "permission_denied") << answer.dump();
  EXPECT_EQ(answer["error"]["exit_status"], 9);
  EXPECT_EQ(answer["error"]["hint"], "the helper runs as uid 65534, not root: start it through sudo with `xref helper "
                                     "sudo -n " + std::string(path) + " serve` (docs/lldb.md, docs/gdb.md: \"The "
                                     "helper and privileges\")")
      << answer.dump();
}

}  // namespace
}  // namespace xref::test
