// The ground truth and the peer checked against each other: perf record
// (Debian's linux-perf) on profile_target, built without frame pointers
// (--call-graph dwarf) and with them (--call-graph fp), must see each
// leaf's share of the working threads' CPU within 3 points of what the
// target measured itself with CLOCK_THREAD_CPUTIME_ID, and reach each leaf
// along the path the target recorded in at least 95 % of the leaf's
// samples. This validates the target's calibration and the harness that
// the xref profile tests compare with; it fails when either is wrong.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>

#include "profile_harness.h"
#include "require.h"
#include "run_xref.h"

namespace xref::test {
namespace {

class PerfTruth : public ::testing::TestWithParam<BuildCase> {};

TEST_P(PerfTruth, LeafSharesAndPathsMatchTheRecord) {
  XREF_REQUIRE_PERF();
  const auto started = working_target(GetParam().build);
  ProfileTarget& target = *started;
  const std::set<int> tids = working_tids(target);
  perf::RecordOptions options;
  options.pid = target.pid();
  options.frequency = 1999;  // perf record costs seconds to start and end: few long rounds
  options.seconds = 4;
  options.call_graph = GetParam().callers;
  // 6000 samples: a 40 % share's sampling error is 0.6 points.
  const perf::Recording recording =
      perf_record_threads(options, tids, 6000, 10, target.scratch_file("perf"));
  const pt::Record& record = target.finish();
  ASSERT_EQ(record.tids(), tids);
  const folded::Stacks stacks = perf::fold(recording.samples);
  const auto agreements = agree_with_record(stacks, record);
  const double complete = complete_percent(stacks);
  std::cout << GetParam().build << ", perf --call-graph " << GetParam().callers << ": "
            << recording.samples.size() << " samples, " << complete << " % reach _start/clone3; perf record "
            << recording.cost.record_wall << " s (" << recording.cost.record_cpu << " s CPU), perf script "
            << recording.cost.script_wall << " s (" << recording.cost.script_cpu << " s CPU), "
            << recording.cost.data_bytes / 1000000 << " MB\n"
            << agreement_table(agreements);
  ASSERT_GE(recording.samples.size(), 2000u) << "too few samples to judge shares within 3 points";
  for (const auto& agreement : agreements) {
    EXPECT_NEAR(agreement.total, agreement.recorded, 3.0) << agreement.leaf << " (total share)";
    EXPECT_NEAR(agreement.self, agreement.recorded, 3.0) << agreement.leaf << " (self share)";
    EXPECT_GE(agreement.on_path_percent(), 95.0) << agreement.leaf << ": samples on the recorded path";
  }
  // Where in each leaf: its hottest sampled instruction is in its hot loop
  // (what annotate must find), and so are nearly all its self samples.
  const std::map<std::string, std::string> loop_mnemonic = {
      {"leaf_a", "imul"}, {"leaf_b", "shl"}, {"leaf_c", "div"}, {"leaf_r", "rol"}};
  const std::string binary = profile_target_binary(GetParam().build);
  const LoadSegments segments(binary);
  for (const auto& [leaf, mnemonic] : loop_mnemonic) {
    const AddressRange loop = hot_loop(binary, leaf, mnemonic);
    std::map<uint64_t, uint64_t> by_address;
    uint64_t self = 0, in_loop = 0;
    for (const auto& sample : recording.samples) {
      const perf::Frame* innermost = sample.user_leaf();
      if (innermost == nullptr || innermost->function != leaf) continue;
      const uint64_t address = segments.static_va(innermost->address);
      ++by_address[address];
      ++self;
      in_loop += loop.contains(address) ? 1 : 0;
    }
    ASSERT_FALSE(by_address.empty()) << leaf;
    auto hottest = by_address.begin();
    for (auto it = by_address.begin(); it != by_address.end(); ++it) {
      if (it->second > hottest->second) hottest = it;
    }
    std::cout << leaf << ": hot loop " << hex_string(loop.first) << ".." << hex_string(loop.last) << ", hottest "
              << hex_string(hottest->first) << ", " << 100.0 * static_cast<double>(in_loop) / static_cast<double>(self)
              << " % of its self samples in the loop\n";
    EXPECT_TRUE(loop.contains(hottest->first)) << leaf << ": hottest instruction " << hex_string(hottest->first);
    EXPECT_GE(static_cast<double>(in_loop), 0.95 * static_cast<double>(self)) << leaf;
  }
  if (GetParam().callers == "dwarf") {
    // The target's stacks are shallow (at most 11 small frames): perf's
    // 8 KB copy holds them whole, and libc's CFI takes them down to _start
    // and clone3. (perf's frame-pointer chains end one frame below main and
    // worker_main, in __libc_start_call_main and start_thread: libc keeps no
    // frame pointers. On path, but not down to the roots.)
    EXPECT_GE(complete, 95.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, PerfTruth,
                         ::testing::Values(BuildCase{"profile_target", "dwarf"}, BuildCase{"profile_target_clang", "dwarf"},
                                           BuildCase{"profile_target_nopie", "dwarf"},
                                           BuildCase{"profile_target_fp", "fp"},
                                           BuildCase{"profile_target_clang_fp", "fp"}),
                         build_case_name);

}  // namespace
}  // namespace xref::test
