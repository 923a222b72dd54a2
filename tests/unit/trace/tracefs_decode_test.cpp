// Reading what tracefs hands out: event formats, raw ring buffer pages,
// per-CPU stats, and the uprobe_events lines xref writes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "attach/tracefs/format.h"
#include "attach/tracefs/instance.h"
#include "attach/tracefs/merge.h"
#include "attach/tracefs/reaper.h"
#include "attach/tracefs/ring.h"
#include "trace/tracefs/probes.h"
#include "trace/tracefs/records.h"

namespace xref {
namespace {

// As a 6.18 kernel prints events/xref_test/p0/format for
// "p:xref_test/p0 PATH:0x4160 sp=%sp ra=+0(%sp):x64 id=+0(%di):u64 neg=%ax:s8".
const char* kEntryFormat =
    "name: p0\n"
    "ID: 2326\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:u64 sp;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:u64 ra;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:u64 id;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:s8 neg;\toffset:40;\tsize:1;\tsigned:1;\n"
    "\n"
    "print fmt: \"(%lx) sp=0x%Lx ra=0x%Lx id=%Lu neg=%d\", REC->__probe_ip, REC->sp, REC->ra, REC->id, REC->neg\n";

const char* kHeaderPage =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

template <typename T>
void put(std::vector<uint8_t>& bytes, size_t at, T value) {
  if (bytes.size() < at + sizeof value) bytes.resize(at + sizeof value);
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

TEST(TracefsFormat, FieldsOffsetsAndId) {
  auto format = parse_event_format(kEntryFormat);
  ASSERT_TRUE(format.ok()) << format.error().message;
  EXPECT_EQ(format->id, 2326u);
  ASSERT_NE(format->field("neg"), nullptr);
  EXPECT_EQ(format->field("neg")->offset, 40u);
  EXPECT_EQ(format->field("neg")->size, 1u);
  EXPECT_TRUE(format->field("neg")->is_signed);
  EXPECT_EQ(format->field("common_pid")->offset, 4u);
  EXPECT_EQ(format->field("__probe_ip")->size, 8u);
  EXPECT_EQ(format->field("nothing"), nullptr);
  auto header = parse_event_format(kHeaderPage);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->field("data")->offset, 16u);
  EXPECT_FALSE(parse_event_format("no fields here\n").ok());
}

TEST(TracefsRecords, DecodesOneHit) {
  TracePlan plan;
  PlannedProbe probe;
  probe.kind = XREF_PROBE_ENTRY;
  auto fetches = parse_fetch_spec("id=+0(%di):u64,neg=%ax:s8");
  ASSERT_TRUE(fetches.ok());
  probe.fetches = *fetches;
  plan.probes.push_back(probe);
  auto format = parse_event_format(kEntryFormat);
  ASSERT_TRUE(format.ok());
  auto decoder = TracefsRecordDecoder::from_formats({*format}, plan);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message;
  std::vector<uint8_t> record(48, 0);
  put<uint16_t>(record, 0, 2326);
  put<int32_t>(record, 4, 4242);
  put<uint64_t>(record, 16, 0x7ffc0000ull);
  put<uint64_t>(record, 24, 0x5555123ull);
  put<uint64_t>(record, 32, 17);
  put<uint8_t>(record, 40, 0xfe);
  auto hit = decoder->decode(record, 99);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tid, 4242u);
  EXPECT_EQ(hit->probe_index, 0u);
  EXPECT_EQ(hit->timestamp_ns, 99u);
  EXPECT_EQ(hit->sp, 0x7ffc0000ull);
  EXPECT_EQ(hit->return_address, 0x5555123ull);
  EXPECT_EQ(hit->fetch_count, 2);
  EXPECT_EQ(hit->values[0], 17u);
  EXPECT_EQ(static_cast<int64_t>(hit->values[1]), -2);  // s8, sign-extended
  // Another event id, or a record cut short, is not a hit.
  put<uint16_t>(record, 0, 2327);
  EXPECT_FALSE(decoder->decode(record, 1).has_value());
  put<uint16_t>(record, 0, 2326);
  record.resize(30);
  EXPECT_FALSE(decoder->decode(record, 1).has_value());
}

TEST(TracefsRing, PageWithDeltasTimeExtendLongRecordAndPadding) {
  auto header = parse_event_format(kHeaderPage);
  ASSERT_TRUE(header.ok());
  auto layout = ring_page_layout(*header);
  ASSERT_TRUE(layout.ok());
  std::vector<uint8_t> page(4096, 0);
  put<uint64_t>(page, 0, 1000);  // page timestamp
  size_t at = 16;
  // type_len 2: 8 bytes of data, delta 5
  put<uint32_t>(page, at, 2u | (5u << 5));
  put<uint64_t>(page, at + 4, 0x1111);
  at += 12;
  // time extend: + (3 << 27) + 7
  put<uint32_t>(page, at, 30u | (7u << 5));
  put<uint32_t>(page, at + 4, 3);
  at += 8;
  // a discarded event (padding with a delta): skipped, its delta ignored
  put<uint32_t>(page, at, 29u | (1u << 5));
  put<uint32_t>(page, at + 4, 8);
  at += 12;
  // type_len 0: the length word counts itself; 12 bytes of data, delta 1
  put<uint32_t>(page, at, 0u | (1u << 5));
  put<uint32_t>(page, at + 4, 16);
  put<uint64_t>(page, at + 8, 0x2222);
  at += 20;
  put<uint64_t>(page, 8, static_cast<uint64_t>(at - 16) | (1ull << 31));  // commit, missed events
  std::vector<std::pair<uint64_t, uint64_t>> seen;  // timestamp, first data word
  const RingPageSummary summary = parse_ring_page(page, *layout, [&](uint64_t ts, std::span<const uint8_t> data) {
    uint64_t word = 0;
    std::memcpy(&word, data.data(), 8);
    seen.emplace_back(ts, word);
  });
  EXPECT_FALSE(summary.malformed);
  EXPECT_TRUE(summary.missed_events);
  EXPECT_EQ(summary.records, 2u);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(uint64_t{1005}, uint64_t{0x1111}));
  EXPECT_EQ(seen[1], std::make_pair(uint64_t{1005} + (uint64_t{3} << 27) + 7 + 1, uint64_t{0x2222}));
}

