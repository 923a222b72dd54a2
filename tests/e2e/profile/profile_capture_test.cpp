// xref profile --pid on capture_spin (tests/targets/capture_spin.c): real
// cpu-clock events and the BPF unwinder. --callers dwarf on gcc and clang
// -O2 builds without frame pointers: the stacks of each hot leaf reach the
// thread's start (COMPLETE) for at least 99 % of their samples, through the
// callers the target's code has, and the capture names them at nm's
// addresses. --callers fp on a frame-pointer build, none, and the threads'
// samples against their CPU time.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "capture_harness.h"

namespace xref::test {
namespace {

struct ChainCheck {
  uint64_t samples = 0;   // samples whose leaf is the chain's leaf
  uint64_t complete = 0;  // of them, stacks that reached the outermost frame
  uint64_t right = 0;     // of them, stacks whose callers are the chain, in order
};

// The samples whose leaf function is chain[0]: how many are complete and
// have chain[1..] as their next callers.
ChainCheck check_chain(const std::vector<NamedStack>& stacks, const std::vector<std::string>& chain) {
  ChainCheck check;
  for (const NamedStack& stack : stacks) {
    if (stack.functions.empty() || stack.functions[0] != chain[0]) continue;
    check.samples += stack.count;
    if (stack.end == "complete") check.complete += stack.count;
    if (stack.functions.size() >= chain.size() &&
        std::equal(chain.begin(), chain.end(), stack.functions.begin())) {
      check.right += stack.count;
    }
  }
  return check;
}

// The outermost frames a complete stack of each thread kind ends in.
bool ends_in(const NamedStack& stack, const std::string& function) {
  return !stack.functions.empty() && stack.functions.back() == function;
}

nlohmann::json capture(const TargetProcess& target, const std::string& callers, const std::string& out,
                       const std::string& duration = "3s") {
  XrefRun run = run_xref({"profile", "--pid", std::to_string(target.pid()), "--duration", duration, "--callers",
                          callers, "--out", out, "--json"});
  EXPECT_EQ(run.exit_status, 0) << run.out << run.err;
  nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["operation"], "live_profile");
  EXPECT_EQ(document["data"]["file"], out);
  return document;
}

class DwarfCapture : public ::testing::TestWithParam<std::string> {};

TEST_P(DwarfCapture, HotLeavesReachTheThreadStartThroughTheirCallers) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  const std::string binary = capture_spin_binary(GetParam());
  TargetProcess target({binary, "--workers", "1"});
  const std::string out = temporary_capture("dwarf-" + GetParam());
  const nlohmann::json document = capture(target, "dwarf", out);
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  EXPECT_EQ(file["format"], "xprof");
  EXPECT_EQ(file["capture"]["callers"], "dwarf");
  const std::vector<NamedStack> stacks = named_stacks(file);
  const std::vector<std::vector<std::string>> chains = {
      {"spin_leaf_main", "spin_middle", "spin_top", "main"},
      {"spin_leaf_worker", "spin_middle_worker", "spin_worker", "start_thread"},
      {"spin_compare"},
  };
  for (const auto& chain : chains) {
    const ChainCheck check = check_chain(stacks, chain);
    EXPECT_GE(check.samples, 20u) << chain[0] << " took too few samples to judge";
    EXPECT_GE(check.complete * 100, check.samples * 99) << chain[0] << ": " << check.complete << " of "
                                                        << check.samples << " complete";
    EXPECT_GE(check.right * 100, check.samples * 99) << chain[0] << ": " << check.right << " of " << check.samples
                                                     << " with its callers";
  }
  // The comparator is called by libc's qsort: its complete stacks pass
  // through libc frames up to spin_sorter and the thread's start.
  uint64_t through_libc = 0;
  for (const NamedStack& stack : stacks) {
    if (stack.functions.empty() || stack.functions[0] != "spin_compare" || stack.end != "complete") continue;
    const auto sorter = std::find(stack.functions.begin(), stack.functions.end(), "spin_sorter");
    EXPECT_NE(sorter, stack.functions.end());
    const bool libc_between = std::any_of(stack.modules.begin() + 1, stack.modules.begin() + (sorter - stack.functions.begin()),
                                          [](const std::string& path) { return path.find("libc.so") != std::string::npos; });
    through_libc += libc_between ? stack.count : 0;
  }
  EXPECT_GT(through_libc, 0u);
  // Complete stacks end where the kernel starts a thread: _start for the
  // main thread, clone3 (libc, named as perf names it among __clone3 and
  // __GI___clone3) for the others.
  for (const NamedStack& stack : stacks) {
    if (stack.end != "complete") continue;
    EXPECT_TRUE(ends_in(stack, "_start") || ends_in(stack, "clone3"))
        << "a complete stack ends in " << stack.functions.back();
  }
  // Named at nm's addresses.
  const std::map<std::string, uint64_t> nm = nm_functions(binary);
  for (const auto& function : file["functions"]) {
    if (function["module"] != 0 || !nm.count(function["raw_name"])) continue;
    EXPECT_EQ(std::stoull(function["start"].get<std::string>(), nullptr, 16), nm.at(function["raw_name"]))
        << function["raw_name"];
  }
  // The libc module's table was loaded; the summary says the same.
  bool libc_loaded = false;
  for (const auto& module : file["modules"]) {
    if (module["path"].get<std::string>().find("libc.so") != std::string::npos) {
      libc_loaded = module["unwind_table"] == "loaded" && module["unwind_rows"].get<uint64_t>() > 1000;
    }
  }
  EXPECT_TRUE(libc_loaded);
  uint64_t samples = 0;
  for (const auto& sample : file["samples"]) samples += sample["count"].get<uint64_t>();
  EXPECT_EQ(document["data"]["samples"].get<uint64_t>(), samples);
}

