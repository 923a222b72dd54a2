// The plugin in real lldb-19 (batch mode) with the real helper (`xref
// serve`, found next to the plugin in the build tree) tracing
// sample_service with BPF; windows are compared with the requests the
// service records itself (--record).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "lldb_batch.h"
#include "objdump_listing.h"

namespace xref::test {
namespace {

const std::set<std::string>& recorded_functions() {
  static const std::set<std::string> names = {"handle_request", "validate", "price_order", "apply_fee",
                                              "route_even",     "route_odd", "settle"};
  return names;
}

std::vector<std::string> service(const std::string& record, const std::string& requests = "12") {
  return {XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", requests, "--interval-us", "2000", "--record", record};
}

// The entries of a window, limited to the functions the service records.
std::vector<std::string> entered_functions(const ShownWindow& window) {
  std::vector<std::string> names;
  for (const auto& event : window.events) {
    if (event.mark == '>' && recorded_functions().count(event.name)) names.push_back(event.name);
  }
  return names;
}

std::vector<std::string> recorded_sequence(const std::vector<RecordedCall>& calls) {
  std::vector<std::string> names;
  for (const auto& call : calls) names.push_back(call.function);
  return names;
}

uint64_t window_tid(const ShownWindow& window) {
  std::smatch thread;
  if (!std::regex_search(window.header, thread, std::regex("  thread ([0-9]+)"))) return 0;
  return std::stoull(thread[1]);
}

bool complete(const ShownWindow& window) { return std::regex_search(window.header, std::regex("  complete( |$)")); }

// Every entry has its return, in nesting order.
void expect_balanced(const ShownWindow& window) {
  std::vector<std::string> open;
  for (const auto& event : window.events) {
    if (event.mark == '>' && event.rest.find("[tail]") == std::string::npos) {
      open.push_back(event.name);
    } else if (event.mark == '<') {
      ASSERT_FALSE(open.empty()) << event.reference;
      EXPECT_EQ(open.back(), event.name) << event.reference;
      open.pop_back();
    }
  }
}

class LldbPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    XREF_REQUIRE(lldb_available(), "lldb-19 (Debian package lldb-19)");
    XREF_REQUIRE(geteuid() == 0, "BPF (run as root)");
  }
};

// (a) `help xref` names every command; `xref COMMAND --help` is the
// helper's own help, from the options that parse the words.
TEST(LldbPluginLoad, HelpListsEveryCommandAndTheHelperHelpsWithEach) {
  XREF_REQUIRE(lldb_available(), "lldb-19 (Debian package lldb-19)");
  const LldbRun run = run_lldb({"help xref", "xref trace --help", "xref break --help", "xref help"}, {},
                               {std::string("XREF_HELPER=") + XREF_BINARY + " serve"});
  EXPECT_EQ(run.exit_status, 0) << run.output;
  for (const char* name : {"trace", "probe", "sessions", "show", "stop", "doctor", "maps", "resolve", "break", "helper"}) {
    EXPECT_TRUE(std::regex_search(run.output, std::regex(std::string("\n +") + name + " +-- "))) << name << "\n" << run.output;
  }
  const std::string trace_help = run.after("(lldb) xref trace --help");
  EXPECT_NE(trace_help.find("--stop-at-end"), std::string::npos) << run.output;
  EXPECT_NE(trace_help.find("--start"), std::string::npos) << run.output;
  EXPECT_NE(run.after("(lldb) xref break --help").find("--session"), std::string::npos) << run.output;
  const std::string commands = run.after("(lldb) xref help");
  for (const char* name : {"trace", "probe", "show", "sessions", "stop", "break", "maps", "doctor"}) {
    EXPECT_NE(commands.find(name), std::string::npos) << name << "\n" << run.output;
  }
}

// (b) Stopped in handle_request, trace the rest of this call; the window
// prints at the next stop (the next request's breakpoint hit).
TEST_F(LldbPlugin, HereWindowPrintsAtTheNextStopAndMatchesTheRecord) {
  TempFile record("here");
  const LldbRun run = run_lldb(
      {"b handle_request", "run", "xref trace --here", "continue"},
      service(record.path));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("xref: session 1 tracing PID [0-9]+: [0-9]+ probes? ")))
      << run.output;
  const auto windows = shown_windows(run.after("(lldb) continue"));
  ASSERT_EQ(windows.size(), 1u) << run.output;
  const ShownWindow& window = windows[0];
  EXPECT_TRUE(complete(window)) << run.output;
  const auto requests = read_sample_record(record.path);
  const auto request = requests.find({window_tid(window), 0});
  ASSERT_NE(request, requests.end()) << "no record of request 0 on the window's thread\n" << run.output;
  std::vector<std::string> expected = recorded_sequence(request->second);
  ASSERT_FALSE(expected.empty());
  expected.erase(expected.begin());  // handle_request itself: the window opened inside it
  std::vector<std::string> seen = entered_functions(window);
  if (!seen.empty() && seen.front() == "handle_request") seen.erase(seen.begin());
  EXPECT_EQ(seen, expected) << run.output;
  expect_balanced(window);
  // The process sat stopped at the prompt before any callee ran: only the
  // stopped frame's call holds that stop; the window ran more than nothing.
  EXPECT_NE(window.header.find(" at the debugger)"), std::string::npos) << run.output;
  EXPECT_EQ(window.header.find("ran 0 ns"), std::string::npos) << run.output;
  for (size_t i = 1; i < window.events.size(); ++i) {
    EXPECT_EQ(window.events[i].rest.find("[stopped"), std::string::npos)
        << "a callee entered after the resume holds the stop\n" << run.output;
  }
}

