// Bad input refused before anything touches the target: numbers that are
// negative, past 64 bits, past an option's range or not numbers at all, for
// every command; a thread's ID given as --pid; an address in data given as
// code; an empty fetch spec; and refusals that name their real cause
// (tracefs as non-root, a process even root may not read).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "command_output.h"
#include "require.h"
#include "run_xref.h"
#include "sample_target.h"
#include "serve_client.h"

namespace xref::test {
namespace {

// A target nothing was attached to: alive, running, and no uprobe ever
// hit it (the kernel maps "[uprobes]" into a process at its first hit,
// and the sample service calls handle_request every 2 ms).
void expect_untouched(const SampleTarget& target) {
  const std::string proc = "/proc/" + target.pid();
  EXPECT_TRUE(std::filesystem::exists(proc));
  std::ifstream maps(proc + "/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("[uprobes]"), std::string::npos) << "a uprobe was hit in the target";
}

// One refusal: exit status, one line on stderr that starts with what is
// expected and holds `also`; the same error object under --json.
void expect_refused(std::vector<std::string> args, int status, const std::string& starts,
                    const std::string& also = {}) {
  const XrefRun text = run_xref(args);
  const std::string command = [&] {
    std::string joined;
    for (const auto& arg : args) joined += " " + arg;
    return joined;
  }();
  EXPECT_EQ(text.exit_status, status) << command << "\n" << text.err;
  EXPECT_EQ(text.err.rfind("xref: error: " + starts, 0), 0u) << command << "\n" << text.err;
  EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << command << "\n" << text.err;
  EXPECT_NE(text.err.find(also), std::string::npos) << command << "\n" << text.err;
  EXPECT_EQ(text.err.find("xref: tracing"), std::string::npos) << command;
  EXPECT_EQ(text.out, "") << command;

  args.push_back("--json");
  const XrefRun json = run_xref(args);
  EXPECT_EQ(json.exit_status, status) << command << " --json\n" << json.out << json.err;
  const auto document = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(document.is_object()) << command << " --json\n" << json.out;
  const auto& error = document["error"];
  ASSERT_TRUE(error.is_object()) << json.out;
  EXPECT_EQ(error["exit_status"], status) << json.out;
  EXPECT_EQ(error["message"].get<std::string>().rfind(starts, 0), 0u) << json.out;
  EXPECT_NE((error["message"].get<std::string>() + "; " + error.value("hint", "")).find(also), std::string::npos)
      << json.out;
}

std::vector<std::string> trace(const SampleTarget& target, std::vector<std::string> extra) {
  std::vector<std::string> args = {"trace", "--pid", target.pid(), "--start", "handle_request"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(BadInputCli, NegativeOverflowingAndJunkNumbersAreRefusedForEveryOption) {
  SampleTarget target;
  const std::string negative = "is not a valid non-negative number";
  for (const std::string value : {"-1", "18446744073709551616", "99999999999999999999", "12abc", ""}) {
    const std::string why = value == "-1" || value == "12abc" || value.empty() ? negative : "is out of range";
    expect_refused(trace(target, {"--duration-ms", value}), 2, "--duration-ms: '" + value + "' " + why,
                   "from 0 (no limit) to 31536000000");
  }
  expect_refused(trace(target, {"--duration-ms", "31536000001"}), 2, "--duration-ms: '31536000001' is out of range");
  // Not "at most 1000000": -1 is no number of windows at all.
  expect_refused(trace(target, {"--max-windows", "-1"}), 2, "--max-windows: '-1' " + negative,
                 "give a whole number from 0 to 1000000");
  expect_refused(trace(target, {"--max-windows", "1000001"}), 2, "--max-windows: '1000001' is out of range",
                 "from 0 to 1000000");
  expect_refused(trace(target, {"--max-events", "-5"}), 2, "--max-events: '-5' " + negative, "0 to 1000000000");
  expect_refused(trace(target, {"--ringbuf-bytes", "-4096"}), 2, "--ringbuf-bytes: '-4096' " + negative,
                 "power of two from 4096 to 1073741824");
  expect_refused(trace(target, {"--ringbuf-bytes", "5000"}), 2, "--ringbuf-bytes 5000 is not a power of two");
  expect_refused(trace(target, {"--callees-of", "handle_request", "--depth", "-1"}), 2, "--depth: '-1' " + negative,
                 "from 1 to 16");
  expect_refused(trace(target, {"--callees-of", "handle_request", "--depth", "4294967297"}), 2,
                 "--depth: '4294967297' is out of range", "from 1 to 16");
  expect_refused({"trace", "--pid", "-" + target.pid(), "--start", "handle_request"}, 2,
                 "--pid: '-" + target.pid() + "' " + negative);
  expect_refused({"maps", "--pid", "4294967296"}, 2, "--pid: '4294967296' is out of range");
  expect_refused({"resolve", "--pid", "1x", "0x1000"}, 2, "--pid: '1x' " + negative);
  expect_refused({"memscan", "--pid", target.pid(), "--max-hits", "-1", "0x1"}, 2, "--max-hits: '-1' " + negative,
                 "from 1 to 4096");
  expect_refused({"memscan", "--pid", target.pid(), "--before-words", "99999999999999999999", "0x1"}, 2,
                 "--before-words: '99999999999999999999' is out of range", "from 0 to 64");
  expect_refused({"memscan", "--pid", target.pid(), "--max-read-bytes", "0x", "0x1"}, 2,
                 "--max-read-bytes: '0x' " + negative);
  expect_untouched(target);
}

TEST(BadInputCli, SavedTraceWindowsAndContextAreNumbersToo) {
  // Refused as options, before the file is read: "no window 18446744073709551615" was the old answer.
  for (const std::string command : {"show", "diff"}) {
    std::vector<std::string> args = {"trace", command, "/dev/null"};
    if (command == "diff") args.push_back("/dev/null");
    std::vector<std::string> window = args;
    window.insert(window.end(), {"--window", "-1"});
    const XrefRun run = run_xref(window);
    EXPECT_EQ(run.exit_status, 2) << run.err;
    EXPECT_EQ(run.err.rfind("xref: error: --window: '-1' is not a valid non-negative number", 0), 0u) << run.err;
    EXPECT_EQ(run.err.find("no window"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("; give a window_id of the trace"), std::string::npos) << run.err;
  }
  const XrefRun window_b = run_xref({"trace", "diff", "/dev/null", "/dev/null", "--window-b", "-2", "--json"});
  EXPECT_EQ(window_b.exit_status, 2);
  EXPECT_EQ(window_b.json()["error"]["code"], "invalid_argument");
  EXPECT_EQ(window_b.json()["error"]["message"].get<std::string>().rfind("--window-b: '-2' is not a valid", 0), 0u)
      << window_b.out;
  const XrefRun context = run_xref({"trace", "diff", "/dev/null", "/dev/null", "--context", "-1"});
  EXPECT_EQ(context.exit_status, 2);
  EXPECT_EQ(context.err.rfind("xref: error: --context: '-1' is not a valid non-negative number", 0), 0u)
      << context.err;
  const XrefRun depth = run_xref({"trace", "show", "/dev/null", "--tree", "--depth", "0"});
  EXPECT_EQ(depth.exit_status, 2);
  EXPECT_EQ(depth.err.rfind("xref: error: --depth: '0' is out of range; give a whole number from 1 to 16", 0), 0u)
      << depth.err;
}

TEST(BadInputCli, PidZeroIsOneShortLineThatSaysWhatToDo) {
  for (const std::string command : {"trace", "maps"}) {
    std::vector<std::string> args = {command, "--pid", "0"};
    if (command == "trace") args.insert(args.end(), {"--start", "main"});
    const XrefRun run = run_xref(args);
    EXPECT_EQ(run.exit_status, 2);
    EXPECT_EQ(run.err,
              "xref: error: --pid: '0' is out of range; give the target's process ID (1 to 4194303), e.g. from "
              "`pgrep NAME`\n");
  }
}

TEST(BadInputCli, NumberOptionsThroughServeAreCheckedTheSameWay) {
  SampleTarget target;
  ServeClient helper;
  ASSERT_EQ(helper.read()["type"], "hello");
  ASSERT_EQ(helper.request("hello", {{"protocol", 1}})["result"]["protocol"], 1);
  const nlohmann::json context = {{"pid", target.process.pid()}};
  const auto session = helper.request(
      "session.start", {{"argv", {"trace", "--start", "handle_request", "--duration-ms", "-1"}}, {"context", context}});
  EXPECT_EQ(session["error"]["code"], "invalid_argument") << session.dump();
  EXPECT_EQ(session["error"]["exit_status"], 2);
  EXPECT_EQ(session["error"]["message"], "--duration-ms: '-1' is not a valid non-negative number (unexpected '-' at "
                                         "column 1)");
  EXPECT_EQ(session["error"]["hint"], "give milliseconds from 0 (no limit) to 31536000000 (a year)");
  const auto memscan = helper.request(
      "command", {{"argv", {"memscan", "--max-hits", "18446744073709551617", "0x1"}}, {"context", context}});
  EXPECT_EQ(memscan["result"]["exit_status"], 2) << memscan.dump();
  EXPECT_EQ(memscan["result"]["document"]["error"]["message"],
            "--max-hits: '18446744073709551617' is out of range (more than 64 bits)");
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
  expect_untouched(target);
}

TEST(BadInputCli, AThreadIdNamesItsProcess) {
  SampleTarget target;
  std::string thread;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + target.pid() + "/task")) {
    if (entry.path().filename() != target.pid()) thread = entry.path().filename();
  }
  ASSERT_FALSE(thread.empty()) << "the sample service runs worker threads";
  const std::string says = thread + " is a thread ID: the thread belongs to process " + target.pid();
  expect_refused({"maps", "--pid", thread}, 17, says, "pass the process's PID, " + target.pid());
  expect_refused({"trace", "--pid", thread, "--start", "handle_request"}, 17, says);
  const XrefRun json = run_xref({"resolve", "--pid", thread, "0x1000", "--json"});
  EXPECT_EQ(json.json()["error"]["code"], "pid_is_thread");
  expect_untouched(target);
}

TEST(BadInputCli, AnAddressInDataIsNotCode) {
  SampleTarget target;
  const std::map<std::string, std::string> data = {{"sample_marker", ".data"},  // nm: d
                                                   {"unit_price.0", ".rodata"},  // r
                                                   {"stop_requested", ".bss"}};  // b
  for (const auto& [symbol, section] : data) {
    ASSERT_TRUE(target.nm.count(symbol)) << symbol;
    const std::string va = hex(target.nm.at(symbol));
    expect_refused({"trace", "--pid", target.pid(), "--start", va}, 13,
                   "--start " + va + " is in " + section + ", not code");
    expect_refused(trace(target, {"--stop", va}), 13, "--stop " + va + " is in " + section + ", not code");
    expect_refused(trace(target, {"--functions", va}), 13, "--functions " + va + " is in " + section + ", not code");
    expect_refused(trace(target, {"--fetch-at", va, "x=%di:u64"}), 13,
                   "--fetch-at " + va + " is in " + section + ", not code");
  }
  // Outside the binary is still unmapped.
  expect_refused({"trace", "--pid", target.pid(), "--start", "0x7000000"}, 8, "--start 0x7000000 is not a known");
  expect_untouched(target);
}

TEST(BadInputCli, AnEmptyFetchSpecIsRefused) {
  SampleTarget target;
  expect_refused(trace(target, {"--fetch", ""}), 2, "--fetch: an empty value is not a fetch spec",
                 "leave the option out");
  expect_refused(trace(target, {"--fetch-at", "handle_request", ""}), 2, "--fetch-at: an empty value");
  expect_refused(trace(target, {"--fetch-ret", "handle_request", ""}), 2, "--fetch-ret: an empty value");
  expect_refused(trace(target, {"--fetch-at", "", "x=%di:u64"}), 2, "--fetch-at: an empty value");
  expect_untouched(target);
}

// xref and the target as nobody: tracefs is mounted but open to root only.
TEST(BadInputCli, TracefsAsNonRootIsPermissionDeniedNotUnmounted) {
  XREF_REQUIRE(getuid() == 0, "root, to run xref and its target as another user");
  XREF_REQUIRE(std::filesystem::exists("/sys/kernel/tracing/uprobe_events"), "tracefs mounted");
  const std::string nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  TargetProcess service({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", XREF_SAMPLE_SERVICE,
                         "--threads", "1", "--requests", "0", "--interval-us", "2000"});
  const std::string command = nobody + shell_quote(XREF_BINARY) + " trace --pid " + std::to_string(service.pid()) +
                              " --start handle_request --backend tracefs --duration-ms 2000 --json; echo \" $?\"";
  const std::string output = command_output(command + " 2>/dev/null");
  const size_t status_at = output.rfind(' ');
  EXPECT_EQ(output.substr(status_at + 1), "9\n") << output;
  const auto document = nlohmann::json::parse(output.substr(0, status_at), nullptr, false);
  ASSERT_TRUE(document.is_object()) << output;
  EXPECT_EQ(document["error"]["code"], "permission_denied") << output;
  const std::string message = document["error"]["message"];
  EXPECT_NE(message.find("/sys/kernel/tracing/uprobe_events: Permission denied"), std::string::npos) << message;
  EXPECT_EQ(message.find("not mounted"), std::string::npos) << message;
  EXPECT_NE(document["error"]["hint"].get<std::string>().find("root"), std::string::npos);
}

// Root may still be refused a process (a security module, a sandbox, a
// missing capability): the error says so and never tells root to run as
// root. Where root may read PID 1, there is nothing to refuse.
TEST(BadInputCli, RootRefusedAProcessIsNotToldToRunAsRoot) {
  XREF_REQUIRE(geteuid() == 0, "root");
  const XrefRun run = run_xref({"maps", "--pid", "1"});
  if (run.exit_status == 0) GTEST_SKIP() << "root may read PID 1 here";
  EXPECT_EQ(run.exit_status, 9) << run.err;
  EXPECT_EQ(run.err.find("run xref as root"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("although xref runs as root"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

}  // namespace
}  // namespace xref::test