INSTANTIATE_TEST_SUITE_P(Builds, DwarfCapture, ::testing::Values("gcc", "clang"));

// Does `function` of `binary` push rbp before anything else (objdump)?
bool leaf_keeps_a_frame(const std::string& binary, const std::string& function) {
  const std::string listing = command_output("objdump -d --no-show-raw-insn --disassemble=" + function + " " +
                                             shell_quote(binary));
  const size_t start = listing.find("<" + function + ">:");
  if (start == std::string::npos) return false;
  const size_t first = listing.find('\n', start) + 1;
  const std::string line = listing.substr(first, listing.find('\n', first) - first);
  return line.find("push") != std::string::npos && line.find("%rbp") != std::string::npos;
}

// Frame pointers on a build that keeps them: the same callers (the libc
// frames above main and start_thread have none, so no completeness is
// claimed there).
TEST(ProfileCapture, FramePointerChainsNameTheCallers) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("fp"), "--workers", "1"});
  const std::string out = temporary_capture("fp");
  capture(target, "fp", out);
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  const std::vector<NamedStack> stacks = named_stacks(file);
  for (std::vector<std::string> chain : std::vector<std::vector<std::string>>{
           {"spin_leaf_main", "spin_middle", "spin_top", "main"},
           {"spin_leaf_worker", "spin_middle_worker", "spin_worker"}}) {
    // A leaf function gcc built without its own frame (no push %rbp: gcc
    // 12 omits it where the function needs no stack, whatever the flags)
    // leaves rbp at its caller's frame: the chain skips that caller, as
    // every frame-pointer unwinder does (perf -g too).
    if (!leaf_keeps_a_frame(capture_spin_binary("fp"), chain[0])) chain.erase(chain.begin() + 1);
    const ChainCheck check = check_chain(stacks, chain);
    EXPECT_GE(check.samples, 20u) << chain[0];
    EXPECT_GE(check.right * 100, check.samples * 99) << chain[0] << ": " << check.right << " of " << check.samples;
  }
}

// --callers none: one frame per stack, each leaf_only; the samples of each
// thread stand for the CPU time the thread used (one per 10.1 ms at 99 Hz).
TEST(ProfileCapture, LeafOnlyAndSamplesMatchEachThreadsCpuTime) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary("gcc"), "--workers", "2"});
  const std::string out = temporary_capture("none");
  const nlohmann::json document = capture(target, "none", out);
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  for (const auto& stack : file["stacks"]) {
    EXPECT_EQ(stack["end"], "leaf_only");
    EXPECT_EQ(stack["locations"].size(), 1u);
  }
  EXPECT_EQ(file["threads"].size(), 4u);  // main, 2 workers, the sorter
  const uint64_t period = file["capture"]["period_ns"];
  EXPECT_EQ(period, 1000000000ull / 99);
  for (const auto& thread : file["threads"]) {
    const uint64_t samples = thread["samples"];
    const uint64_t cpu_ns = thread["cpu_ns"];
    // Each sample is one period of the thread's CPU: the count and the
    // thread's own schedstat agree within a few periods.
    EXPECT_NEAR(static_cast<double>(samples), static_cast<double>(cpu_ns) / static_cast<double>(period), 3.0)
        << "thread " << thread["tid"];
  }
  EXPECT_EQ(document["data"]["stack_ends"]["leaf_only"], document["data"]["samples"]);
  EXPECT_TRUE(file["complete"].get<bool>());
}

