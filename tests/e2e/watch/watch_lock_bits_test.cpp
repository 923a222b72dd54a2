// lock or / lock and (watch_target --lock-bits: flag_bits sets and clears
// bits of g_flag with __atomic_fetch_or/and, result unused). The kernel
// takes no uprobe on a lock prefix, so the stores engine sees them at the
// next instruction, where no register holds the old value and neither
// operation can be undone from the new one: the helper takes the bytes the
// writes before left (every write is recorded), checked against what the
// instruction does. Every write of g_flag, these included, equals the
// target's record, for the gcc, clang and non-PIE builds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "watch_harness.h"

namespace xref::test {
namespace {

class WatchLockBits : public ::testing::TestWithParam<std::string> {};

TEST_P(WatchLockBits, LockOrAndOldValuesAreWhatTheWritesBeforeLeft) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "10", "--lock-bits"});
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", target.address("g_flag") + ":1"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  const auto& result = run.document["result"];
  EXPECT_EQ(result["lost"], 0);
  EXPECT_TRUE(result["unobserved_changes"].empty()) << result["unobserved_changes"].dump();
  size_t recorded_bits = 0;
  for (const wt::Write& write : run.record) recorded_bits += write.function == "flag_bits";
  ASSERT_EQ(recorded_bits, 2u * 2 * 10) << "two lock writes per round and thread";
  size_t seen_bits = 0;
  for (const auto& write : result["writes"]) {
    const std::string text = write["writer"]["text"].get<std::string>();
    const bool lock_bits = text.rfind("lock or ", 0) == 0 || text.rfind("lock and ", 0) == 0;
    EXPECT_EQ(write["old_from_records"].get<bool>(), lock_bits) << write.dump();
    if (!lock_bits) continue;
    ++seen_bits;
    EXPECT_FALSE(write["old"].is_null()) << write.dump();
    EXPECT_TRUE(write["new_read_after"].get<bool>()) << write.dump();
  }
  EXPECT_EQ(seen_bits, recorded_bits);
  expect_writes_equal(recorded_writes(run.record, {"g_flag"}), watched_writes(run.document, {"g_flag"}));
}

INSTANTIATE_TEST_SUITE_P(Builds, WatchLockBits, ::testing::Values("watch_target", "watch_target_clang", "watch_target_nopie"));

}  // namespace
}  // namespace xref::test
