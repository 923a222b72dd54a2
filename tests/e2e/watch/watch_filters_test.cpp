// xref watch --filter, --fetch, --regs, --callers and --mark-file (stores
// engine) against watch_target's record, gcc and clang builds: the filter
// keeps exactly the record's writes that satisfy it (counted either way),
// the fetched values and registers are what the record implies, the stacks
// name the call instructions objdump shows calling the record's writer,
// and the mark stamps follow the writes' order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "objdump_listing.h"
#include "watch_harness.h"

namespace xref::test {
namespace {

class WatchFilters : public ::testing::TestWithParam<std::string> {};

// The record's writes of `objects` for which `keep` holds.
template <class Keep>
ThreadWrites recorded_where(const std::vector<wt::Write>& record, const std::vector<std::string>& objects, Keep keep) {
  std::vector<wt::Write> kept;
  for (const wt::Write& write : record) {
    if (keep(write)) kept.push_back(write);
  }
  return recorded_writes(kept, objects);
}

size_t count_of(const ThreadWrites& writes) {
  size_t total = 0;
  for (const auto& [tid, list] : writes) total += list.size();
  return total;
}

// `xref watch --backend stores ARGS` on a fresh target of this build (two
// writer threads, `rounds` rounds) until it exits; an ARG "@OBJ:LEN" is
// the object's live address with :LEN.
WatchedRun stores_watch(const std::string& build, int rounds, std::vector<std::string> args) {
  WatchTarget target(build, {"--threads", "2", "--rounds", std::to_string(rounds)});
  for (std::string& arg : args) {
    if (arg.empty() || arg[0] != '@') continue;
    const size_t colon = arg.find(':');
    arg = target.address(arg.substr(1, colon - 1)) + arg.substr(colon);
  }
  args.insert(args.begin(), {"--backend", "stores"});
  WatchedRun run = watch_until_exit(target, args);
  EXPECT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  EXPECT_EQ(run.target_status, 0);
  return run;
}

// `value > old` over g_flag (1 byte: a plain mov by set_flag, filtered at
// the store; an xchg by flag_exchange, whose new byte is read at the
// after-site and filtered there) and g_total (8 bytes: lock xadd, lock add,
// xchg, lock cmpxchg, mov).
TEST_P(WatchFilters, ValueAboveOldKeepsExactlyTheRecordsWritesThatSatisfyIt) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::vector<std::string> names = {"g_flag", "g_total"};
  const WatchedRun run = stores_watch(GetParam(), 15, {"--filter", "value > old", "@g_flag:1", "@g_total:8"});
  ASSERT_EQ(run.xref.exit_status, 0);
  EXPECT_EQ(run.document["result"]["filter"], "value > old");
  const ThreadWrites all = recorded_writes(run.record, names);
  const auto grew = [](const wt::Write& w) { return w.new_value() > w.old_value(); };
  const ThreadWrites kept = recorded_where(run.record, names, grew);
  // The filter must have dropped some g_flag writes, or it proves nothing.
  const ThreadWrites all_flag = recorded_writes(run.record, {"g_flag"});
  const ThreadWrites kept_flag = recorded_where(run.record, {"g_flag"}, grew);
  ASSERT_GT(count_of(kept_flag), 0u);
  ASSERT_LT(count_of(kept_flag), count_of(all_flag));
  expect_writes_equal(kept, watched_writes(run.document, names));
  // Counted either way: every write, and those that passed.
  const nlohmann::json& summary = run.document["result"]["summary"];
  EXPECT_EQ(summary[0]["writes"].get<size_t>(), count_of(all_flag));
  EXPECT_EQ(summary[0]["passed"].get<size_t>(), count_of(kept_flag));
  EXPECT_EQ(summary[0]["unfiltered"].get<size_t>(), 0u);
  EXPECT_EQ(summary[1]["writes"].get<size_t>() + summary[0]["writes"].get<size_t>(), count_of(all));
}

// Writes that cover part of the range (g_config's first 8 bytes: fields of
// 1, 1, 2 and 4 bytes): `value` and `old` are the whole 8 bytes, the rest as
// it is; only the written bytes differ between them, so `value > old` holds
// exactly where the written bytes, as an integer, grew.
TEST_P(WatchFilters, APartialWriteIsFilteredOnTheWholeRange) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 15, {"--filter", "value > old", "@g_config:8"});
  ASSERT_EQ(run.xref.exit_status, 0);
  auto in_range = [](const wt::Write& w) { return w.offset + w.length <= 8; };
  const ThreadWrites all = recorded_where(run.record, {"g_config"}, in_range);
  const ThreadWrites kept = recorded_where(run.record, {"g_config"}, [&](const wt::Write& w) {
    return in_range(w) && w.new_value() > w.old_value();
  });
  ASSERT_GT(count_of(kept), 0u);
  ASSERT_LT(count_of(kept), count_of(all));
  expect_writes_equal(kept, watched_writes(run.document, {"g_config"}));
}

