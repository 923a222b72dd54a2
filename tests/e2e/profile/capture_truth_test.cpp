// xref profile's capture against the ground truth (issue 27, "Truth
// tests"): profile_target's own CLOCK_THREAD_CPUTIME_ID figures and paths,
// and perf --call-graph dwarf recorded over the same interval, on the
// calibrated target and on Debian's python3.
//
// xref's side is `xref profile --pid` and `xref profile report FILE
// --format folded`. The checks themselves are the harness's (profile_harness.h, folded_stacks.h), proven on perf by
// perf_truth_test.cpp and perf_python_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "profile_harness.h"
#include "require.h"
#include "run_xref.h"
#include "xprof_document.h"

namespace xref::test {
namespace {

// `xref profile --pid PID ... --out FILE`, then its folded report.
folded::Stacks capture(int pid, const std::string& callers, const std::string& threads, unsigned seconds,
                       const std::string& out) {
  std::vector<std::string> args = {"profile", "--pid", std::to_string(pid), "--duration", std::to_string(seconds) + "s",
                                   "--freq", "999", "--callers", callers, "--out", out};
  if (!threads.empty()) args.insert(args.end(), {"--threads", threads});
  const XrefRun run = run_xref(args);
  EXPECT_EQ(run.exit_status, 0) << run.err;
  const XrefRun report = run_xref({"profile", "report", out, "--format", "folded"});
  EXPECT_EQ(report.exit_status, 0) << report.err;
  return folded::parse(report.out);
}

std::string thread_list(const ProfileTarget& target) {
  std::string list;
  for (const int tid : working_tids(target)) list += (list.empty() ? "" : ",") + std::to_string(tid);
  return list;
}

class CaptureTruth : public ::testing::TestWithParam<BuildCase> {};

// Shares within 3 points of the target's own; every leaf reached along its
// recorded path; with dwarf, >= 99 % of stacks down to _start / clone3.
TEST_P(CaptureTruth, SharesAndCallersMatchTheRecord) {
  XREF_REQUIRE_PERF();
  const auto started = working_target(GetParam().build);
  ProfileTarget& target = *started;
  const folded::Stacks stacks =
      capture(target.pid(), GetParam().callers, thread_list(target), 8, target.scratch_file("capture.xprof"));
  const pt::Record& record = target.finish();
  const auto agreements = agree_with_record(stacks, record);
  std::cout << GetParam().build << ", xref --callers " << GetParam().callers << ": " << folded::total(stacks)
            << " samples, " << complete_percent(stacks) << " % complete\n"
            << agreement_table(agreements);
  ASSERT_GE(folded::total(stacks), 2000u) << "too few samples to judge shares within 3 points";
  for (const auto& agreement : agreements) {
    EXPECT_NEAR(agreement.total, agreement.recorded, 3.0) << agreement.leaf << " (total share)";
    EXPECT_NEAR(agreement.self, agreement.recorded, 3.0) << agreement.leaf << " (self share)";
    EXPECT_GE(agreement.on_path_percent(), 99.0) << agreement.leaf << ": samples on the recorded path";
  }
  if (GetParam().callers == "dwarf") {
    EXPECT_GE(complete_percent(stacks), 99.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, CaptureTruth,
                         ::testing::Values(BuildCase{"profile_target", "dwarf"},
                                           BuildCase{"profile_target_clang", "dwarf"},
                                           BuildCase{"profile_target_nopie", "dwarf"},
                                           BuildCase{"profile_target_clang_nopie", "dwarf"},
                                           BuildCase{"profile_target_fp", "fp"},
                                           BuildCase{"profile_target_clang_fp", "fp"}),
                         build_case_name);

// A stripped build (objcopy --strip-all of profile_target) profiled with
// --callers dwarf, as a user who has only the stripped file sees it: its
// functions have no names, each is `profile_target_stripped+0xSTART` (the
// start its CFI gives). The shares per function start and the paths through
// them must be the record's once the starts are named by the unstripped
// twin's symbols (nm -S: the same build, so the same addresses); xref itself
// never reads the twin here.
TEST(CaptureTruthStripped, FunctionStartsCarryTheRecordsShares) {
  XREF_REQUIRE_PERF();
  const std::string build = "profile_target_stripped";
  const auto started = working_target(build);
  ProfileTarget& target = *started;
  const folded::Stacks stacks =
      capture(target.pid(), "dwarf", thread_list(target), 8, target.scratch_file("capture.xprof"));
  const pt::Record& record = target.finish();
  std::map<std::string, std::string> twin_names;  // "profile_target_stripped+0x1230" -> "leaf_a"
  for (const auto& [name, function] : nm_sized_functions(profile_target_binary("profile_target"))) {
    twin_names[build + "+" + xprof_hex(function.start)] = name;
  }
  std::set<std::string> recorded_functions;  // main, worker_main, work_loop, run_a, ... leaf_r
  for (const auto& leaf : record.leaves) {
    for (const auto& function : split_path(leaf.path)) recorded_functions.insert(function);
  }
  folded::Stacks named;
  size_t executable_frames = 0, named_by_start = 0;
  for (const auto& [stack, count] : stacks) {
    std::string path;
    for (const auto& frame : split_path(stack)) {
      std::string name = frame;
      if (frame.rfind(build + "+", 0) == 0) {
        ++executable_frames;
        auto twin = twin_names.find(frame);
        if (twin != twin_names.end()) {
          name = twin->second;
          ++named_by_start;
        }
      }
      EXPECT_EQ(recorded_functions.count(frame), 0u) << frame << ": the stripped file names no function";
      path += (path.empty() ? "" : ";") + name;
    }
    named[path] += count;
  }
  const auto agreements = agree_with_record(named, record);
  std::cout << build << ", xref --callers dwarf: " << folded::total(stacks) << " samples, " << executable_frames
            << " frames of the executable in its stacks, " << named_by_start << " at a function start of the twin, "
            << complete_percent(named) << " % complete\n"
            << agreement_table(agreements);
  ASSERT_GE(folded::total(stacks), 2000u) << "too few samples to judge shares within 3 points";
  EXPECT_EQ(named_by_start, executable_frames) << "every frame of the executable is named by its function's start";
  for (const auto& agreement : agreements) {
    EXPECT_NEAR(agreement.total, agreement.recorded, 3.0) << agreement.leaf << " (total share)";
    EXPECT_NEAR(agreement.self, agreement.recorded, 3.0) << agreement.leaf << " (self share)";
    EXPECT_GE(agreement.on_path_percent(), 99.0) << agreement.leaf << ": samples on the recorded path";
  }
  EXPECT_GE(complete_percent(named), 99.0);
}

// Two captures, before and after the target changes its split (phase 2):
// each agrees with the record of its phase, and `xref profile diff --json`
// of the two shows the change the record shows: each leaf's change in self
// share has the recorded change's sign and lies within 3 points of it
// (leaf_a falls by about 30 points, leaf_b by 10, leaf_c rises by 10,
// leaf_r by 30).
TEST(CaptureTruthPhases, EachCaptureMatchesItsPhase) {
  XREF_REQUIRE_PERF();
  const auto started = working_target("profile_target", {"--split", "40,30,20,10", "--split2", "10,20,30,40"});
  ProfileTarget& target = *started;
  const std::string before_path = target.scratch_file("before.xprof"), after_path = target.scratch_file("after.xprof");
  const folded::Stacks before = capture(target.pid(), "dwarf", thread_list(target), 6, before_path);
  target.phase2();
  usleep(200000);  // every thread past its current cycle (8 ms of CPU at most)
  const folded::Stacks after = capture(target.pid(), "dwarf", thread_list(target), 6, after_path);
  const pt::Record& record = target.finish();
  for (int phase = 1; phase <= 2; ++phase) {
    const auto agreements = agree_with_record(phase == 1 ? before : after, record, phase);
    std::cout << "phase " << phase << "\n" << agreement_table(agreements);
    for (const auto& agreement : agreements) {
      EXPECT_NEAR(agreement.total, agreement.recorded, 3.0) << agreement.leaf << " in phase " << phase;
    }
  }
  const XrefRun diff = run_xref({"profile", "diff", before_path, after_path, "--min-delta", "0", "--json"});
  ASSERT_EQ(diff.exit_status, 0) << diff.err;
  const nlohmann::json document = diff.json();
  EXPECT_EQ(document["data"]["across_builds"], false);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : document["data"]["functions"]) rows[row["function"].get<std::string>()] = row;
  for (const auto& leaf : pt::leaf_names()) {
    ASSERT_TRUE(rows.count(leaf)) << leaf << " is not in the diff: " << diff.out;
    const nlohmann::json& row = rows.at(leaf);
    const double recorded_before = record.leaf_share(leaf, 1), recorded_after = record.leaf_share(leaf, 2);
    const double recorded_change = recorded_after - recorded_before;
    const double change = row["change_points"].get<double>();
    std::cout << leaf << ": diff " << row["before_percent"] << " % -> " << row["after_percent"] << " % ("
              << change << "), recorded " << recorded_before << " % -> " << recorded_after << " % ("
              << recorded_change << ")\n";
    EXPECT_EQ(row["matched_by"], "address") << leaf;
    ASSERT_GE(std::fabs(recorded_change), 5.0) << leaf << ": the splits must differ for this test to mean anything";
    EXPECT_EQ(change > 0, recorded_change > 0) << leaf << ": the change's sign";
    EXPECT_NEAR(change, recorded_change, 3.0) << leaf;
    EXPECT_NEAR(row["before_percent"].get<double>(), recorded_before, 3.0) << leaf;
    EXPECT_NEAR(row["after_percent"].get<double>(), recorded_after, 3.0) << leaf;
  }
}

// `xref profile annotate CAPTURE LEAF` through the CLI, on a capture of the
// target: each leaf's hottest instruction lies in the leaf's hot loop as
// objdump shows it (profile_harness.h, hot_loop), and so do nearly all of
// its samples, as perf_truth_test.cpp finds for perf.
TEST(CaptureTruthAnnotate, EachLeafsHottestInstructionIsInItsHotLoop) {
  XREF_REQUIRE_PERF();
  const auto started = working_target("profile_target");
  ProfileTarget& target = *started;
  const std::string file = target.scratch_file("capture.xprof");
  capture(target.pid(), "dwarf", thread_list(target), 6, file);
  target.finish();
  const std::string binary = profile_target_binary("profile_target");
  const std::map<std::string, std::string> loop_mnemonic = {
      {"leaf_a", "imul"}, {"leaf_b", "shl"}, {"leaf_c", "div"}, {"leaf_r", "rol"}};
  for (const auto& [leaf, mnemonic] : loop_mnemonic) {
    const AddressRange loop = hot_loop(binary, leaf, mnemonic);
    const XrefRun annotate = run_xref({"profile", "annotate", file, leaf, "--json"});
    ASSERT_EQ(annotate.exit_status, 0) << annotate.err;
    const nlohmann::json data = annotate.json()["data"];
    uint64_t in_loop = 0, hottest_count = 0;
    for (const auto& row : data["instructions"]) {
      const uint64_t address = std::stoull(row["address"].get<std::string>(), nullptr, 16);
      const uint64_t samples = row["samples"].get<uint64_t>();
      in_loop += loop.contains(address) ? samples : 0;
      if (row["hottest"].get<bool>()) {
        ++hottest_count;
        EXPECT_TRUE(loop.contains(address)) << leaf << ": hottest instruction " << hex_string(address)
                                            << " outside the loop " << hex_string(loop.first) << ".."
                                            << hex_string(loop.last);
      }
    }
    const uint64_t samples = data["samples"].get<uint64_t>();
    std::cout << leaf << ": loop " << hex_string(loop.first) << ".." << hex_string(loop.last) << ", " << samples
              << " samples, " << in_loop << " in the loop\n";
    EXPECT_EQ(hottest_count, 1u) << leaf;
    EXPECT_GE(samples, 100u) << leaf;
    EXPECT_GE(static_cast<double>(in_loop), 0.95 * static_cast<double>(samples)) << leaf;
  }
}

// Code no symbol names, as one key on both sides: perf prints `[unknown]`
// with the file it is in; xref names it by its file and an address
// (`libz.so.1.2.13+0x10630`, the function's start where the CFI knows the
// function), or `[unknown 0x7f…]` in no file. Both become
// `[unknown] in libz.so.1.2.13` (`[unknown] in [unknown]`): the same claim,
// that this file's code has no name here.
std::string unnamed_key(const std::string& module) { return "[unknown] in " + module; }

std::string xref_frame_key(const std::string& frame) {
  static const std::regex in_file(R"(^(.+)\+0x[0-9a-f]+$)");
  std::smatch match;
  if (frame.rfind("[unknown 0x", 0) == 0) return unnamed_key("[unknown]");
  if (std::regex_match(frame, match, in_file)) return unnamed_key(match[1]);
  return frame;
}

folded::Stacks xref_keys(const folded::Stacks& stacks) {
  folded::Stacks keyed;
  for (const auto& [stack, count] : stacks) {
    std::string path;
    for (const auto& frame : split_path(stack)) path += (path.empty() ? "" : ";") + xref_frame_key(frame);
    keyed[path] += count;
  }
  return keyed;
}

folded::Stacks perf_keys(const std::vector<perf::Sample>& samples) {
  folded::Stacks keyed;
  for (const auto& sample : samples) {
    std::string path;
    for (const auto& frame : sample.frames) {
      path += (path.empty() ? "" : ";") + (frame.function == "[unknown]" ? unnamed_key(frame.module) : frame.function);
    }
    if (!path.empty()) keyed[path] += 1;
  }
  return keyed;
}

// xref and perf --call-graph dwarf over the same interval of one process:
// every caller path of >= 5 % within 3 points.
void expect_agreement_with_perf(int pid, const std::string& threads, const ScratchDir& scratch) {
  perf::RecordOptions options;
  options.pid = pid;
  options.frequency = 999;
  options.seconds = 8;
  perf::Recording recording;
  std::thread peer([&] { recording = perf::record(options, scratch.file("perf")); });
  const folded::Stacks ours = capture(pid, "dwarf", threads, 8, scratch.file("capture.xprof"));
  peer.join();
  const folded::Comparison comparison = folded::compare(xref_keys(ours), perf_keys(recording.samples));
  std::cout << comparison.report();
  EXPECT_TRUE(comparison.agrees()) << comparison.report();
}

// Frames are named as perf names them: among the names libc has at one
// address, the one perf chooses (clone3, not __clone3: shared/symbol_table's
// best_name), and code without a name by its file (unnamed_key).
TEST(CaptureTruthPerf, TargetPathsAgreeWithPerf) {
  XREF_REQUIRE_PERF();
  const auto target = working_target("profile_target");
  ScratchDir scratch;
  // perf's samples of the monitor thread (0.1 %) stay in: both sides see the whole process
  expect_agreement_with_perf(target->pid(), "", scratch);
}

// python3's functions are named by python3.11's and libc's debug files
// (Debian's -dbgsym packages) in both; libz's static functions have no name
// in either.
TEST(CaptureTruthPerf, PythonPathsAgreeWithPerf) {
  XREF_REQUIRE_PERF();
  TargetProcess python({"/usr/bin/python3", std::string(XREF_SOURCE_DIR) + "/tests/targets/python_profile_target.py"});
  usleep(200000);
  ScratchDir scratch;
  expect_agreement_with_perf(python.pid(), "", scratch);
}

}  // namespace
}  // namespace xref::test
