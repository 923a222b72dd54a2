// xref watch's --follow, --changed and kernel writes, against
// watch_target's record, for the gcc, clang and non-PIE builds: a moved
// buffer followed, read(2) into a watched buffer reported as an unobserved
// change, only changing writes with --changed. (How a watch ends, and that
// nothing of it is left: watch_ends_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "watch_harness.h"

namespace xref::test {
namespace {

class WatchFollow : public ::testing::TestWithParam<std::string> {};

// `moving` moves (realloc) every 4 rounds; its slot, then its length field,
// are written: --follow re-arms on the new block before the length write
// (the target waits 20 ms for it), and every write to [16, 32) of the block
// it is in at the time equals the record.
TEST_P(WatchFollow, AMovedBufferIsFollowedAndItsWritesEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "1", "--rounds", "16", "--realloc", "--follow-delay-us", "20000"});
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", "--follow", "moving_slot->+16:16"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  const auto& result = run.document["result"];
  ASSERT_EQ(result["ranges"].size(), 2u);
  EXPECT_TRUE(result["ranges"][0]["is_slot"].get<bool>());
  EXPECT_EQ(result["ranges"][1]["follow_slot"], 0);
  // One re-arm per move of the slot the target recorded.
  size_t moves = 0;
  ThreadWrites recorded;
  for (const wt::Write& write : run.record) {
    if (write.object == "moving_slot") {
      ++moves;
      recorded[write.tid].push_back({"moving_slot", write.offset, wt::hex_of(write.old_bytes),
                                     wt::hex_of(write.new_bytes), write.function});
    } else if (auto part = wt::clip(write, "moving", 16, 16)) {
      recorded[write.tid].push_back({"moving", part->offset, wt::hex_of(part->old_bytes), wt::hex_of(part->new_bytes),
                                     write.function});
    }
  }
  ASSERT_GE(moves, 3u);
  EXPECT_EQ(result["rearms"].size(), moves);
  for (const auto& rearm : result["rearms"]) EXPECT_FALSE(rearm["parked"].get<bool>());
  EXPECT_EQ(result["summary"][1]["rearms"], moves);
  expect_writes_equal(recorded, watched_writes(run.document, {"moving_slot", "moving"}, nullptr, {0, 16}));
}

// read(2) from a pipe into `buf` is the kernel's write: no store probe can
// see it, the re-read at the next record or drain does. Every byte a kernel
// read of the record changed is in an unobserved change, and every byte an
// unobserved change changed was written by a kernel read (reads close in
// time may be reported as one change); the user-space writes still equal
// the record. The last round's read may come after the last drain that
// could read the target's memory (it exits right after): its bytes may go
// unreported, and that is all that may.
TEST_P(WatchFollow, AKernelWriteIsReportedAsAnUnobservedChange) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "1", "--rounds", "6", "--read-fd"});
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", target.address("buf") + ":256"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  std::set<uint64_t> kernel_changed;   // bytes a kernel read changed, but the last
  std::set<uint64_t> kernel_written;   // bytes a kernel read wrote
  size_t last_read = 0;
  for (size_t i = 0; i < run.record.size(); ++i) {
    if (run.record[i].object == "buf" && run.record[i].by_kernel()) last_read = i;
  }
  for (size_t at = 0; at < run.record.size(); ++at) {
    const wt::Write& write = run.record[at];
    if (write.object != "buf" || !write.by_kernel()) continue;
    for (uint64_t i = 0; i < write.length; ++i) {
      kernel_written.insert(write.offset + i);
      if (at == last_read) continue;
      if (write.old_bytes[i] != write.new_bytes[i]) kernel_changed.insert(write.offset + i);
    }
  }
  ASSERT_FALSE(kernel_changed.empty());
  const auto& unobserved = run.document["result"]["unobserved_changes"];
  std::set<uint64_t> reported;
  for (const auto& change : unobserved) {
    EXPECT_TRUE(change["tid"].is_null());
    EXPECT_LE(change["since_ns"].get<uint64_t>(), change["time_ns"].get<uint64_t>());
    const auto old_bytes = wt::bytes_of_hex(change["old_bytes"].get<std::string>());
    const auto new_bytes = wt::bytes_of_hex(change["new_bytes"].get<std::string>());
    ASSERT_TRUE(old_bytes && new_bytes);
    for (size_t i = 0; i < old_bytes->size(); ++i) {
      if ((*old_bytes)[i] == (*new_bytes)[i]) continue;
      const uint64_t at = change["offset"].get<uint64_t>() + i;
      reported.insert(at);
      EXPECT_TRUE(kernel_written.count(at)) << "byte " << at << " changed, and no kernel read wrote it: " << change.dump();
    }
  }
  for (uint64_t at : kernel_changed) EXPECT_TRUE(reported.count(at)) << "a kernel read changed byte " << at << " unreported";
  expect_writes_equal(recorded_writes(run.record, {"buf"}), watched_writes(run.document, {"buf"}));
}

// --changed: the writes that leave the bytes as they were are counted, not
// recorded (a failing lock cmpxchg with --cas-miss writes g_total back).
TEST_P(WatchFollow, ChangedRecordsOnlyWritesThatChangeTheBytes) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "8", "--cas-miss"});
  const WatchedRun run =
      watch_until_exit(target, {"--backend", "stores", "--changed", target.address("g_total") + ":8", target.address("buf") + ":256"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  ThreadWrites recorded;
  uint64_t unchanged = 0;
  for (const wt::Write& write : run.record) {
    if (write.object != "g_total" && write.object != "buf") continue;
    if (!write.changed()) {
      ++unchanged;
      continue;
    }
    recorded[write.tid].push_back(
        {write.object, write.offset, wt::hex_of(write.old_bytes), wt::hex_of(write.new_bytes), write.function});
  }
  ASSERT_GT(unchanged, 0u) << "the target wrote no unchanged value: the test proves nothing";
  const auto& summary = run.document["result"]["summary"];
  EXPECT_EQ(summary[0]["unchanged"].get<uint64_t>() + summary[1]["unchanged"].get<uint64_t>(), unchanged);
  expect_writes_equal(recorded, watched_writes(run.document, {"g_total", "buf"}));
}

INSTANTIATE_TEST_SUITE_P(Builds, WatchFollow, ::testing::Values("watch_target", "watch_target_clang", "watch_target_nopie"));

}  // namespace
}  // namespace xref::test