// `value == N` on a 1-byte range: the writes of exactly that new value.
TEST_P(WatchFilters, ValueEqualsKeepsTheWritesOfThatValue) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 15, {"--filter", "value == 0x81 || old == 0x83", "@g_flag:1"});
  ASSERT_EQ(run.xref.exit_status, 0);
  const ThreadWrites kept = recorded_where(run.record, {"g_flag"}, [](const wt::Write& w) {
    return w.new_value() == 0x81 || w.old_value() == 0x83;
  });
  ASSERT_GT(count_of(kept), 0u);
  expect_writes_equal(kept, watched_writes(run.document, {"g_flag"}));
}

// --fetch: set_flag and flag_exchange store their first argument (dil in
// both builds: objdump), so at each store `arg` is the record's new byte;
// the filter over it keeps flag_exchange's writes (0x80 | round) only.
TEST_P(WatchFilters, FetchedValuesAreWhatTheRecordImplies) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 15, 
                                      {"--fetch", "arg=%di:u8,sp=%sp:u64", "--filter", "arg >= 0x80", "@g_flag:1"});
  ASSERT_EQ(run.xref.exit_status, 0);
  const ThreadWrites kept =
      recorded_where(run.record, {"g_flag"}, [](const wt::Write& w) { return w.function == "flag_exchange"; });
  expect_writes_equal(kept, watched_writes(run.document, {"g_flag"}));
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    ASSERT_EQ(write["fetches"].size(), 2u) << write.dump();
    EXPECT_EQ(write["fetches"][0]["name"], "arg");
    EXPECT_EQ(hex_field(write["fetches"][0]["value"]), std::stoull(write["new_bytes"].get<std::string>(), nullptr, 16))
        << write.dump();
    EXPECT_NE(hex_field(write["fetches"][1]["value"]), 0u);
  }
  EXPECT_EQ(run.document["result"]["fetch"], "arg=%di:u8,sp=%sp:u64");
}

// --regs: the registers at the uprobe, before the store: rip is the
// writer's own address, and dil the byte it stores.
TEST_P(WatchFilters, RegistersAreTakenAtTheStoreBeforeItRuns) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 10, {"--regs", "@g_flag:1"});
  ASSERT_EQ(run.xref.exit_status, 0);
  expect_writes_equal(recorded_writes(run.record, {"g_flag"}), watched_writes(run.document, {"g_flag"}));
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    ASSERT_TRUE(write["regs"].is_object()) << write.dump();
    EXPECT_EQ(write["regs_at"], "before_store");
    EXPECT_EQ(hex_field(write["regs"]["rip"]), hex_field(write["writer"]["pc"])) << write.dump();
    EXPECT_EQ(hex_field(write["regs"]["rdi"]) & 0xff, std::stoull(write["new_bytes"].get<std::string>(), nullptr, 16))
        << write.dump();
  }
}