// apply_fee's arguments as fetched in a window, against the record.
void expect_fee_arguments(const ShownWindow& window, const std::vector<RecordedCall>& calls, const std::string& output) {
  std::vector<std::string> fetched, recorded;
  for (const auto& event : window.events) {
    if (event.mark == '>' && event.name == "apply_fee") fetched.push_back(event.rest.substr(event.rest.find("price=")));
  }
  for (const auto& call : calls) {
    if (call.function != "apply_fee") continue;
    char values[128];
    std::snprintf(values, sizeof values, "price=0x%llx bps=0x%llx", static_cast<unsigned long long>(call.arguments[0]),
                  static_cast<unsigned long long>(call.arguments[1]));
    recorded.push_back(values);
  }
  EXPECT_EQ(fetched, recorded) << output;
}

// (b') --stop-at-end: the process stops when the window closes, at the
// return address in the caller.
TEST_F(LldbPlugin, HereStopAtEndStopsWhenTheWindowCloses) {
  TempFile record("stop-at-end");
  const LldbRun run = run_lldb(
      {"b handle_request", "run", "breakpoint disable 1", "xref trace --here --stop-at-end", "continue", "bt 1",
       // the record of the request is written after the return: run to the end
       "breakpoint delete --force", "continue"},
      service(record.path));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  const std::string stop = run.after("(lldb) continue").substr(0, run.after("(lldb) continue").find("(lldb) bt 1"));
  EXPECT_NE(stop.find("stop reason = one-shot breakpoint 2"), std::string::npos) << run.output;
  EXPECT_NE(stop.find("frame #0: 0x"), std::string::npos) << run.output;
  EXPECT_NE(stop.find(" sample_service`worker_main"), std::string::npos) << run.output;
  const auto windows = shown_windows(stop);
  ASSERT_EQ(windows.size(), 1u) << run.output;
  const auto requests = read_sample_record(record.path);
  const auto request = requests.find({window_tid(windows[0]), 0});
  ASSERT_NE(request, requests.end()) << run.output;
  std::vector<std::string> expected = recorded_sequence(request->second);
  expected.erase(expected.begin());
  std::vector<std::string> seen = entered_functions(windows[0]);
  if (!seen.empty() && seen.front() == "handle_request") seen.erase(seen.begin());
  EXPECT_EQ(seen, expected) << run.output;
}