// The CPU time (ns) each thread of `pid` used so far, from the kernel's
// /proc/PID/task/TID/schedstat: the ground truth a sample count stands for.
std::map<uint64_t, uint64_t> thread_cpu_ns(pid_t pid) {
  std::map<uint64_t, uint64_t> cpu;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (dir == nullptr) return cpu;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream schedstat(task + "/" + entry->d_name + "/schedstat");
    uint64_t ns = 0;
    if (schedstat >> ns) cpu[std::stoull(entry->d_name)] = ns;
  }
  closedir(dir);
  return cpu;
}

struct CountCase {
  std::string build;    // capture_spin-BUILD
  std::string callers;  // --callers
};

void PrintTo(const CountCase& count_case, std::ostream* out) {
  *out << "capture_spin-" << count_case.build << " --callers " << count_case.callers;
}

class SampleCount : public ::testing::TestWithParam<CountCase> {};

// Every sample is one period of a thread's CPU, whatever the walk of its
// stack found: --callers fp on a build without frame pointers (the walk ends
// early, bad_frame) counts as many samples as dwarf. Each thread's count
// against the CPU time the kernel gives for it (schedstat, read here before
// the capture and after it, the target still running): the count cannot stand
// for more CPU than the thread used, and it stands for the CPU the capture
// saw (the threads' cpu_ns) within a few periods.
TEST_P(SampleCount, EveryThreadsSamplesMatchItsCpuTime) {
  XREF_REQUIRE(bpf_usable(), "root for perf events and BPF");
  TargetProcess target({capture_spin_binary(GetParam().build), "--workers", "2"});
  const std::map<uint64_t, uint64_t> before = thread_cpu_ns(target.pid());
  ASSERT_EQ(before.size(), 4u);  // main, 2 workers, the sorter
  const std::string out = temporary_capture("count-" + GetParam().build + "-" + GetParam().callers);
  const nlohmann::json document = capture(target, GetParam().callers, out);
  const std::map<uint64_t, uint64_t> after = thread_cpu_ns(target.pid());
  const nlohmann::json file = read_capture(out);
  std::remove(out.c_str());
  EXPECT_EQ(document["data"]["events_opened"], 4u) << document.dump();
  const nlohmann::json& losses = file["losses"];
  for (const auto& [name, count] : losses.items()) EXPECT_EQ(count.get<uint64_t>(), 0u) << name;
  const double period = static_cast<double>(file["capture"]["period_ns"].get<uint64_t>());
  ASSERT_EQ(file["threads"].size(), 4u);
  uint64_t samples_total = 0;
  double truth_periods = 0;
  for (const auto& thread : file["threads"]) {
    const uint64_t tid = thread["tid"];
    ASSERT_TRUE(before.count(tid) && after.count(tid)) << "thread " << tid;
    const double used = static_cast<double>(after.at(tid) - before.at(tid));
    const double samples = static_cast<double>(thread["samples"].get<uint64_t>());
    const double seen = static_cast<double>(thread["cpu_ns"].get<uint64_t>());
    EXPECT_LE(seen, used) << "thread " << tid;
    EXPECT_LE(samples, used / period + 3.0) << "thread " << tid;
    EXPECT_NEAR(samples, seen / period, 3.0) << "thread " << tid;
    samples_total += thread["samples"].get<uint64_t>();
    truth_periods += seen / period;
  }
  std::cout << "capture_spin-" << GetParam().build << ", --callers " << GetParam().callers << ": " << samples_total
            << " samples for " << truth_periods << " periods of CPU" << std::endl;
  EXPECT_GT(samples_total, 100u);
}

INSTANTIATE_TEST_SUITE_P(Callers, SampleCount,
                         ::testing::Values(CountCase{"gcc", "dwarf"}, CountCase{"gcc", "fp"}, CountCase{"fp", "fp"}),
                         [](const ::testing::TestParamInfo<CountCase>& param_info) {
                           return param_info.param.build + "_" + param_info.param.callers;
                         });

}  // namespace
}  // namespace xref::test
