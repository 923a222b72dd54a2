// xref watch --backend stores against watch_target, whose record lists
// every write it makes to its watched objects (thread, order, offset, old
// and new bytes, writing function): the watch's writes must equal it per
// thread, exactly, for each build (gcc and clang, PIE, non-PIE, stripped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "watch_harness.h"

namespace xref::test {
namespace {

class WatchStores : public ::testing::TestWithParam<std::string> {
 protected:
  // A stripped build names its functions fde_<hex>: the unstripped twin (the same code) names them.
  const TwinNames* twin() {
    if (GetParam() != "watch_target_stripped") return nullptr;
    if (!twin_) twin_.emplace(watch_target_binary("watch_target"));
    return &*twin_;
  }
  std::optional<TwinNames> twin_;
};

// The globals: g_total (lock xadd, lock add, xchg, lock cmpxchg, mov),
// g_counts (per-thread slots, ++ and += through a pointer), g_flag (1-byte
// mov and xchg), and g_config (a 144-byte struct watched whole: fields of
// every width, a 16-byte movups, an array by index, a memcpy into its name).
TEST_P(WatchStores, GlobalsAndTheStructEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "15"});
  const std::vector<std::string> names = {"g_total", "g_counts", "g_flag", "g_config"};
  std::vector<std::string> args = {"--backend", "stores"};
  for (const std::string& name : names) {
    args.push_back(target.address(name) + ":" + std::to_string(target.startup().object(name).size));
  }
  const WatchedRun run = watch_until_exit(target, args);
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  ASSERT_EQ(run.target_status, 0);
  EXPECT_EQ(run.document["operation"], "live_watch");
  EXPECT_EQ(run.document["schema_version"], 1);
  EXPECT_EQ(run.document["result"]["backend"], "stores");
  EXPECT_EQ(run.document["result"]["lost"], 0);
  EXPECT_TRUE(run.document["result"]["unobserved_changes"].empty()) << run.document["result"]["unobserved_changes"].dump();
  const ThreadWrites recorded = recorded_writes(run.record, names);
  // Every object was written, by both threads.
  for (const std::string& name : names) {
    size_t of_object = 0;
    for (const auto& [tid, writes] : recorded) {
      of_object += std::count_if(writes.begin(), writes.end(), [&](const SeenWrite& w) { return w.object == name; });
    }
    EXPECT_GT(of_object, 0u) << name;
  }
  EXPECT_EQ(recorded.size(), 2u);
  expect_writes_equal(recorded, watched_writes(run.document, names, twin()));
}

// The heap buffer: a byte loop, memcpy and memset with run-time lengths
// (real libc calls, seen by their contract and named by their caller).
TEST_P(WatchStores, TheHeapBufferEqualsTheRecordWithLibcWritersByContract) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "15"});
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", target.address("buf") + ":256"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  EXPECT_EQ(run.document["result"]["lost"], 0);
  bool contract_seen = false;
  for (const auto& write : run.document["result"]["writes"]) contract_seen |= write["writer"]["by_contract"].get<bool>();
  EXPECT_TRUE(contract_seen) << "no write by memcpy or memset was seen";
  EXPECT_TRUE(run.document["result"]["unobserved_changes"].empty()) << run.document["result"]["unobserved_changes"].dump();
  expect_writes_equal(recorded_writes(run.record, {"buf"}), watched_writes(run.document, {"buf"}, twin()));
}

INSTANTIATE_TEST_SUITE_P(Builds, WatchStores,
                         ::testing::Values("watch_target", "watch_target_clang", "watch_target_nopie",
                                           "watch_target_stripped"));

}  // namespace
}  // namespace xref::test
