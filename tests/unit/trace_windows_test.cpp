#include "trace_windows.h"

#include <gtest/gtest.h>

#include <cstring>

namespace xref {
namespace {

xref_trace_event record(uint64_t window, uint64_t seq, uint8_t type, uint32_t depth = 0) {
  xref_trace_event event;
  std::memset(&event, 0, sizeof event);
  event.window_id = window;
  event.seq = seq;
  event.type = type;
  event.depth = static_cast<uint16_t>(depth);
  event.tid = 42;
  event.probe_index = 0;
  return event;
}

TracePlan plan_with_one_fetch() {
  TracePlan plan;
  PlannedProbe probe;
  FetchItem item;
  item.name = "id";
  probe.fetches.push_back(item);
  plan.probes.push_back(probe);
  return plan;
}

TEST(WindowCollector, OrdersBySequenceWhateverTheArrivalOrder) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  EXPECT_FALSE(collector.add(record(1, 2, XREF_EVENT_RETURN, 1)));
  EXPECT_FALSE(collector.add(record(1, 0, XREF_EVENT_ENTRY, 0)));
  EXPECT_FALSE(collector.add(record(1, 1, XREF_EVENT_ENTRY, 1)));
  auto end = record(1, 3, XREF_EVENT_WINDOW_END);
  end.status = XREF_WINDOW_COMPLETE;
  EXPECT_EQ(collector.add(end), 1u);
  const TraceWindow& window = collector.windows().at(1);
  ASSERT_EQ(window.events.size(), 3u);
  EXPECT_EQ(window.events[0].seq, 0u);
  EXPECT_EQ(window.events[1].seq, 1u);
  EXPECT_EQ(window.events[2].seq, 2u);
  EXPECT_TRUE(window.ended);
  EXPECT_EQ(window.missing_events(), 0u);
}

TEST(WindowCollector, SequenceGapsAreMissingEvents) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  (void)collector.add(record(7, 0, XREF_EVENT_ENTRY));
  (void)collector.add(record(7, 4, XREF_EVENT_ENTRY, 1));
  auto end = record(7, 9, XREF_EVENT_WINDOW_END);
  (void)collector.add(end);
  // seq 1-3 and 5-8 never arrived.
  EXPECT_EQ(collector.windows().at(7).missing_events(), 7u);
}

TEST(WindowCollector, BpfResultsFillInALostEndRecord) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  (void)collector.add(record(3, 0, XREF_EVENT_ENTRY));
  std::map<uint64_t, xref_window_result> results;
  results[3] = xref_window_result{5, 42, XREF_WINDOW_COMPLETE, {0, 0, 0}};
  results[4] = xref_window_result{2, 43, XREF_WINDOW_COMPLETE, {0, 0, 0}};  // every record lost
  collector.apply_results(results);
  const TraceWindow& three = collector.windows().at(3);
  EXPECT_TRUE(three.ended);
  EXPECT_TRUE(three.end_record_lost);
  EXPECT_EQ(three.lost_reported, 5u);
  const TraceWindow& four = collector.windows().at(4);
  EXPECT_TRUE(four.events.empty());
  EXPECT_EQ(four.tid, 43u);
  EXPECT_EQ(four.lost_reported, 2u);
}

TEST(WindowCollector, FailedFetchesKeepTheirErrorNotAValue) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  auto entry = record(1, 0, XREF_EVENT_ENTRY);
  entry.fetch_count = 1;
  entry.fetch_failed = 1;
  entry.fetch_error[0] = -14;
  (void)collector.add(entry);
  const auto& fetches = collector.windows().at(1).events[0].fetches;
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_FALSE(fetches[0].value.has_value());
  EXPECT_EQ(fetches[0].error, -14);
}

TEST(WindowCollector, CorruptRecordsAreCountedNotTrusted) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  (void)collector.add(record(0, 0, XREF_EVENT_ENTRY));
  (void)collector.add(record(1, 0, 99));
  EXPECT_EQ(collector.unparsed_events(), 2u);
  EXPECT_TRUE(collector.windows().empty());
}

}  // namespace
}  // namespace xref
