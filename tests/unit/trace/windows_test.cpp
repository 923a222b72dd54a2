#include "trace/windows.h"

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

// A window without its end record that the final results do not name ended
// with its end and its result lost: never left looking open.
TEST(WindowCollector, AWindowTheResultsDoNotNameEndedUnknown) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  (void)collector.add(record(5, 0, XREF_EVENT_ENTRY));
  (void)collector.add(record(6, 0, XREF_EVENT_ENTRY));
  std::map<uint64_t, xref_window_result> results;
  results[6] = xref_window_result{0, 7, 0, {0, 0, 0}};  // still open
  collector.apply_results(results);
  const TraceWindow& five = collector.windows().at(5);
  EXPECT_TRUE(five.ended);
  EXPECT_EQ(five.end_status, 0u);
  EXPECT_TRUE(five.end_record_lost);
  EXPECT_TRUE(five.has_loss());
  EXPECT_FALSE(five.complete());
  EXPECT_FALSE(collector.windows().at(6).ended);
}

// Past the bound of events held, events are counted, not kept; a released
// window gives its room back and only its counts stay.
TEST(WindowCollector, EventsPastTheBoundAreCountedNotKept) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan, 3);
  for (uint64_t seq = 0; seq < 5; ++seq) (void)collector.add(record(1, seq, XREF_EVENT_ENTRY, static_cast<uint32_t>(seq)));
  const TraceWindow& one = collector.windows().at(1);
  EXPECT_EQ(one.events.size(), 3u);
  EXPECT_EQ(one.events_not_kept, 2u);
  EXPECT_EQ(collector.events_not_kept(), 2u);
  EXPECT_TRUE(one.has_loss());
  auto end = record(1, 5, XREF_EVENT_WINDOW_END);
  end.status = XREF_WINDOW_COMPLETE;
  ASSERT_EQ(collector.add(end), std::optional<uint64_t>(1));
  EXPECT_FALSE(collector.windows().at(1).complete()) << "a window that kept only part of its events";
  collector.release(1);
  EXPECT_TRUE(collector.windows().empty());
  EXPECT_EQ(collector.released().windows, 1u);
  EXPECT_EQ(collector.released().events, 3u);
  EXPECT_EQ(collector.released().complete, 0u);
  (void)collector.add(record(2, 0, XREF_EVENT_ENTRY));
  EXPECT_EQ(collector.windows().at(2).events.size(), 1u) << "the released window's room is back";
}

// :string fetches: each event's bytes in the window's side storage (up to
// the NUL, at most the length its value says), the cut kept in the value,
// and past the bound of string bytes an event is counted, not kept; a
// released window gives its bytes back.
TEST(WindowCollector, StringsAreKeptBesideTheEventsWithinTheirBound) {
  TracePlan plan;
  plan.probes.emplace_back().fetches = *parse_fetch_spec("n=%si:u64,key=+0(%di):string[8]");
  WindowCollector collector(plan, WindowCollector::kMaxEventsHeld, 16);
  auto with_key = [](uint64_t window, uint64_t seq, const std::string& key, uint64_t value) {
    xref_trace_event event = record(window, seq, XREF_EVENT_ENTRY);
    event.fetch_count = 2;
    event.values[0] = 5;
    event.values[1] = value;
    std::memcpy(event.strings[0], key.data(), key.size());
    return event;
  };
  (void)collector.add(with_key(1, 0, "settings", 8 | XREF_STRING_CUT));
  // A value longer than the bytes up to the NUL keeps only those bytes.
  (void)collector.add(with_key(1, 1, "ab", 6));
  (void)collector.add(with_key(1, 2, "xyz", 3));
  // 13 bytes held: 8 more would pass the bound of 16.
  (void)collector.add(with_key(1, 3, "abcdefgh", 8));
  const TraceWindow& one = collector.windows().at(1);
  ASSERT_EQ(one.events.size(), 3u);
  EXPECT_EQ(one.events_not_kept, 1u);
  EXPECT_EQ(one.strings, "settingsabxyz");
  const EventFetch* first = one.fetches_of(one.events[0]);
  EXPECT_EQ(first[0].value, 5u);
  EXPECT_EQ(one.string_of(first[1]), "settings");
  EXPECT_EQ(first[1].value, 8 | XREF_STRING_CUT);
  const EventFetch* second = one.fetches_of(one.events[1]);
  EXPECT_EQ(one.string_of(second[1]), "ab");
  EXPECT_EQ(second[1].value, 2u);
  collector.release(1);
  (void)collector.add(with_key(2, 0, "abcdefgh", 8));
  EXPECT_EQ(collector.windows().at(2).strings, "abcdefgh") << "the released window's bytes are back";
}

TEST(WindowCollector, FailedFetchesKeepTheirErrorNotAValue) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  auto entry = record(1, 0, XREF_EVENT_ENTRY);
  entry.fetch_count = 1;
  entry.fetch_failed = 1;
  entry.fetch_error[0] = -14;
  (void)collector.add(entry);
  const TraceWindow& window = collector.windows().at(1);
  ASSERT_EQ(window.events[0].fetch_count, 1u);
  const EventFetch& fetch = window.fetches_of(window.events[0])[0];
  EXPECT_FALSE(fetch.read);
  EXPECT_EQ(fetch.error, -14);
}

TEST(WindowCollector, EachEventKeepsItsOwnValuesWhateverTheArrivalOrder) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  auto later = record(1, 1, XREF_EVENT_ENTRY, 1);
  later.fetch_count = 1;
  later.values[0] = 0x22;
  auto first = record(1, 0, XREF_EVENT_ENTRY);
  first.fetch_count = 1;
  first.values[0] = 0x11;
  (void)collector.add(later);
  (void)collector.add(first);
  const TraceWindow& window = collector.windows().at(1);
  ASSERT_EQ(window.events.size(), 2u);
  EXPECT_EQ(window.fetches_of(window.events[0])[0].value, 0x11u);
  EXPECT_EQ(window.fetches_of(window.events[1])[0].value, 0x22u);
}

TEST(WindowCollector, AReleasedWindowsStorageStartsEmptyForTheNext) {
  const TracePlan plan = plan_with_one_fetch();
  WindowCollector collector(plan);
  auto entry = record(1, 0, XREF_EVENT_ENTRY);
  entry.fetch_count = 1;
  entry.values[0] = 7;
  (void)collector.add(entry);
  collector.release(1);
  (void)collector.add(record(2, 0, XREF_EVENT_ENTRY));
  const TraceWindow& window = collector.windows().at(2);
  ASSERT_EQ(window.events.size(), 1u);
  EXPECT_EQ(window.events[0].fetch_count, 0u) << "a record without fetch values has none";
  EXPECT_TRUE(window.fetches.empty());
  EXPECT_EQ(window.window_id, 2u);
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
