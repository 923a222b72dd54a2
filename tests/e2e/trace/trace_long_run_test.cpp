// What a long trace says while it runs: the status line on a terminal
// (counts moving, erased before any other line and at the end, absent when
// stderr is a file or --no-status is given), --heartbeat-ms lines against
// the windows of the same run, and one warning for all the calls of a tree
// that never return, each named one a call in objdump's listing.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "objdump_listing.h"
#include "require.h"
#include "run_xref.h"
#include "sample_target.h"
#include "terminal_run.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

struct Draw {
  double seconds = 0;
  uint64_t windows = 0;
  std::string rest;  // after the counts: "events  lost 0  (stops at ...)"
};

std::vector<Draw> trace_draws(const std::string& terminal) {
  static const std::regex shape(R"(xref: (\d+\.\d) s  ([\d,]+) windows \([\d,]+/s\)  ([\d,]+) events  lost ([\d,]+)  (.*))");
  std::vector<Draw> draws;
  for (const std::string& text : status_draws(terminal)) {
    std::smatch match;
    if (!std::regex_match(text, match, shape)) continue;
    draws.push_back({std::stod(match[1]), grouped_value(match[2]), match[5]});
  }
  return draws;
}

void expect_moving(const std::vector<Draw>& draws) {
  ASSERT_GE(draws.size(), 3u);
  for (size_t i = 1; i < draws.size(); ++i) {
    EXPECT_GE(draws[i].seconds, draws[i - 1].seconds);
    EXPECT_GE(draws[i].windows, draws[i - 1].windows);
  }
  EXPECT_GT(draws.back().windows, draws.front().windows) << "the counts never moved";
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(nlohmann::json::parse(line, nullptr, false));
  return lines;
}

// 1.5 s of windows in JSON lines, with stderr (and stdout, if asked) on a terminal.
TerminalRun trace_on_terminal(const SampleTarget& target, bool stdout_on_terminal) {
  return run_on_terminal(
      {"trace", "--pid", target.pid(), "--start", "handle_request", "--duration-ms", "1500", "--jsonl"},
      stdout_on_terminal);
}

TEST(TraceLongRun, StatusLineMovesOnATerminalAndIsErasedAtTheEnd) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const TerminalRun run = trace_on_terminal(target, false);
  ASSERT_EQ(run.exit_status, 0) << run.terminal;
  const std::vector<Draw> draws = trace_draws(run.terminal);
  expect_moving(draws);
  for (const Draw& draw : draws) EXPECT_EQ(draw.rest.substr(draw.rest.find('(')), "(stops at 1.5 s or Ctrl-C)");
  // The run's own summary counts at least what the last draw did.
  const std::vector<nlohmann::json> lines = json_lines(run.out);
  ASSERT_FALSE(lines.empty());
  ASSERT_EQ(lines.back()["type"], "summary") << run.out;
  EXPECT_GE(lines.back()["summary"]["windows"].get<uint64_t>(), draws.back().windows);
  // What stays on the screen: the attach line, no status line.
  const std::vector<std::string> screen = screen_lines(run.terminal);
  ASSERT_EQ(screen.size(), 1u) << run.terminal;
  EXPECT_EQ(screen[0].rfind("xref: tracing PID " + target.pid(), 0), 0u) << screen[0];
}

// stdout on the same terminal: every window line is written whole, on a
// line of its own, never mixed with the status line.
TEST(TraceLongRun, StatusLineStepsAsideForWindowsOnTheSameTerminal) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const TerminalRun run = trace_on_terminal(target, true);
  ASSERT_EQ(run.exit_status, 0) << run.terminal;
  expect_moving(trace_draws(run.terminal));
  const std::vector<std::string> screen = screen_lines(run.terminal);
  ASSERT_GE(screen.size(), 3u);
  EXPECT_EQ(screen[0].rfind("xref: tracing PID " + target.pid(), 0), 0u) << screen[0];
  uint64_t windows = 0;
  for (size_t i = 1; i < screen.size(); ++i) {
    const auto line = nlohmann::json::parse(screen[i], nullptr, false);
    ASSERT_TRUE(line.is_object()) << "line " << i << " is not what xref wrote: " << screen[i];
    windows += line["type"] == "window";
  }
  const auto summary = nlohmann::json::parse(screen.back());
  ASSERT_EQ(summary["type"], "summary");
  EXPECT_GT(windows, 0u);
  EXPECT_EQ(windows, summary["summary"]["windows"].get<uint64_t>());
}

