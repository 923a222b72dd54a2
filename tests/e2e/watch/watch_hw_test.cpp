// xref watch --backend hw against watch_target. Where debug registers do
// not fire (the live self-test, doctor's `hardware_breakpoints`, counts no
// write), `--backend hw` is refused with the self-test's count and its own
// exit status: tested here, never skipped. The x86 rules are refused on
// every host. The recording tests need registers that fire: they skip only
// when the helper refuses for that reason AND this test's own breakpoint
// (opened here, not by xref) counts no write either; a refusal the test's
// own breakpoint contradicts is a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "breakpoint_fires.h"
#include "watch_harness.h"

namespace xref::test {
namespace {

constexpr int kDoNotFire = 19, kRule = 20, kExhausted = 21;

std::vector<std::string> watch_args(const WatchTarget& target, std::vector<std::string> extra) {
  std::vector<std::string> args = {"watch", "--pid", std::to_string(target.pid()), "--duration-ms", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(WatchHw, RefusedWithTheSelfTestsCountWhereRegistersDoNotFire) {
  XREF_REQUIRE(bpf_usable(), "root for perf breakpoints");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "2"});
  const std::string total = target.address("g_total") + ":8";
  const XrefRun text = run_xref(watch_args(target, {"--backend", "hw", total}));
  if (breakpoints_fire_here()) {
    EXPECT_NE(text.exit_status, kDoNotFire) << text.err;
    return;
  }
  EXPECT_EQ(text.exit_status, kDoNotFire) << text.err << text.out;
  EXPECT_EQ(text.out, "");
  const std::string line = text.err.substr(0, text.err.find('\n'));
  EXPECT_EQ(text.err, line + "\n") << "one line";
  EXPECT_EQ(line.rfind("xref: error: debug registers do not fire on this host: doctor's self-test counted ", 0), 0u)
      << line;
  EXPECT_NE(line.find(" of 100 writes; use --backend stores"), std::string::npos) << line;
  const XrefRun json = run_xref(watch_args(target, {"--backend", "hw", total, "--json"}));
  EXPECT_EQ(json.exit_status, kDoNotFire);
  EXPECT_EQ(json.json()["error"]["code"], "debug_registers_do_not_fire") << json.out;
  // And `auto` says why it took stores instead.
  const XrefRun automatic = run_xref(watch_args(target, {total, "--json"}));
  ASSERT_EQ(automatic.exit_status, 0) << automatic.err;
  EXPECT_EQ(automatic.json()["result"]["backend"], "stores");
  const std::string reason = automatic.json()["result"]["backend_reason"];
  EXPECT_EQ(reason.rfind("debug registers do not fire here - doctor's self-test counted ", 0), 0u) << reason;
  // The target was not harmed: it runs its rounds and exits cleanly.
  target.go();
  EXPECT_EQ(target.finish(), 0);
}

TEST(WatchHw, TheX86RulesAreRefusedOnEveryHost) {
  XREF_REQUIRE(bpf_usable(), "root for perf breakpoints");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "2"});
  const uint64_t total = target.startup().object("g_total").address;
  const XrefRun three = run_xref(watch_args(target, {"--backend", "hw", hex_string(total) + ":3"}));
  EXPECT_EQ(three.exit_status, kRule) << three.err;
  EXPECT_NE(three.err.find("3 bytes; an x86 debug register watches 1, 2, 4 or 8"), std::string::npos) << three.err;
  const XrefRun unaligned = run_xref(watch_args(target, {"--backend", "hw", hex_string(total + 4) + ":8"}));
  EXPECT_EQ(unaligned.exit_status, kRule) << unaligned.err;
  EXPECT_NE(unaligned.err.find("is not aligned to its 8 bytes"), std::string::npos) << unaligned.err;
  const XrefRun read = run_xref(watch_args(target, {"--backend", "hw", "--access", "read", hex_string(total) + ":8"}));
  EXPECT_EQ(read.exit_status, kRule) << read.err;
  EXPECT_NE(read.err.find("--access read: x86 debug registers cannot watch reads alone"), std::string::npos)
      << read.err;
  std::vector<std::string> five = {"--backend", "hw"};
  for (int word = 0; word < 5; ++word) five.push_back(hex_string(total) + ":8");
  const XrefRun exhausted = run_xref(watch_args(target, five));
  EXPECT_EQ(exhausted.exit_status, kExhausted) << exhausted.err;
  EXPECT_NE(exhausted.err.find("4 debug registers per thread: 4 free, 5 ranges asked"), std::string::npos)
      << exhausted.err;
  target.go();
  EXPECT_EQ(target.finish(), 0);
}