TEST(TracefsRing, ARecordPastTheCommitIsMalformed) {
  RingPageLayout layout;
  std::vector<uint8_t> page(64, 0);
  put<uint32_t>(page, 16, 4u);         // type_len 4: 16 bytes
  put<uint64_t>(page, 8, uint64_t{8});  // but only 8 committed
  size_t records = 0;
  const RingPageSummary summary = parse_ring_page(page, layout, [&](uint64_t, std::span<const uint8_t>) { ++records; });
  EXPECT_TRUE(summary.malformed);
  EXPECT_EQ(records, 0u);
}

TEST(TracefsInstance, StatsAreSummedByCause) {
  const RingLoss loss = parse_ring_stats(
      "entries: 3\noverrun: 2\ncommit overrun: 1\nbytes: 100\noldest event ts: 1.0\nnow ts: 2.0\n"
      "dropped events: 7\nread events: 9\n");
  EXPECT_EQ(loss.overrun, 2u);
  EXPECT_EQ(loss.commit_overrun, 1u);
  EXPECT_EQ(loss.dropped_events, 7u);
  EXPECT_EQ(loss.total(), 10u);
}

TEST(TracefsProbes, DefinitionLines) {
  PlannedProbe entry;
  entry.kind = XREF_PROBE_ENTRY;
  entry.file_offset = 0x1c20;
  auto fetches = parse_fetch_spec("id=+0(%di):u64,x=-8(%sp):s32");
  ASSERT_TRUE(fetches.ok());
  entry.fetches = *fetches;
  EXPECT_EQ(tracefs_event_line("xref_42", tracefs_probe_event(entry, 0, "/bin/t")),
            "p:xref_42/p0 /bin/t:0x1c20 sp=%sp ra=+0(%sp):x64 id=+0(%di):u64 x=-8(%sp):s32");
  PlannedProbe ret;
  ret.kind = XREF_PROBE_RET;
  ret.file_offset = 0x1c9f;
  EXPECT_EQ(tracefs_event_line("xref_42", tracefs_probe_event(ret, 3, "/bin/t")), "p:xref_42/p3 /bin/t:0x1c9f sp=%sp");
  PlannedProbe uretprobe = entry;
  uretprobe.kind = XREF_PROBE_URETPROBE;
  uretprobe.fetches.clear();
  EXPECT_EQ(tracefs_event_line("xref_42", tracefs_probe_event(uretprobe, 7, "/bin/t")), "r:xref_42/p7 /bin/t:0x1c20 sp=%sp");
  // A fetch already called sp: xref's own argument steps aside.
  auto named_sp = parse_fetch_spec("sp=%sp:u64");
  ASSERT_TRUE(named_sp.ok());
  ret.fetches = *named_sp;
  EXPECT_EQ(tracefs_arg_names(ret).sp, "xref_sp");
  EXPECT_EQ(tracefs_event_line("xref_42", tracefs_probe_event(ret, 3, "/bin/t")),
            "p:xref_42/p3 /bin/t:0x1c9f xref_sp=%sp sp=%sp:u64");
}