// --callers: frame 0 is the writer, frame 1 a return address whose call
// instruction (objdump) calls the record's writer function; the stacks
// counted per writer site add up to the writes.
TEST_P(WatchFilters, CallersNameTheCallsOfTheRecordsWriters) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 10, {"--callers", "@g_flag:1", "@g_total:8"});
  ASSERT_EQ(run.xref.exit_status, 0);
  const std::vector<std::string> names = {"g_flag", "g_total"};
  expect_writes_equal(recorded_writes(run.record, names), watched_writes(run.document, names));
  const ObjdumpListing listing(watch_target_binary(GetParam()));
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    const nlohmann::json& stack = write["stack"];
    ASSERT_GE(stack.size(), 2u) << write.dump();
    const std::string writer = write["writer"]["function"].get<std::string>();
    EXPECT_EQ(stack[0]["kind"], "pc");
    EXPECT_EQ(stack[0]["function"].get<std::string>().rfind(writer, 0), 0u) << write.dump();
    ASSERT_FALSE(stack[1]["call_site_va"].is_null()) << write.dump();
    const uint64_t call_site = hex_field(stack[1]["call_site_va"]);
    const auto calls = listing.in_range(call_site, call_site + 1);
    ASSERT_EQ(calls.size(), 1u) << "no instruction at " << std::hex << call_site;
    EXPECT_TRUE(calls[0].is_call()) << calls[0].mnemonic;
    EXPECT_EQ(calls[0].target_symbol(), writer) << write.dump();
  }
  const nlohmann::json& callers = run.document["result"]["callers"];
  EXPECT_EQ(callers["unread"], 0);
  size_t counted = 0;
  for (const nlohmann::json& stack : callers["stacks"]) counted += stack["writes"].get<size_t>();
  EXPECT_EQ(counted, run.document["result"]["writes"].size());
  EXPECT_GE(callers["distinct"].get<size_t>(), 7u);  // five g_total writers, two g_flag ones
}

// --mark-file: a log the test appends "tick N" to while the target writes;
// each write is stamped with the latest tick written before it, so the
// stamps never go back in the writes' time order, and ticks change under
// them.
TEST_P(WatchFilters, MarkStampsFollowTheWritesOrder) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string log = temp_path("marks.log");
  {
    std::ofstream out(log, std::ios::trunc);
    out << "tick 0\n";
  }
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "40", "--interval-us", "2000"});
  std::atomic<bool> done{false};
  std::thread ticker([&] {
    for (int tick = 1; !done; ++tick) {
      std::ofstream out(log, std::ios::app);
      out << "tick " << tick << "\n" << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const WatchedRun run = watch_until_exit(target, {"--backend", "stores", "--mark-file", log, "--mark-regex",
                                                   "^tick", target.address("g_flag") + ":1"});
  done = true;
  ticker.join();
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  expect_writes_equal(recorded_writes(run.record, {"g_flag"}), watched_writes(run.document, {"g_flag"}));
  std::vector<nlohmann::json> writes(run.document["result"]["writes"].begin(), run.document["result"]["writes"].end());
  // A stamp is the latest line written before the write's time: in time order they never go back.
  std::sort(writes.begin(), writes.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["time_ns"] < b["time_ns"]; });
  long previous = -1;
  std::set<long> ticks;
  for (const nlohmann::json& write : writes) {
    ASSERT_TRUE(write["mark"].is_string()) << write.dump();
    const long tick = std::stol(write["mark"].get<std::string>().substr(5));
    EXPECT_GE(tick, previous) << write.dump();
    previous = std::max(previous, tick);
    ticks.insert(tick);
  }
  EXPECT_GT(ticks.size(), 2u);
  EXPECT_EQ(run.document["result"]["marks"]["file"], log);
}

// A libc writer by contract (memcpy, memset into the heap buffer): the
// fetches are read at its entry, so `dst` (rdi) and `len` (rdx) are where
// and how much the record says it wrote; the new bytes are read at its
// return.
TEST_P(WatchFilters, FetchesOfALibcWriterAreItsArguments) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 10, {"--fetch", "dst=%di:u64,len=%dx:u64", "@buf:256"});
  ASSERT_EQ(run.xref.exit_status, 0);
  expect_writes_equal(recorded_writes(run.record, {"buf"}), watched_writes(run.document, {"buf"}));
  size_t by_contract = 0;
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    if (!write["writer"]["by_contract"].get<bool>()) continue;
    ++by_contract;
    EXPECT_EQ(hex_field(write["fetches"][0]["value"]), hex_field(write["address"])) << write.dump();
    EXPECT_EQ(hex_field(write["fetches"][1]["value"]), write["length"].get<uint64_t>()) << write.dump();
    EXPECT_TRUE(write["new_read_after"].get<bool>());
  }
  EXPECT_GT(by_contract, 0u);
}