// xref's refusal where debug registers do not fire here, for the test to
// skip with; a refusal this test's own breakpoint contradicts fails it.
std::optional<std::string> registers_do_not_fire(const WatchedRun& run) {
  if (run.xref.exit_status != kDoNotFire) return std::nullopt;
  EXPECT_FALSE(breakpoints_fire_here()) << "xref says the registers do not fire, this test's breakpoint says they do: "
                                        << run.xref.err;
  return "the live self-test says debug registers do not fire here: " + run.xref.err;
}

class WatchHwRecords : public ::testing::TestWithParam<std::string> {};

// Every write to g_total (lock xadd, lock add, xchg, lock cmpxchg, mov) and
// g_flag (1 byte), of every thread, the late one included (its breakpoints
// are inherited), equals the target's record: per thread, in order, old,
// new and the writing function (the instruction before the trap pc).
TEST_P(WatchHwRecords, GlobalsEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for perf breakpoints");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "15", "--late-thread"});
  const std::vector<std::string> names = {"g_total", "g_flag"};
  std::vector<std::string> args = {"--backend", "hw"};
  for (const std::string& name : names) {
    args.push_back(target.address(name) + ":" + std::to_string(target.startup().object(name).size));
  }
  const WatchedRun run = watch_until_exit(target, args);
  if (const auto refused = registers_do_not_fire(run)) GTEST_SKIP() << *refused;
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  ASSERT_EQ(run.target_status, 0);
  EXPECT_EQ(run.document["result"]["backend"], "hw");
  EXPECT_EQ(run.document["result"]["lost"], 0);
  expect_writes_equal(recorded_writes(run.record, names), watched_writes(run.document, names));
}

// --filter, --fetch, --regs and --callers with debug registers: the
// filter keeps exactly the record's writes where the byte grows, and each
// write's registers and fetches are taken after the trap (rip: the trap pc,
// the instruction after the writer; the fetched sp: rsp).
TEST_P(WatchHwRecords, FilteredWritesWithTheirRegistersEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for perf breakpoints");
  WatchTarget target(GetParam(), {"--threads", "2", "--rounds", "15"});
  const WatchedRun run =
      watch_until_exit(target, {"--backend", "hw", "--filter", "value > old", "--fetch", "sp=%sp:u64", "--regs",
                                "--callers", target.address("g_flag") + ":1"});
  if (const auto refused = registers_do_not_fire(run)) GTEST_SKIP() << *refused;
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  ThreadWrites kept;
  for (const wt::Write& write : run.record) {
    if (write.object != "g_flag" || write.new_value() <= write.old_value()) continue;
    kept[write.tid].push_back({write.object, write.offset, wt::hex_of(write.old_bytes), wt::hex_of(write.new_bytes),
                               write.function});
  }
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(watched_writes(run.document, {"g_flag"}), kept);
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    EXPECT_EQ(write["regs_at"], "after_trap");
    EXPECT_EQ(hex_field(write["regs"]["rip"]), hex_field(write["writer"]["trap_pc"])) << write.dump();
    EXPECT_EQ(hex_field(write["fetches"][0]["value"]), hex_field(write["regs"]["rsp"])) << write.dump();
    EXPECT_FALSE(write["stack"].empty()) << write.dump();
  }
}