TEST(TracefsReaper, OwnersOfNames) {
  EXPECT_EQ(tracefs_owner_in_name("xref_4242_81234", '_'), (TracefsOwner{4242, 81234}));
  EXPECT_EQ(tracefs_owner_in_name("xref-4242-81234", '-'), (TracefsOwner{4242, 81234}));
  // An older helper's names: the PID alone.
  EXPECT_EQ(tracefs_owner_in_name("xref_4242", '_'), (TracefsOwner{4242, 0}));
  EXPECT_EQ(tracefs_owner_in_name("xref-4242", '-'), (TracefsOwner{4242, 0}));
  EXPECT_EQ(tracefs_owner_in_name("xref_other", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref_", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("uprobes", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref_12x", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref_12_x", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref_12_", '_'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref-12_34", '-'), std::nullopt);
  EXPECT_EQ(tracefs_owner_in_name("xref_0_5", '_'), std::nullopt);
  const TracefsOwner self = tracefs_owner_of_process(getpid());
  EXPECT_EQ(tracefs_owner_in_name(tracefs_group_name(self), '_'), self);
  EXPECT_EQ(tracefs_owner_in_name(tracefs_instance_name(self), '-'), self);
}

// Liveness is the process itself, PID and start time, whatever its name.
TEST(TracefsReaper, OwnersAreAliveOnlyAsTheProcessTheyName) {
  const TracefsOwner self = tracefs_owner_of_process(getpid());
  ASSERT_GT(self.start_ticks, 0u);
  EXPECT_TRUE(tracefs_owner_alive(self));
  EXPECT_TRUE(tracefs_owner_alive({self.pid, 0}));                     // an older name: the PID alone
  EXPECT_FALSE(tracefs_owner_alive({self.pid, self.start_ticks + 1}));  // the PID reused by another process
  EXPECT_FALSE(tracefs_owner_alive({0x3fffffff, 0}));
  // A zombie has closed every file: it holds nothing of its trace.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  const TracefsOwner zombie = tracefs_owner_of_process(child);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(tracefs_owner_alive(zombie));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(tracefs_owner_alive(zombie));
}

TEST(TracefsMerge, ReleasesInTimestampOrderUpToTheLimit) {
  HitMerger<ProbeHit> merger;
  auto hit = [](uint64_t ts, uint32_t tid) {
    ProbeHit h;
    h.timestamp_ns = ts;
    h.tid = tid;
    return h;
  };
  // CPU 0's hits, then CPU 1's.
  merger.add(hit(10, 1));
  merger.add(hit(30, 1));
  merger.add(hit(20, 2));
  merger.add(hit(40, 2));
  std::vector<uint64_t> order;
  merger.release(35, [&](const ProbeHit& h) { order.push_back(h.timestamp_ns); });
  EXPECT_EQ(order, (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_EQ(merger.pending(), 1u);
  merger.add(hit(35, 1));
  merger.release(HitMerger<ProbeHit>::everything, [&](const ProbeHit& h) { order.push_back(h.timestamp_ns); });
  EXPECT_EQ(order, (std::vector<uint64_t>{10, 20, 30, 35, 40}));
}

}  // namespace
}  // namespace xref