// (b'') Stopped at a breakpoint on a function whose first instruction is a
// tail jump (tail_first's get_command is `jmp generic_lookup`, as redis's
// getCommand is), built by gcc and by clang: --here works there. The
// breakpoint is off while the session runs, the window equals the record,
// the breakpoint stops the next request again, and the process exits 0.
void expect_here_at_tail_jump(const std::string& binary) {
  TempFile record("tail-first");
  const LldbRun run = run_lldb({"b get_command", "run", "xref trace --here --stop-at-end", "continue", "continue",
                                "breakpoint delete --force", "continue"},
                               {binary, record.path, "3"});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 1 disabled while the trace is armed")) << run.output;
  const std::string after = run.after("(lldb) continue");
  const std::string stop = after.substr(0, after.find("(lldb) continue", 1));
  EXPECT_NE(stop.find("stop reason = one-shot breakpoint 2"), std::string::npos) << run.output;
  const auto windows = shown_windows(stop);
  ASSERT_EQ(windows.size(), 1u) << run.output;
  EXPECT_TRUE(complete(windows[0])) << run.output;
  std::vector<std::string> seen;
  for (const auto& event : windows[0].events) {
    if (event.mark == '>') seen.push_back(event.name);
  }
  std::vector<std::string> expected;
  std::ifstream lines(record.path);
  for (std::string request, function; lines >> request >> function;) {
    if (request == "0") expected.push_back(function);
  }
  EXPECT_EQ(seen, expected) << run.output;
  const std::string again = after.substr(stop.size());
  EXPECT_NE(again.substr(0, again.find("(lldb) breakpoint delete")).find("stop reason = breakpoint 1."),
            std::string::npos)
      << run.output;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
}

TEST_F(LldbPlugin, HereAtATailJumpBreakpointGcc) { expect_here_at_tail_jump(XREF_TAIL_FIRST_GCC); }
TEST_F(LldbPlugin, HereAtATailJumpBreakpointClang) { expect_here_at_tail_jump(XREF_TAIL_FIRST_CLANG); }

// (c) --start bp:1 with a start filter: breakpoint 1 is disabled while the
// trace is armed and re-enabled when it ends; the window is request 3's.
TEST_F(LldbPlugin, StartAtABreakpointWithAFilter) {
  TempFile record("start-bp");
  const LldbRun run = run_lldb({"b handle_request", "run",
                                "xref trace --start bp:1 --fetch id=+0(%di):u64 --start-filter 'id == 3' "
                                "--functions validate,price_order,apply_fee,route_even,route_odd,settle --max-windows 1 "
                                "--fetch-at apply_fee price=%di:u64,bps=%si:u64",
                                "breakpoint list 1", "breakpoint set -n nop_entry -c '$rdi == 6'", "continue", "breakpoint list 1"},
                               service(record.path));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 1 disabled while the trace is armed: a uprobe at the same address would "
                      "swallow it; re-enabled when the trace ends"))
      << run.output;
  const std::string armed = run.after("(lldb) breakpoint list 1");
  EXPECT_NE(armed.substr(0, armed.find("(lldb) breakpoint set -n nop_entry")).find("Options: disabled"), std::string::npos) << run.output;
  const std::string stop = run.after("(lldb) continue");
  const auto windows = shown_windows(stop);
  ASSERT_EQ(windows.size(), 1u) << run.output;
  EXPECT_NE(windows[0].header.find("id=0x3"), std::string::npos) << run.output;
  const auto requests = read_sample_record(record.path);
  const auto request = requests.find({window_tid(windows[0]), 3});
  ASSERT_NE(request, requests.end()) << run.output;
  EXPECT_EQ(entered_functions(windows[0]), recorded_sequence(request->second)) << run.output;
  expect_balanced(windows[0]);
  expect_fee_arguments(windows[0], request->second, run.output);
  EXPECT_NE(stop.find("xref: session 1 ended (max_windows)"), std::string::npos) << run.output;
  EXPECT_NE(stop.find("xref: breakpoint 1 re-enabled: session 1 ended"), std::string::npos) << run.output;
  const std::string after = run.after("(lldb) breakpoint list 1\n1:").empty() ? stop : stop.substr(stop.rfind("(lldb) breakpoint list 1"));
  EXPECT_EQ(after.find("Options: disabled"), std::string::npos) << run.output;
}