// As probe: the filter first, then --first over the writes that passed
// it: the first 3 writes where the byte grows are recorded, all that pass
// are counted.
TEST_P(WatchFilters, FirstCountsOnlyTheWritesThatPassedTheFilter) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const WatchedRun run = stores_watch(GetParam(), 15, {"--filter", "value > old", "--first", "3", "@g_flag:1"});
  ASSERT_EQ(run.xref.exit_status, 0);
  const ThreadWrites kept =
      recorded_where(run.record, {"g_flag"}, [](const wt::Write& w) { return w.new_value() > w.old_value(); });
  ASSERT_GT(count_of(kept), 3u);
  const nlohmann::json& writes = run.document["result"]["writes"];
  ASSERT_EQ(writes.size(), 3u) << writes.dump();
  for (const nlohmann::json& write : writes) {
    EXPECT_GT(std::stoull(write["new_bytes"].get<std::string>(), nullptr, 16),
              std::stoull(write["old_bytes"].get<std::string>(), nullptr, 16))
        << write.dump();
  }
  EXPECT_EQ(run.document["result"]["summary"][0]["passed"].get<size_t>(), count_of(kept));
}

INSTANTIATE_TEST_SUITE_P(Builds, WatchFilters, ::testing::Values("watch_target", "watch_target_clang"));

// Bad --filter and --fetch input: one line naming the option, status 2
// (invalid_argument), the JSON error object, nothing attached.
TEST(WatchFilterInput, BadFilterAndFetchAreRefusedNamingTheOption) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "2"});
  const std::string flag = target.address("g_flag") + ":1";
  const std::string pid = std::to_string(target.pid());
  const XrefRun unknown = run_xref({"watch", "--pid", pid, flag, "--filter", "nosuch > 1"});
  EXPECT_EQ(unknown.exit_status, 2) << unknown.err;
  EXPECT_EQ(unknown.err.rfind("xref: error: --filter: ", 0), 0u) << unknown.err;
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  const XrefRun wide = run_xref({"watch", "--pid", pid, target.address("g_config") + ":144", "--filter", "value == 1",
                                 "--json"});
  EXPECT_EQ(wide.exit_status, 2) << wide.err;
  EXPECT_EQ(wide.json()["error"]["code"], "invalid_argument") << wide.out;
  EXPECT_NE(wide.json()["error"]["message"].get<std::string>().find("is 144 bytes"), std::string::npos) << wide.out;
  const XrefRun fetch = run_xref({"watch", "--pid", pid, flag, "--fetch", "x=%nosuch:u8"});
  EXPECT_EQ(fetch.exit_status, 2) << fetch.err;
  EXPECT_EQ(fetch.err.rfind("xref: error: --fetch: ", 0), 0u) << fetch.err;
  target.go();
  EXPECT_EQ(target.finish(), 0);
}

}  // namespace
}  // namespace xref::test