TEST(TraceLongRun, NoStatusLineWhenStderrIsAFileOrWhenAskedNot) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const XrefRun file = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--duration-ms", "800"});
  ASSERT_EQ(file.exit_status, 0) << file.err;
  EXPECT_EQ(file.err.find('\r'), std::string::npos) << file.err;
  EXPECT_EQ(file.err.find("\033["), std::string::npos) << file.err;
  EXPECT_EQ(file.err.find(" windows ("), std::string::npos) << file.err;
  for (const std::string flag : {"--no-status", "--quiet"}) {
    const TerminalRun quiet = run_on_terminal(
        {"trace", "--pid", target.pid(), "--start", "handle_request", "--duration-ms", "800", flag}, false);
    ASSERT_EQ(quiet.exit_status, 0) << quiet.terminal;
    EXPECT_EQ(quiet.terminal.find("\033[K"), std::string::npos) << flag << ": " << quiet.terminal;
    EXPECT_TRUE(status_draws(quiet.terminal).empty()) << flag;
  }
}

// Each heartbeat counts the windows written before it and their events;
// its times follow the period asked for.
TEST(TraceLongRun, HeartbeatsCountTheWindowsOfTheRun) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const XrefRun run = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--duration-ms", "1100",
                                "--heartbeat-ms", "300", "--jsonl"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const std::vector<nlohmann::json> lines = json_lines(run.out);
  ASSERT_EQ(lines.back()["type"], "summary");
  EXPECT_EQ(lines.back()["summary"]["heartbeats_not_shown"], 0);
  uint64_t written = 0, events = 0, heartbeats = 0, previous_ms = 0;
  for (const auto& line : lines) {
    if (line["type"] == "window") {
      ++written;
      events += line["window"]["events"].size();
    }
    if (line["type"] != "heartbeat") continue;
    ++heartbeats;
    const uint64_t elapsed = line["elapsed_ms"];
    EXPECT_GE(elapsed, 300 * heartbeats) << line.dump();
    EXPECT_GT(elapsed, previous_ms);
    previous_ms = elapsed;
    EXPECT_EQ(line["windows"].get<uint64_t>(), written) << line.dump();
    EXPECT_EQ(line["events"].get<uint64_t>(), events) << line.dump();
    EXPECT_EQ(line["lost_events"], 0);
  }
  EXPECT_EQ(heartbeats, 3u) << run.out;
  // A saved trace with heartbeats reads back.
  char path[] = "/tmp/xref-heartbeats-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_EQ(write(fd, run.out.data(), run.out.size()), static_cast<ssize_t>(run.out.size()));
  close(fd);
  const XrefRun shown = run_xref({"trace", "show", path, "--json"});
  unlink(path);
  ASSERT_EQ(shown.exit_status, 0) << shown.err;
  EXPECT_EQ(shown.json()["data"]["windows"].size(), written) << shown.out.substr(0, 400);

  // In text, one line each.
  const XrefRun text = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--duration-ms", "700",
                                 "--heartbeat-ms", "300"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  static const std::regex heartbeat(R"(heartbeat (\d+) ms  (\d+) windows \(\d+\.\d/s\)  (\d+) events  lost 0)");
  size_t text_heartbeats = 0;
  std::istringstream stream(text.out);
  for (std::string line; std::getline(stream, line);) text_heartbeats += std::regex_match(line, heartbeat);
  EXPECT_EQ(text_heartbeats, 2u) << text.out;
}

// trace_target's tree holds several calls to functions that never return
// (abort, _exit): one warning says how many and names the first ones.
TEST(TraceLongRun, CallsThatNeverReturnAreOneWarning) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess target({XREF_TRACE_TARGET, "--threads", "1"});
  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request",
                                "--callees-of", "svc::handle_request", "--depth", "3", "--max-windows", "1", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json document = run.json();
  std::vector<std::string> noreturn;
  for (const auto& warning : document["warnings"]) {
    if (warning.get<std::string>().find("noreturn") != std::string::npos) noreturn.push_back(warning);
  }
  ASSERT_EQ(noreturn.size(), 1u) << document["warnings"].dump();
  static const std::regex shape(
      R"((\d+) calls do not return into their function \(noreturn callees\), so they have no return probe: at (0x[0-9a-f]+) in .+, (0x[0-9a-f]+) in .+, (0x[0-9a-f]+) in .+ and (\d+) more)");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(noreturn[0], match, shape)) << noreturn[0];
  EXPECT_EQ(std::stoul(match[1]), 3 + std::stoul(match[5]));
  const ObjdumpListing listing(XREF_TRACE_TARGET);
  for (int group : {2, 3, 4}) {
    const uint64_t site = std::stoull(match[group], nullptr, 16);
    const auto found = listing.in_range(site, site + 1);
    ASSERT_EQ(found.size(), 1u) << match[group];
    EXPECT_TRUE(found[0].is_call()) << match[group] << " is " << found[0].mnemonic;
  }
}

}  // namespace
}  // namespace xref::test