// (d) A probe on an enabled breakpoint location is refused, naming both.
TEST_F(LldbPlugin, ProbeOnAnEnabledBreakpointIsRefused) {
  TempFile record("collision");
  const LldbRun run =
      run_lldb({"b handle_request", "b validate", "run", "xref trace --start handle_request --functions validate,settle"},
               service(record.path));
  EXPECT_NE(run.exit_status, 0) << run.output;  // batch mode stops at the failed command
  const std::string refusal = run.after("error: xref: ");
  ASSERT_FALSE(refusal.empty()) << run.output;
  const std::string line = refusal.substr(0, refusal.find('\n'));
  EXPECT_TRUE(std::regex_search(line, std::regex("breakpoint (1|2)"))) << line;
  EXPECT_NE(line.find("--allow-breakpoint-collision"), std::string::npos) << line;
  EXPECT_FALSE(run.has("xref: session 1 tracing")) << run.output;
}

// trace_target, one worker: each request calls svc::validate, then
// svc::compute_price; the record has a "> validate" line per call.
std::vector<std::string> probe_target(const std::string& record, const std::string& requests) {
  return {XREF_TRACE_TARGET, "--threads", "1", "--requests", requests, "--interval-us", "1000", "--record", record};
}

// "+0x27": the offset of handle_request's call of validate, as objdump
// shows it (the caller the probe must name).
std::string validate_call_offset() {
  const ObjdumpListing listing(XREF_TRACE_TARGET);
  const auto handle_request = listing.symbol("_ZN3svc14handle_requestEPNS_7RequestE");
  const auto validate = listing.symbol("_ZN3svc8validateEmm");
  if (!handle_request || !validate) return "?";
  for (const auto& instruction : listing.in_range(*handle_request, *handle_request + 0x400)) {
    if (instruction.is_call() && !instruction.indirect() && instruction.direct_target() == *validate) {
      std::ostringstream offset;
      offset << "+0x" << std::hex << instruction.address - *handle_request;
      return offset.str();
    }
  }
  return "?";
}

uint64_t recorded_entries(const std::string& record, const std::string& function) {
  std::ifstream file(record);
  std::string line;
  uint64_t entries = 0;
  while (std::getline(file, line)) entries += line.find(" > " + function + " ") != std::string::npos;
  return entries;
}

// (f) A probe session prints what changed at each stop: the 10th
// compute_price call stops with exactly 10 validate hits, all from
// handle_request; the next stop adds one. The process runs to its normal
// end, and `xref show` then has every call the target recorded.
TEST_F(LldbPlugin, ProbeCountsPrintAtEachStopAndMatchTheRecord) {
  TempFile record("probe");
  const LldbRun run = run_lldb({"b main", "run", "xref probe svc::validate --callers --duration-ms 0",
                                "breakpoint set -n compute_price -i 9", "continue", "continue", "breakpoint delete 2",
                                "continue", "xref show --all", "xref sessions"},
                               probe_target(record.path, "30"));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("xref: session 1 probing PID [0-9]+: 1 address at 1 site \\("))) << run.output;
  const std::string first = run.after("(lldb) continue");
  const std::string tenth = first.substr(0, first.find("(lldb) continue", 1));
  EXPECT_TRUE(std::regex_search(tenth, std::regex("\n  svc::validate[^\n]*  hits 10 \\(\\+10\\)"))) << tenth;
  const std::string call = validate_call_offset();
  ASSERT_NE(call, "?") << "objdump shows no call of validate in handle_request";
  // The caller as LLDB names it (the helper asked; its text shows C++ names
  // without their parameters), at the offset objdump shows.
  EXPECT_TRUE(std::regex_search(tenth, std::regex("\n +\\+10  svc::handle_request(\\(svc::Request\\*\\))?\\" + call +
                                                  " at trace_target.cpp:[0-9]+  \\(10 in all\\)")))
      << tenth;
  const std::string eleventh = first.substr(first.find("(lldb) continue", 1));
  EXPECT_TRUE(std::regex_search(eleventh.substr(0, eleventh.find("(lldb) breakpoint delete")),
                                std::regex("  svc::validate[^\n]*  hits 11 \\(\\+1\\)")))
      << eleventh;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
  const uint64_t recorded = recorded_entries(record.path, "validate");
  EXPECT_EQ(recorded, 30u);
  const std::string shown = run.after("(lldb) xref show --all");
  EXPECT_NE(shown.find("xref: probe session 1 (ended target_exited)"), std::string::npos) << run.output;
  EXPECT_TRUE(std::regex_search(shown, std::regex("  svc::validate[^\n]*  hits " + std::to_string(recorded) + "  passed " +
                                                  std::to_string(recorded) + "  threads 1  rate ")))
      << run.output;
  EXPECT_TRUE(std::regex_search(shown, std::regex("\n +" + std::to_string(recorded) + "  svc::handle_request")))
      << run.output;
}

