// xref watch --backend stores against watch_target's record: a thread
// started after attach, the sampling bounds (--every, --first,
// --until-hits), the scope (--in MODULE, --in FN) and --jsonl.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "watch_harness.h"

namespace xref::test {
namespace {

// A thread the target starts after go (after the watch attached) is
// watched from its first write: uprobes are on the code, not the threads.
TEST(WatchOptions, AThreadStartedAfterAttachIsWatchedFromItsFirstWrite) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "10", "--late-thread"});
  const std::vector<std::string> names = {"g_total", "g_counts", "g_flag", "g_config"};
  std::vector<std::string> args = {"--backend", "stores"};
  for (const std::string& name : names) {
    args.push_back(target.address(name) + ":" + std::to_string(target.startup().object(name).size));
  }
  const WatchedRun run = watch_until_exit(target, args);
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  ASSERT_EQ(run.target_status, 0);
  ASSERT_TRUE(target.exit_lines().late_tid.has_value()) << "the target started no late thread";
  const long late = *target.exit_lines().late_tid;
  EXPECT_EQ(run.document["result"]["lost"], 0);
  EXPECT_TRUE(run.document["result"]["unobserved_changes"].empty()) << run.document["result"]["unobserved_changes"].dump();
  const ThreadWrites recorded = recorded_writes(run.record, names);
  ASSERT_EQ(recorded.size(), 3u);
  ASSERT_TRUE(recorded.count(late));
  EXPECT_GE(recorded.at(late).size(), 10u);
  expect_writes_equal(recorded, watched_writes(run.document, names));
}

// One writer thread, g_total and g_flag watched: the record's writes of
// each object in order, and the ones a bound lets through (`keep(object,
// nth, total)`: the object's nth write, the total-th of both).
template <typename Keep>
ThreadWrites bounded_record(const std::vector<wt::Write>& record, Keep keep) {
  ThreadWrites kept;
  std::map<std::string, uint64_t> nth;
  uint64_t total = 0;
  for (const wt::Write& write : record) {
    if (write.object != "g_total" && write.object != "g_flag") continue;
    ++total;
    if (!keep(write.object, ++nth[write.object], total)) continue;
    kept[write.tid].push_back(
        {write.object, write.offset, wt::hex_of(write.old_bytes), wt::hex_of(write.new_bytes), write.function});
  }
  return kept;
}

WatchedRun bounded_run(const std::vector<std::string>& bound) {
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "12"});
  std::vector<std::string> args = {"--backend", "stores", target.address("g_total") + ":8", target.address("g_flag") + ":1"};
  args.insert(args.end(), bound.begin(), bound.end());
  return watch_until_exit(target, args);
}

// Per range, every Nth write (counted in BPF, of the writes that pass).
TEST(WatchOptions, EveryRecordsEachRangesNthWrites) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = bounded_run({"--every", "3"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  const auto& result = run.document["result"];
  EXPECT_EQ(run.document["limits"]["every"], 3);
  EXPECT_EQ(run.document["coverage"]["unobserved_check"].get<std::string>().rfind("resynced", 0), 0u);
  const ThreadWrites all = bounded_record(run.record, [](const std::string&, uint64_t, uint64_t) { return true; });
  ASSERT_EQ(all.size(), 1u);
  // Every write is counted, a third recorded.
  uint64_t totals = 0, flags = 0;
  for (const SeenWrite& write : all.begin()->second) (write.object == "g_total" ? totals : flags) += 1;
  EXPECT_EQ(result["summary"][0]["writes"], totals);
  EXPECT_EQ(result["summary"][1]["writes"], flags);
  EXPECT_EQ(result["summary"][0]["recorded"], totals / 3);
  EXPECT_EQ(result["summary"][1]["recorded"], flags / 3);
  expect_writes_equal(bounded_record(run.record, [](const std::string&, uint64_t nth, uint64_t) { return nth % 3 == 0; }),
                      watched_writes(run.document, {"g_total", "g_flag"}));
}

// Per range, the first N writes; with --every, the first N of those.
TEST(WatchOptions, FirstRecordsEachRangesFirstWrites) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = bounded_run({"--first", "4"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  EXPECT_EQ(run.document["result"]["stop_reason"], "target_exited");
  expect_writes_equal(bounded_record(run.record, [](const std::string&, uint64_t nth, uint64_t) { return nth <= 4; }),
                      watched_writes(run.document, {"g_total", "g_flag"}));
  const WatchedRun both = bounded_run({"--every", "2", "--first", "3"});
  ASSERT_EQ(both.xref.exit_status, 0) << both.xref.err;
  expect_writes_equal(
      bounded_record(both.record, [](const std::string&, uint64_t nth, uint64_t) { return nth % 2 == 0 && nth <= 6; }),
      watched_writes(both.document, {"g_total", "g_flag"}));
}

// --until-hits N: the first N writes of all ranges, then the watch stops
// (stop reason until_hits) while the target runs on to its end.
TEST(WatchOptions, UntilHitsStopsAfterTheFirstNWritesOfAllRanges) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = bounded_run({"--until-hits", "7"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  ASSERT_EQ(run.target_status, 0);
  EXPECT_EQ(run.document["result"]["stop_reason"], "until_hits");
  EXPECT_EQ(run.document["result"]["writes"].size(), 7u);
  const ThreadWrites kept = bounded_record(run.record, [](const std::string&, uint64_t, uint64_t total) { return total <= 7; });
  expect_writes_equal(kept, watched_writes(run.document, {"g_total", "g_flag"}));
  EXPECT_GT(bounded_record(run.record, [](const std::string&, uint64_t, uint64_t) { return true; }).begin()->second.size(),
            7u) << "the target wrote no more than the bound: the test proves nothing";
}

// --in FN: only the named functions' stores are probed; the writes of
// g_total and g_flag by them equal the record's, and the others' show
// only as unobserved changes.
TEST(WatchOptions, InFunctionsProbesOnlyTheirStores) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "6"});
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", "--in", "total_store", "--in", "set_flag",
                                                   target.address("g_total") + ":8", target.address("g_flag") + ":1"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  const auto& sites = run.document["result"]["sites"];
  EXPECT_EQ(sites["functions"], 2) << sites.dump();
  EXPECT_NE(sites["scope"].get<std::string>().find("total_store"), std::string::npos) << sites.dump();
  ThreadWrites recorded;
  size_t others = 0;
  for (const wt::Write& write : run.record) {
    if (write.object != "g_total" && write.object != "g_flag") continue;
    if (write.function != "total_store" && write.function != "set_flag") {
      ++others;
      continue;
    }
    recorded[write.tid].push_back(
        {write.object, write.offset, wt::hex_of(write.old_bytes), wt::hex_of(write.new_bytes), write.function});
  }
  ASSERT_GT(others, 0u);
  expect_writes_equal(recorded, watched_writes(run.document, {"g_total", "g_flag"}));
  EXPECT_FALSE(run.document["result"]["unobserved_changes"].empty()) << "the other writers' changes went unreported";
}