// read(2) into the watched bytes does not trap a user breakpoint: each such
// change is reported as an unobserved change, and the next trap's old value
// is what the kernel left there (the engine asks the trap to take it; it
// must not take the bytes of a write whose trap is still to come). Replayed
// in time order (a change at the start of its interval), every write's old
// bytes equal the bytes before it, and each read that changed the watched
// bytes is reported once.
TEST_P(WatchHwRecords, AKernelWriteBecomesTheNextTrapsOldValue) {
  XREF_REQUIRE(bpf_usable(), "root for perf breakpoints");
  // Rounds 25 ms apart: a read is seen by a drain (every 20 ms) before the
  // next round's writes. Bytes 64..71 of buf: about 16 of 100 reads and 50
  // user writes reach them.
  constexpr uint64_t kAt = 64;
  WatchTarget target(GetParam(), {"--threads", "1", "--rounds", "100", "--interval-us", "25000", "--read-fd"});
  const uint64_t watched = std::stoull(target.address("buf"), nullptr, 16) + kAt;
  const WatchedRun run = watch_until_exit(target, {"--backend", "hw", hex_string(watched) + ":8"});
  if (const auto refused = registers_do_not_fire(run)) GTEST_SKIP() << *refused;
  ASSERT_EQ(run.xref.exit_status, 0) << run.xref.err << run.xref.out;
  ASSERT_EQ(run.target_status, 0);
  // The record replayed over the 8 bytes: the bytes each read that changed
  // them left, in order.
  std::vector<uint8_t> truth(8, 0);  // buf starts zeroed (calloc)
  std::vector<std::string> after_reads;
  for (const wt::Write& write : run.record) {
    if (write.object != "buf") continue;
    bool changed = false;
    for (uint64_t i = 0; i < write.length; ++i) {
      if (write.offset + i < kAt || write.offset + i >= kAt + 8) continue;
      changed |= truth[write.offset + i - kAt] != write.new_bytes[i];
      truth[write.offset + i - kAt] = write.new_bytes[i];
    }
    if (write.by_kernel() && changed) after_reads.push_back(wt::hex_of(truth));
  }
  ASSERT_FALSE(after_reads.empty()) << "the target's reads never changed the watched bytes";
  struct Event {
    uint64_t time_ns;
    const nlohmann::json* item;
    bool trap;
  };
  std::vector<Event> events;
  for (const nlohmann::json& write : run.document["result"]["writes"]) {
    events.push_back({write["time_ns"].get<uint64_t>(), &write, true});
  }
  for (const nlohmann::json& change : run.document["result"]["unobserved_changes"]) {
    events.push_back({change["since_ns"].get<uint64_t>(), &change, false});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
  // Reads in one interval between drains come as one change, so there are
  // at most as many changes as reads; each leaves the bytes some read left,
  // a later read than the change before it did (a trap that took a stale
  // request would show a change back to earlier bytes).
  const auto& changes = run.document["result"]["unobserved_changes"];
  EXPECT_GT(changes.size(), 0u);
  EXPECT_LE(changes.size(), after_reads.size());
  std::string bytes = wt::hex_of(std::vector<uint8_t>(8, 0));
  size_t traps = 0, next_read = 0;
  for (const Event& event : events) {
    const nlohmann::json& item = *event.item;
    const std::string old_hex = item["old_bytes"], new_hex = item["new_bytes"];
    const size_t at = 2 * item["offset"].get<size_t>();
    ASSERT_EQ(bytes.substr(at, old_hex.size()), old_hex) << (event.trap ? "a trap's" : "a change's")
                                                         << " old bytes are not those before it: " << item.dump();
    bytes.replace(at, new_hex.size(), new_hex);
    if (event.trap) {
      ++traps;
      continue;
    }
    const auto read = std::find(after_reads.begin() + static_cast<long>(next_read), after_reads.end(), bytes);
    ASSERT_NE(read, after_reads.end()) << "a change left " << bytes << ", which no later read left: " << item.dump();
    next_read = static_cast<size_t>(read - after_reads.begin()) + 1;
  }
  EXPECT_GT(traps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Builds, WatchHwRecords,
                         ::testing::Values("watch_target", "watch_target_clang", "watch_target_nopie"));

}  // namespace
}  // namespace xref::test