// (g) probe bp:N: breakpoint N is off while its locations are probed and
// comes back when the probe ends (at --until-hits): the next call stops
// there again, and it is the call the target's request order says.
TEST_F(LldbPlugin, ProbeAtABreakpointDisablesItUntilTheProbeEnds) {
  TempFile record("probe-bp");
  const LldbRun run = run_lldb({"b main", "run", "b svc::validate", "xref probe bp:2 --until-hits 5 --duration-ms 0",
                                "breakpoint list 2", "breakpoint set -n compute_price -i 6", "continue",
                                "breakpoint delete 3", "continue", "process kill"},
                               probe_target(record.path, "40"));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 2 disabled while the probe is armed: a uprobe at the same address would "
                      "swallow it; re-enabled when the probe ends"))
      << run.output;
  const std::string listed = run.after("(lldb) breakpoint list 2");
  EXPECT_NE(listed.substr(0, listed.find("(lldb) breakpoint set")).find("Options: disabled"), std::string::npos)
      << run.output;
  const std::string stop = run.after("(lldb) continue");
  EXPECT_NE(stop.find("xref: session 1 ended (until_hits): 5 hits, 5 passed"), std::string::npos) << run.output;
  EXPECT_NE(stop.find("xref: breakpoint 2 re-enabled: session 1 ended"), std::string::npos) << run.output;
  // The 7th compute_price call stopped; the next validate is request 7's.
  const std::string again = run.after("(lldb) breakpoint delete 3");
  EXPECT_NE(again.find("stop reason = breakpoint 2.1"), std::string::npos) << run.output;
  EXPECT_NE(again.find("trace_target`svc::validate(id=7, amount="), std::string::npos) << run.output;
}

// (h) --stop-when: BPF evaluates the condition at every hit and stops the
// thread once, at the right hit (request n has id n and amount
// 100 + 37 * (n % 11)); LLDB shows it as xref's stop, and the process goes
// on normally afterwards.
TEST_F(LldbPlugin, StopWhenStopsTheThreadAtTheRightHitOnce) {
  TempFile record("stop-when");
  const LldbRun run = run_lldb({"b main", "run",
                                "xref probe svc::validate --fetch id=%di:u64,amount=%si:u64 --stop-when 'amount > 300' "
                                "--skip 2 --duration-ms 0",
                                "continue"},
                               probe_target(record.path, "20"), {}, 240, {"frame variable id amount", "continue", "xref show --all"});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: the first hit where --stop-when holds stops its thread with signal 63 (SIGRTMAX-1): LLDB "
                      "stops there and keeps it from the process"))
      << run.output;
  const std::string stop = run.after("(lldb) continue");
  // amount > 300 from request 6 on; --skip 2: the third such hit, request 8.
  EXPECT_TRUE(std::regex_search(stop, std::regex("xref: probe session 1 stopped thread [0-9]+: hit 9 of svc::validate, "
                                                 "the 3rd where --stop-when 'amount > 300' held: id=0x8 amount=0x18c\n")))
      << run.output;
  EXPECT_TRUE(std::regex_search(stop, std::regex("xref: \\(a signal from the probe: the thread stopped just after the "
                                                 "probed instruction at svc::validate\\b")))
      << run.output;
  EXPECT_TRUE(std::regex_search(stop, std::regex("stop reason = signal SIGRTMAX-1\n +frame #0: 0x[0-9a-f]+ "
                                                 "trace_target`svc::validate\\(")))
      << run.output;
  const std::string variables = run.after("(lldb) frame variable id amount");
  EXPECT_NE(variables.find("(uint64_t) id = 8"), std::string::npos) << run.output;
  EXPECT_NE(variables.find("(uint64_t) amount = 396"), std::string::npos) << run.output;
  // One stop; `xref show --all` then prints the whole result, the stop in it.
  const std::string before_show = run.output.substr(0, run.output.find("(lldb) xref show --all"));
  size_t stops = 0;
  for (size_t at = before_show.find("stopped thread"); at != std::string::npos; at = before_show.find("stopped thread", at + 1)) {
    ++stops;
  }
  EXPECT_EQ(stops, 1u) << "one stop only\n" << run.output;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
  EXPECT_EQ(recorded_entries(record.path, "validate"), 20u);
  EXPECT_TRUE(std::regex_search(run.after("(lldb) xref show --all"), std::regex("  svc::validate[^\n]*  hits 20  passed 20  ")))
      << run.output;
  // The session ended with its process: its end is said once, and leaving
  // LLDB has nothing left to stop (nobody asked to).
  EXPECT_TRUE(std::regex_search(run.output, std::regex("xref: session 1 ended \\(target_exited\\): 20 hits")))
      << run.output;
  EXPECT_FALSE(run.has("xref: no running session")) << run.output;
}