// --in MODULE: the executable named as xref maps shows it is the whole
// executable (its stores, and libc's writers by contract): the heap
// buffer's writes equal the record. The dynamic loader alone, in place of
// it, has no store of watch_target's: none of g_total's writes is seen as
// a write, and its changes are unobserved ones. (libc.so.6 in scope would
// probe every store of libc the target runs: watch_target then runs for
// minutes, so the loader stands for "another module" here.)
TEST(WatchOptions, InModuleIsTheWholeModule) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  {
    WatchTarget target("watch_target", {"--threads", "2", "--rounds", "6"});
    const WatchedRun run = watch_until_exit(target, {"--backend", "stores", "--in", "watch_target", target.address("buf") + ":256"});
    ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
    EXPECT_EQ(run.document["result"]["sites"]["scope"].get<std::string>().rfind("watch_target: ", 0), 0u)
        << run.document["result"]["sites"].dump();
    EXPECT_TRUE(run.document["result"]["unobserved_changes"].empty()) << run.document["result"]["unobserved_changes"].dump();
    expect_writes_equal(recorded_writes(run.record, {"buf"}), watched_writes(run.document, {"buf"}));
  }
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "4"});
  const WatchedRun run =
      watch_until_exit(target, {"--backend", "stores", "--in", "ld-linux-x86-64.so.2", target.address("g_total") + ":8"});
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err;
  const auto& result = run.document["result"];
  EXPECT_EQ(result["sites"]["scope"].get<std::string>().rfind("ld-linux-x86-64.so.2: ", 0), 0u) << result["sites"].dump();
  EXPECT_GT(result["sites"]["functions"].get<uint64_t>(), 0u);
  EXPECT_TRUE(result["writes"].empty()) << result["writes"].dump();
  EXPECT_FALSE(result["unobserved_changes"].empty());
}

// --jsonl: each record a JSON line as it is kept, then the document as one
// line (type result); the lines are the document's stream, in order.
TEST(WatchOptions, JsonLinesAreTheStreamThenTheDocument) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "6", "--read-fd"});
  BackgroundXref xref({"watch", "--pid", std::to_string(target.pid()), "--backend", "stores", "--jsonl", "--duration-ms",
                       "0", "--max-events", "0", target.address("g_total") + ":8", target.address("buf") + ":256"});
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  target.go();
  EXPECT_EQ(target.finish(), 0);
  const XrefRun run = xref.finish();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::vector<nlohmann::json> lines;
  std::istringstream text(run.out);
  std::string line;
  while (std::getline(text, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_GE(lines.size(), 2u);
  const nlohmann::json document = lines.back();
  lines.pop_back();
  EXPECT_EQ(document["type"], "result");
  EXPECT_EQ(document["operation"], "live_watch");
  const auto& stream = document["result"]["stream"];
  ASSERT_EQ(lines.size(), stream.size());
  size_t writes = 0, unobserved = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i], stream[i]) << "line " << i + 1;
    writes += lines[i]["type"] == "write";
    unobserved += lines[i]["type"] == "unobserved_change";
  }
  EXPECT_EQ(writes, document["result"]["writes"].size());
  EXPECT_EQ(unobserved, document["result"]["unobserved_changes"].size());
  EXPECT_GT(unobserved, 0u) << "the kernel's reads into buf were not streamed";
  const std::vector<wt::Write> record = target.record();
  expect_writes_equal(recorded_writes(record, {"g_total", "buf"}), watched_writes(document, {"g_total", "buf"}));
}

}  // namespace
}  // namespace xref::test
