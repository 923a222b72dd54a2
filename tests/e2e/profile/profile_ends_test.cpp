// How a capture ends, and that it leaves nothing: the target's exit (what
// was sampled is kept, ended_by target_exited), an exec (process_changed,
// exit status 5, the samples before it kept), Ctrl-C (SIGINT: interrupted),
// SIGKILL of the helper (its perf events and BPF links die with its
// descriptors: none of their link ids is left in the kernel), and a thread
// started during the capture (sampled through the inherited event).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include "capture_harness.h"
#include "perf_events_held.h"

namespace xref::test {
namespace {

constexpr int kProcessChanged = 5;

// Starts xref profile in the background; returns its PID once it says it samples.
pid_t start_profile(const std::vector<std::string>& args, const std::string& err_path) {
  const pid_t child = fork();
  if (child == 0) {
    FILE* err = freopen(err_path.c_str(), "w", stderr);
    (void)err;
    FILE* out = freopen("/dev/null", "w", stdout);
    (void)out;
    std::vector<char*> argv = {const_cast<char*>(XREF_BINARY)};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(XREF_BINARY, argv.data());
    _exit(127);
  }
  while (true) {
    std::ifstream err(err_path);
    std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    if (text.find("xref: profiling") != std::string::npos) return child;
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return -1;
    usleep(10000);
  }
}

TEST(ProfileEnds, TargetExitKeepsWhatWasSampled) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc"), "--exit-after-ms", "1500"});
  const std::string out = temporary_capture("exit");
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--duration", "60s", "--out", out, "--json"});
  EXPECT_EQ(run.exit_status, 0) << run.out << run.err;
  const nlohmann::json data = nlohmann::json::parse(run.out)["data"];
  EXPECT_EQ(data["ended_by"], "target_exited");
  EXPECT_GT(data["samples"].get<uint64_t>(), 10u);
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  EXPECT_EQ(file["capture"]["ended_by"], "target_exited");
  EXPECT_LT(file["capture"]["duration_ns"].get<uint64_t>(), 30000000000ull);
  // Symbolized after the process was gone: from the files, not /proc.
  bool named = false;
  for (const auto& function : file["functions"]) named = named || function["name"] == "spin_leaf_main";
  EXPECT_TRUE(named);
}

TEST(ProfileEnds, ExecIsProcessChangedWithTheSamplesBefore) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc"), "--exec-after-ms", "1500"});
  const std::string out = temporary_capture("exec");
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--duration", "60s", "--out", out, "--json"});
  EXPECT_EQ(run.exit_status, kProcessChanged) << run.out << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["error"]["code"], "process_changed");
  EXPECT_EQ(document["data"]["ended_by"], "process_changed");
  EXPECT_GT(document["data"]["samples"].get<uint64_t>(), 10u);
  EXPECT_TRUE(std::ifstream(out).good());
  std::remove(out.c_str());
}

TEST(ProfileEnds, InterruptedByCtrlC) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc")});
  const std::string out = temporary_capture("sigint");
  const std::string err_path = temporary_capture("sigint-err");
  const pid_t helper = start_profile({"profile", "--pid", std::to_string(target.pid()), "--duration-ms", "0", "--out", out},
                                     err_path);
  ASSERT_GT(helper, 0);
  usleep(500000);
  kill(helper, SIGINT);
  int status = 0;
  waitpid(helper, &status, 0);
  std::remove(err_path.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  EXPECT_EQ(file["capture"]["ended_by"], "interrupted");
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

TEST(ProfileEnds, NothingLeftAfterSigkillOfTheHelper) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc"), "--workers", "2"});
  const std::string out = temporary_capture("sigkill");
  const std::string err_path = temporary_capture("sigkill-err");
  const pid_t helper = start_profile({"profile", "--pid", std::to_string(target.pid()), "--duration-ms", "0", "--out", out},
                                     err_path);
  ASSERT_GT(helper, 0);
  const std::vector<HeldLink> links = links_held_by(helper);
  EXPECT_EQ(links.size(), 4u) << "one perf link per thread: main, 2 workers, the sorter";
  for (const HeldLink& link : links) EXPECT_EQ(link.type, "perf");
  EXPECT_EQ(perf_events_held_by(helper), 4u);
  EXPECT_EQ(links_still_there(links).size(), links.size());
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  std::remove(err_path.c_str());
  EXPECT_TRUE(links_still_there(links).empty()) << "links of the killed helper are still in the kernel";
  EXPECT_FALSE(std::ifstream(out).good()) << "a killed capture left a file";
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

TEST(ProfileEnds, AThreadStartedDuringTheCaptureIsSampled) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc"), "--workers", "0", "--late-thread-ms", "1000"});
  const std::string out = temporary_capture("late");
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--duration", "3s", "--callers", "dwarf",
                          "--out", out, "--json"});
  EXPECT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  uint32_t late = 0;
  for (const auto& thread : file["threads"]) {
    if (thread["started_during_capture"].get<bool>()) {
      late = thread["tid"];
      EXPECT_GT(thread["samples"].get<uint64_t>(), 20u);
    }
  }
  ASSERT_NE(late, 0u) << "no thread started during the capture";
  // Its hot leaf's stacks: whole, down to the thread's start.
  uint64_t complete = 0, total = 0;
  for (const NamedStack& stack : named_stacks(file)) {
    if (stack.tid != late || stack.functions.empty() || stack.functions[0] != "spin_leaf_worker") continue;
    total += stack.count;
    if (stack.end == "complete" && stack.functions.size() >= 3 && stack.functions[2] == "spin_worker") {
      complete += stack.count;
    }
  }
  EXPECT_GE(complete * 100, total * 99) << complete << " of " << total;
}

}  // namespace
}  // namespace xref::test
