// --stop-when's signal beside a program's own, in real lldb-19 (batch mode)
// with the real helper: signal_target (built by gcc and clang, -O2) sends
// itself SIGRTMAX-1 (the signal --stop-when stops a thread with) 30 times
// with sigqueue, kill and tgkill, and records on its last line how many its
// handler received as sent (si_code, sender, sigqueue's payload). While a
// probe session stops it once, every one of its own signals must reach it,
// LLDB must report only xref's as the probe's stop, and `process handle`
// must say what it said before the session.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include "lldb_batch.h"

namespace xref::test {
namespace {

std::vector<std::string> signal_target(const std::string& compiler, int signals) {
  return {std::string(XREF_SIGNAL_TARGET_DIR) + "/signal_target-" + compiler, "--signals", std::to_string(signals)};
}

std::string probe_command(int stop) {
  return "xref probe signal_work --fetch i=%di:u64 --stop-when 'i == " + std::to_string(stop) + "' --duration-ms 0";
}

std::string all_received(int count) {
  return "signal_target: handled " + std::to_string(count) + " of " + std::to_string(count) +
         " signals as sent (0 wrong, 0 missing)";
}

// `process handle SIGRTMAX-1`'s row (pass, stop, notify) printed after `marker`.
std::string handling(const LldbRun& run, const std::string& marker) {
  std::smatch match;
  const std::string text = run.after(marker);
  if (!std::regex_search(text, match, std::regex("\nSIGRTMAX-1 +(true|false) +(true|false) +(true|false)"))) return "?";
  return match[1].str() + " " + match[2].str() + " " + match[3].str();
}

void expect_one_probe_stop(const LldbRun& run, int stop) {
  EXPECT_EQ(run.count("stopped thread"), 1u) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\nxref: probe session 1 stopped thread [0-9]+: hit " +
                                                       std::to_string(stop + 1) + " of signal_work, the 1st where "
                                                       "--stop-when 'i == " + std::to_string(stop) + "' held: i=0x")))
      << run.output;
}

class LldbSignalsUser : public ::testing::Test {
 protected:
  void SetUp() override {
    XREF_REQUIRE(lldb_available(), "lldb-19 (Debian package lldb-19)");
    XREF_REQUIRE(geteuid() == 0, "BPF (run as root)");
  }
};

class LldbSignals : public LldbSignalsUser, public ::testing::WithParamInterface<std::string> {};

// LLDB's own handling (pass, no stop, no notify): the program's signals
// go on by themselves while the session runs, only xref's stops. The
// session ends by `xref stop` at that stop; the handling comes back at the
// next stop, once no thread holds xref's signal, and the rest of the
// program's signals go as LLDB does without xref.
TEST_P(LldbSignals, TheProgramsOwnSignalsReachItAndOnlyXrefsStops) {
  const int stop = 12;
  const LldbRun run = run_lldb({"b main", "run", "breakpoint delete 1", "process handle SIGRTMAX-1",
                                probe_command(stop), "continue"},
                               signal_target(GetParam(), 30), {}, 240,
                               {"register read rdi", "xref stop 1", "breakpoint set -n on_signal -i 7", "continue",
                                "process handle SIGRTMAX-1", "breakpoint delete 2", "continue"});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: the first hit where --stop-when holds stops its thread with signal 63 (SIGRTMAX-1): LLDB "
                      "stops there and keeps it from the process; the program's own signal 63 still reaches it"))
      << run.output;
  expect_one_probe_stop(run, stop);
  EXPECT_EQ(run.count("stop reason = signal SIGRTMAX-1"), 1u) << run.output;
  EXPECT_TRUE(std::regex_search(run.after("(lldb) register read rdi"), std::regex("rdi = 0x0+c\n"))) << run.output;
  EXPECT_TRUE(run.has("xref: SIGRTMAX-1 handled as before again (pass true, stop false, notify false): no "
                      "--stop-when session left"))
      << run.output;
  EXPECT_EQ(handling(run, "(lldb) process handle SIGRTMAX-1"), "true false false") << run.output;
  EXPECT_EQ(handling(run, "(lldb) breakpoint set -n on_signal"), "true false false") << run.output;
  EXPECT_TRUE(run.has(all_received(30))) << run.output;
  EXPECT_TRUE(run.has("exited with status = 0")) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Compilers, LldbSignals, ::testing::Values("gcc", "clang"));

// The user asked LLDB to say so at SIGRTMAX-1 and not pass it, without
// stopping: the program's own still go on by themselves, each said to be
// the program's, and are kept from it as the user said; xref's is the
// probe's stop. The handling is the user's again after the session.
TEST_F(LldbSignalsUser, TheUsersHandlingHoldsForTheProgramsOwn) {
  const LldbRun run = run_lldb({"b main", "run", "breakpoint delete 1",
                                "process handle SIGRTMAX-1 -s false -n true -p false", probe_command(2), "continue"},
                               signal_target("gcc", 4), {}, 240,
                               {"xref stop 1", "breakpoint set -n signal_work", "continue", "process handle SIGRTMAX-1",
                                "breakpoint delete 2", "continue"});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  expect_one_probe_stop(run, 2);
  EXPECT_EQ(run.count("stop reason = signal SIGRTMAX-1"), 1u) << run.output;
  const std::regex own("xref: thread 1 received SIGRTMAX-1 from the program itself \\((SI_QUEUE|SI_USER|SI_TKILL) "
                       "from pid [0-9]+\\), not from xref: not passed on\n");
  std::vector<std::string> codes;
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), own), end; it != end; ++it) {
    codes.push_back((*it)[1].str());
  }
  EXPECT_EQ(codes, (std::vector<std::string>{"SI_QUEUE", "SI_USER", "SI_TKILL"})) << run.output;
  EXPECT_TRUE(run.has("xref: SIGRTMAX-1 handled as before again (pass false, stop false, notify true): no "
                      "--stop-when session left"))
      << run.output;
  EXPECT_EQ(handling(run, "(lldb) breakpoint set -n signal_work"), "false false true") << run.output;
  // Kept from it, as the user said: none of its 4 arrived.
  EXPECT_TRUE(run.has("signal_target: handled 0 of 4 signals as sent (0 wrong, 4 missing)")) << run.output;
  EXPECT_TRUE(run.has("exited with status = 3")) << run.output;
}

// A --stop-when session that does not start leaves the handling as it was.
TEST_F(LldbSignalsUser, AStartThatFailsLeavesTheHandlingAsItWas) {
  // Through `script`, as batch mode ends its commands at the first that fails.
  const LldbRun run = run_lldb({"b main", "run", "process handle SIGRTMAX-1 -s false -n true -p true",
                                "script lldb.debugger.HandleCommand(\"xref probe no_such_function --fetch "
                                "i=%di:u64 --stop-when 'i == 1'\")",
                                "process handle SIGRTMAX-1", "process kill"},
                               signal_target("gcc", 4));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_TRUE(run.has("xref: SIGRTMAX-1 handled as before again (pass true, stop false, notify true): no "
                      "--stop-when session left"))
      << run.output;
  EXPECT_TRUE(run.has("error: xref: probe: no function named 'no_such_function'")) << run.output;
  EXPECT_EQ(handling(run, "no function named"), "true false true") << run.output;
}

}  // namespace
}  // namespace xref::test
