// Bad input to xref profile: each one line naming the input with a hint, a
// distinct exit status, the JSON error object with --json, and the target
// untouched. Whether the host has cycles or last-branch records is asked
// of the kernel by the test itself (perf_event_open on itself).
#include <gtest/gtest.h>

#include <fstream>

#include "capture_harness.h"

namespace xref::test {
namespace {

constexpr int kNoSuchProcess = 3;
constexpr int kEventUnavailable = 26;
constexpr int kFrequencyTooHigh = 27;

std::string one_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(ProfileInput, UnknownPid) {
  XrefRun run = run_xref({"profile", "--pid", "4194303", "--duration", "1s", "--out", temporary_capture("nopid")});
  EXPECT_EQ(run.exit_status, kNoSuchProcess) << run.err;
  EXPECT_NE(run.err.find("4194303"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
}

TEST(ProfileInput, MissingPid) {
  XrefRun run = run_xref({"profile", "--duration", "1s"});
  EXPECT_NE(run.exit_status, 0);
  EXPECT_NE(run.err.find("--pid"), std::string::npos) << run.err;
}

TEST(ProfileInput, CyclesWithoutAHardwarePmuIsRefusedNeverReplaced) {
  XREF_REQUIRE(bpf_usable(), "root for perf events");
  if (host_has_hardware_event(PERF_COUNT_HW_CPU_CYCLES)) GTEST_SKIP() << "this host has cycles";
  TargetProcess target({capture_spin_binary("gcc")});
  const std::string out = temporary_capture("cycles");
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--event", "cycles", "--out", out, "--json"});
  EXPECT_EQ(run.exit_status, kEventUnavailable) << run.out << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["error"]["code"], "event_unavailable");
  EXPECT_NE(document["error"]["message"].get<std::string>().find("cycles"), std::string::npos);
  EXPECT_NE(document["error"]["hint"].get<std::string>().find("cpu-clock"), std::string::npos);
  EXPECT_FALSE(std::ifstream(out).good()) << "a refused capture wrote " << out;
  // Without --event, the default says why it is cpu-clock.
  XrefRun fallback = run_xref({"profile", "--pid", std::to_string(target.pid()), "--duration", "500ms", "--callers",
                               "none", "--out", out, "--json"});
  std::remove(out.c_str());
  EXPECT_EQ(fallback.exit_status, 0) << fallback.err;
  const nlohmann::json data = nlohmann::json::parse(fallback.out)["data"];
  EXPECT_EQ(data["event"], "cpu-clock");
  EXPECT_NE(data["event_reason"].get<std::string>().find("no hardware PMU"), std::string::npos);
}

TEST(ProfileInput, FrequencyAboveTheHostsLimitNamesIt) {
  std::ifstream limit_file("/proc/sys/kernel/perf_event_max_sample_rate");
  uint64_t limit = 0;
  limit_file >> limit;
  ASSERT_GT(limit, 0u);
  XREF_REQUIRE(limit < 200000, "a limit under 200000");
  XrefRun run = run_xref({"profile", "--pid", std::to_string(getpid()), "--freq", "200000", "--out",
                          temporary_capture("freq")});
  EXPECT_EQ(run.exit_status, kFrequencyTooHigh) << run.err;
  EXPECT_NE(run.err.find("200000"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(std::to_string(limit)), std::string::npos) << "the limit named: " << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
}

TEST(ProfileInput, LastBranchRecordsWhereTheHostHasNone) {
  if (host_has_hardware_event(PERF_COUNT_HW_CPU_CYCLES, true)) GTEST_SKIP() << "this host has last-branch records";
  XrefRun run = run_xref({"profile", "--pid", std::to_string(getpid()), "--callers", "lbr", "--json", "--out",
                          temporary_capture("lbr")});
  EXPECT_EQ(run.exit_status, kEventUnavailable) << run.out << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["error"]["code"], "event_unavailable");
  EXPECT_NE(document["error"]["message"].get<std::string>().find("last-branch"), std::string::npos);
  EXPECT_NE(one_line(document["error"]["hint"]).find("dwarf"), std::string::npos);
}

TEST(ProfileInput, ThreadsOfAnotherProcess) {
  XREF_REQUIRE(bpf_usable(), "root for perf events");
  TargetProcess target({capture_spin_binary("gcc")});
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--threads", std::to_string(getpid()),
                          "--duration", "1s", "--out", temporary_capture("threads")});
  EXPECT_NE(run.exit_status, 0);
  EXPECT_NE(run.err.find("--threads " + std::to_string(getpid())), std::string::npos) << run.err;
}

}  // namespace
}  // namespace xref::test