// (e) xref break W:SEQ, then continue: LLDB stops at that call site.
TEST_F(LldbPlugin, BreakAtAnEventStopsThere) {
  TempFile record("break");
  const LldbRun run = run_lldb({"breakpoint set -n nop_entry -c '$rdi == 1 || $rdi == 5'", "run",
                                "xref trace --start handle_request --functions validate,price_order --max-windows 1",
                                "continue", "xref break 1:1", "breakpoint delete 1", "continue", "register read pc"},
                               service(record.path));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  const auto windows = shown_windows(run.after("(lldb) continue"));
  ASSERT_GE(windows.size(), 1u) << run.output;
  ASSERT_GE(windows[0].events.size(), 2u) << run.output;
  EXPECT_EQ(windows[0].events[1].reference, "1:1");
  EXPECT_EQ(windows[0].events[1].name, "validate") << run.output;
  std::smatch set;
  const std::string text = run.output;
  ASSERT_TRUE(std::regex_search(text, set, std::regex("Breakpoint 2: (0x[0-9a-f]+) handle_request\\+0x[0-9a-f]+ at "
                                                      "sample_service.c:[0-9]+ \\(the call site of validate, event 1:1\\)")))
      << run.output;
  const std::string stop = run.after("(lldb) breakpoint delete 1");
  EXPECT_NE(stop.find("stop reason = breakpoint 2.1"), std::string::npos) << run.output;
  char pc[64];
  std::snprintf(pc, sizeof pc, "rip = 0x%016llx", std::stoull(set[1].str(), nullptr, 16));
  EXPECT_NE(stop.find(pc), std::string::npos) << pc << "\n" << run.output;
}

// (f) The helper killed with SIGKILL mid-session: one clear error at the
// next stop, the breakpoint the session disabled comes back, and the
// process is still debuggable and runs to completion.
TEST_F(LldbPlugin, KilledHelperIsOneClearErrorAndTheProcessStaysDebuggable) {
  TempFile record("killed");
  const LldbRun run = run_lldb({"b handle_request", "breakpoint set -n nop_entry -c '$rdi == 3'", "run",
                                "xref trace --start bp:1 --functions validate,settle", kill_helper_command(), "continue",
                                "bt 2", "breakpoint list 1", "xref maps", "breakpoint delete --force", "continue"},
                               service(record.path, "8"));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_EQ(run.count("was killed by signal 9 (SIGKILL)"), 1u) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("xref: the helper '[^']*xref serve' \\(pid [0-9]+\\) was killed by "
                                                       "signal 9 \\(SIGKILL\\); its probes are gone and session 1 ended")))
      << run.output;
  EXPECT_TRUE(run.has("xref: breakpoint 1 re-enabled: session 1 ended")) << run.output;
  const std::string stop = run.after("(lldb) continue");
  EXPECT_NE(stop.find("stop reason = breakpoint 2.1"), std::string::npos) << run.output;
  EXPECT_NE(stop.find("frame #1: "), std::string::npos) << run.output;  // bt works
  EXPECT_TRUE(run.has("modules:")) << run.output;  // a new helper answers
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
  // The service ran every request to its end.
  size_t requests = 0;
  for (const auto& [key, calls] : read_sample_record(record.path)) requests += calls.empty() ? 0 : 1;
  EXPECT_EQ(requests, 8u);
}

}  // namespace
}  // namespace xref::test
