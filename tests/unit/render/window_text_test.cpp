// Window text from hand-written window JSON: the edge cases a real trace
// makes rarely or only in a debugger (a stop interval inside a call, open
// windows, lost events, tail jumps, unwinding, inferred returns, names a
// debugger gives). A real trace's window is rendered in
// tests/unit/trace/window_format_test.cpp and tests/e2e/trace.
#include "render/window_text.h"

#include <gtest/gtest.h>

#include <map>

#include "render/duration.h"

namespace xref::render {
namespace {

// A debugger's names, as a front end sends them: a fixed table.
class TableNames final : public Names {
 public:
  std::map<uint64_t, Place> by_live;
  std::vector<CodeAddress> asked;
  std::optional<Place> place(const CodeAddress& address) override {
    asked.push_back(address);
    if (!address.live) return std::nullopt;
    auto found = by_live.find(*address.live);
    return found == by_live.end() ? std::nullopt : std::optional<Place>(found->second);
  }
};

nlohmann::json event(const char* kind, int depth, const char* symbol, const char* target_va, uint64_t ns) {
  return {{"kind", kind}, {"depth", depth}, {"symbol", symbol}, {"target_va", target_va}, {"timestamp_ns", ns},
          {"fetches", nlohmann::json::array()}};
}

nlohmann::json window_of(nlohmann::json events, uint64_t start_ns, uint64_t duration_ns) {
  return {{"window_id", 4}, {"tid", 77}, {"status", "complete"}, {"possible_loss", false}, {"lost_events", 0},
          {"start_va", "0x1e50"}, {"stop_va", "0x1e50"}, {"start_timestamp_ns", start_ns},
          {"duration_ns", duration_ns}, {"events", std::move(events)}};
}

TEST(Duration, UnitsAsPerfAndUftracePrintThem) {
  EXPECT_EQ(duration_text(0), "0 ns");
  EXPECT_EQ(duration_text(812), "812 ns");
  EXPECT_EQ(duration_text(999), "999 ns");
  EXPECT_EQ(duration_text(1000), "1.0 us");
  EXPECT_EQ(duration_text(3'417), "3.4 us");
  EXPECT_EQ(duration_text(353'300), "353.3 us");
  // Rounded first, then the unit: never "1000.0 us".
  EXPECT_EQ(duration_text(999'960), "1.00 ms");
  EXPECT_EQ(duration_text(2'614'000), "2.61 ms");
  EXPECT_EQ(duration_text(999'999'000), "1.00 s");
  EXPECT_EQ(duration_text(1'250'000'000), "1.25 s");
}

TEST(WindowText, SavedWindowWithoutNamesUsesWhatTheJsonCarries) {
  const nlohmann::json window = nlohmann::json::parse(R"json({
    "window_id": 3, "tid": 9, "start_va": "0x1c20", "stop_va": "0x1c20", "status": "complete",
    "possible_loss": false, "lost_events": 0, "duration_ns": 5000, "start_timestamp_ns": 1000,
    "start_fetches": [{"name": "req", "type": "x64", "value": "0x7ff0"}],
    "events": [
      {"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x1c20", "symbol": "svc::run(int)", "call_site_va": "0x1db2",
       "caller": "worker_main", "caller_va": "0x1d40", "call_site_verified": true, "timestamp_ns": 1000,
       "fetches": [{"name": "req", "type": "x64", "value": "0x7ff0"}]},
      {"seq": 1, "kind": "entry", "depth": 1, "target_va": "0x18b0", "symbol": "route_odd", "indirect": true,
       "call_site_va": "0x1cd5", "call_site_verified": true, "timestamp_ns": 1100,
       "fetches": [{"name": "target", "type": "x64", "value": "0x55d0000018b0"}]},
      {"seq": 2, "kind": "return", "depth": 1, "target_va": "0x18b0", "symbol": "route_odd", "indirect": true,
       "timestamp_ns": 1300, "fetches": []},
      {"seq": 3, "kind": "entry", "depth": 1, "target_va": "0x10a2a0", "symbol": "gettid", "module": "libc.so.6",
       "call_site_va": "0x1c50", "call_site_verified": false, "timestamp_ns": 1400,
       "fetches": [{"name": "n", "type": "s32", "value": "0xfffffffe", "signed_value": -2},
                   {"name": "p", "type": "u64", "value": null, "error": "unreadable: EFAULT (-14)"}]},
      {"seq": 4, "kind": "unwound", "depth": 1, "target_va": "0x10a2a0", "symbol": "gettid", "module": "libc.so.6",
       "timestamp_ns": 2400},
      {"seq": 5, "kind": "entry", "depth": 1, "target_va": "0x1b70", "symbol": "settle", "call_site_va": "0x1ce6",
       "call_site_verified": true, "tail_call": true, "timestamp_ns": 2500},
      {"seq": 6, "kind": "tail_exit", "depth": 1, "target_va": "0x1b70", "symbol": "settle", "timestamp_ns": 2600,
       "inferred": true},
      {"seq": 7, "kind": "return", "depth": 0, "target_va": "0x1c20", "symbol": "svc::run(int)", "timestamp_ns": 6000,
       "fetches": [{"name": "ret", "type": "u64", "value": "0x3"}]}
    ]})json");
  NoNames names;
  const std::vector<std::string> expected = {
      "window 3  thread 9  complete  ran 5.0 us  8 events  lost 0  req=0x7ff0",
      "  3:0  5.0 us  > svc::run  from worker_main+0x72  req=0x7ff0",
      "  3:1  200 ns    > route_odd [indirect]  from 0x1cd5",
      "  3:2            < route_odd",
      "  3:3  1.0 us    > gettid  from 0x1c50 (unverified)  n=-2 p=<unreadable: EFAULT>",
      "  3:4            ~ gettid [unwound]",
      "  3:5  100 ns    > settle [tail]  from 0x1ce6",
      "  3:6            < settle [tail] [inferred]",
      "  3:7          < svc::run  self 3.7 us  ret=0x3",
  };
  EXPECT_EQ(window_lines(window, names, {}), expected);

  WindowStyle addresses;
  addresses.addresses = true;
  addresses.references = false;
  const std::vector<std::string> with = window_lines(window, names, addresses);
  EXPECT_EQ(with[0], "window 3  thread 9  complete  ran 5.0 us  8 events  lost 0  req=0x7ff0  [start 0x1c20 stop 0x1c20]");
  EXPECT_EQ(with[1], "  5.0 us  > svc::run  from worker_main+0x72  req=0x7ff0  [0x1c20 @0x1db2]");
  EXPECT_EQ(with[4], "  1.0 us    > gettid  from 0x1c50 (unverified)  n=-2 p=<unreadable: EFAULT>  "
                     "[libc.so.6:0x10a2a0 @0x1c50]");
  EXPECT_EQ(with[8], "          < svc::run  self 3.7 us  ret=0x3  [0x1c20]");
}

TEST(WindowText, AmbiguousShortNamesAreShownInFull) {
  nlohmann::json events = nlohmann::json::array(
      {event("entry", 0, "f(int)", "0x10", 100), event("entry", 1, "f(long)", "0x20", 150)});
  nlohmann::json window = window_of(events, 100, 400);
  window["status"] = "open_at_stop";
  window["possible_loss"] = true;
  window["lost_events"] = nullptr;
  NoNames names;
  WindowStyle style;
  style.references = false;
  // Neither call ended in the window: no duration column at all.
  EXPECT_EQ(window_lines(window, names, style),
            (std::vector<std::string>{
                "window 4  thread 77  incomplete (still open when the trace stopped, events may be missing)  ran 400 ns  "
                "2 events  lost ?",
                "  > f(int)",
                "    > f(long)",
            }));
}

// The process sat stopped at a debugger prompt from 2,000 to 1,002,000 ns,
// inside handle_request and inside its child validate.
TEST(WindowText, TimeStoppedAtTheDebuggerIsNotTimeRun) {
  nlohmann::json events = nlohmann::json::array({
      event("entry", 0, "handle_request", "0x1e50", 1'000),
      event("entry", 1, "validate", "0x1cf0", 1'500),
      event("return", 1, "validate", "0x1cf0", 1'003'500),
      event("entry", 1, "price_order", "0x1c40", 1'004'000),
      event("return", 1, "price_order", "0x1c40", 1'010'000),
      event("return", 0, "handle_request", "0x1e50", 1'012'000),
  });
  const nlohmann::json window = window_of(events, 1'000, 1'011'500);
  WindowStyle style;
  style.stops = {{2'000, 1'002'000}};
  style.session = 2;
  NoNames names;
  const std::vector<std::string> lines = window_lines(window, names, style);
  ASSERT_EQ(lines.size(), 7u);
  // 1,011,500 ns in all, 1,000,000 of them stopped.
  EXPECT_EQ(lines[0], "window 4 (session 2)  thread 77  complete  ran 11.5 us (stopped 1.00 ms at the debugger)  "
                      "6 events  lost 0");
  EXPECT_EQ(lines[1], "  4:0  11.0 us  > handle_request  [stopped 1.00 ms in it]");
  EXPECT_EQ(lines[2], "  4:0   2.0 us    > validate  [stopped 1.00 ms in it]");
  EXPECT_EQ(lines[4], "  4:0   6.0 us    > price_order");
  // Self: 11.0 us run less the children's 2.0 and 6.0.
  EXPECT_EQ(lines[6], "  4:0           < handle_request  self 3.0 us");
  EXPECT_EQ(stopped_ns(style.stops, 0, 1'500), 0u);
  EXPECT_EQ(stopped_ns(style.stops, 1'500, 3'000), 1'000u);
  EXPECT_EQ(stopped_ns({{10, 20}, {30, 40}}, 15, 35), 10u);
}

// LLDB reports a resume on its event thread, after the process ran on: a
// stop that seems to last past events a probe saw ends at the first of them.
// An event the helper made (no probe_va: --here's first) proves nothing.
TEST(WindowText, AStopEndsAtTheFirstEventAProbeSawAfterIt) {
  auto probed = [](nlohmann::json event) {
    event["probe_va"] = event["target_va"];
    return event;
  };
  nlohmann::json events = nlohmann::json::array({
      event("entry", 0, "handle_request", "0x1e50", 1'000),  // made at the stop
      probed(event("entry", 1, "validate", "0x1cf0", 500'000)),
      probed(event("return", 1, "validate", "0x1cf0", 502'000)),
      probed(event("return", 0, "handle_request", "0x1e50", 510'000)),
  });
  const nlohmann::json window = window_of(events, 1'000, 509'000);
  WindowStyle style;
  style.stops = {{500, 3'000'000}};  // the resume reported 2.5 ms late
  ASSERT_EQ(observed_stops(style.stops, window).size(), 1u);
  EXPECT_EQ(observed_stops(style.stops, window)[0].end_ns, 500'000u);
  // serve clips a stop that began before the window to the window's start:
  // a probe's event there ends it.
  nlohmann::json later = window_of(nlohmann::json::array({events[1], events[2]}), 500'000, 2'000);
  EXPECT_EQ(observed_stops({{500'000, 3'000'000}}, later)[0].end_ns, 500'000u);
  NoNames names;
  const std::vector<std::string> lines = window_lines(window, names, style);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "window 4  thread 77  complete  ran 10.0 us (stopped 499.0 us at the debugger)  4 events  lost 0");
  EXPECT_EQ(lines[2], "  4:0   2.0 us    > validate");
}

TEST(WindowText, ADebuggersNamesBreakpointsAndLiveAddresses) {
  nlohmann::json entry = event("entry", 0, "handle_request", "0x1e50", 100);
  entry["target_live"] = "0x555555555e50";
  entry["call_site_va"] = "0x1fed";
  entry["call_site_live"] = "0x555555555fed";
  entry["caller"] = "worker_main";
  entry["caller_va"] = "0x1f40";
  entry["call_site_verified"] = true;
  nlohmann::json back = event("return", 0, "handle_request", "0x1e50", 400);
  back["target_live"] = "0x555555555e50";
  back["probe_live"] = "0x555555555f3a";
  back["probe_va"] = "0x1f3a";
  nlohmann::json stop = {{"kind", "stop"}, {"depth", 0}, {"symbol", ""}, {"target_va", "0x1f3a"},
                         {"probe_va", "0x1f3a"}, {"probe_live", "0x555555555f3a"}, {"timestamp_ns", 450}};
  const nlohmann::json window = window_of(nlohmann::json::array({entry, back, stop}), 100, 350);
  // The debugger's spellings (a front end's batch) are shown as it spells them.
  TableNames names;
  names.by_live[0x555555555e50] = {"handle_request(request*)", 0, "/src/sample_service.c", 160, true};
  names.by_live[0x555555555fed] = {"worker_main", 0xad, "/src/sample_service.c", 230, true};
  names.by_live[0x555555555f3a] = {"handle_request(request*)", 0xea, "/src/sample_service.c", 180, true};
  WindowStyle style;
  style.addresses = true;
  style.live_addresses = true;
  style.breakpoints[0x555555555e50] = {1};
  style.breakpoints[0x555555555f3a] = {2, 3};
  const std::vector<std::string> lines = window_lines(window, names, style);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "  4:0  300 ns  > handle_request(request*)  from worker_main+0xad at sample_service.c:230  [bp 1]  "
                      "[0x555555555e50 @0x555555555fed]");
  EXPECT_EQ(lines[2], "  4:0          < handle_request(request*)  [bp 2]  [bp 3]  [0x555555555e50]");
  EXPECT_EQ(lines[3], "  4:0          | stop at handle_request(request*)+0xea at sample_service.c:180  [bp 2]  [bp 3]  "
                      "[0x555555555f3a]");
  // The helper's own names of the same addresses get the short labels.
  TableNames own;
  for (const auto& [live, place] : names.by_live) {
    own.by_live[live] = place;
    own.by_live[live].debugger = false;
  }
  const std::vector<std::string> short_lines = window_lines(window, own, style);
  ASSERT_EQ(short_lines.size(), 4u);
  EXPECT_EQ(short_lines[1], "  4:0  300 ns  > handle_request  from worker_main+0xad at sample_service.c:230  [bp 1]  "
                            "[0x555555555e50 @0x555555555fed]");
  EXPECT_EQ(short_lines[3], "  4:0          | stop at handle_request+0xea at sample_service.c:180  [bp 2]  [bp 3]  "
                            "[0x555555555f3a]");
  // What a front end is asked to name first: each address once.
  const std::vector<CodeAddress> addresses = window_addresses(window);
  ASSERT_EQ(addresses.size(), 3u);
  EXPECT_EQ(addresses[0], (CodeAddress{"", 0x1e50, 0x555555555e50}));
  EXPECT_EQ(addresses[1], (CodeAddress{"", 0x1fed, 0x555555555fed}));
  EXPECT_EQ(addresses[2], (CodeAddress{"", 0x1f3a, 0x555555555f3a}));
}

TEST(WindowText, StatusWordsMarksAndTheEndOfATailJump) {
  nlohmann::json window = window_of(nlohmann::json::array(), 0, 0);
  EXPECT_EQ(window_status_text(window), "complete");
  window["status"] = "truncated";
  EXPECT_EQ(window_status_text(window), "incomplete (truncated: the start function was called again before it returned)");
  window["status"] = "unknown";
  EXPECT_EQ(window_status_text(window), "incomplete (ended, but its end record was lost)");
  window["status"] = "incomplete";
  window["possible_loss"] = true;
  EXPECT_EQ(window_status_text(window), "incomplete (events may be missing)");
  EXPECT_EQ(window_mark_text(window), "");
  window["mark_status"] = "matched";
  window["mark_match"] = "81";
  EXPECT_EQ(window_mark_text(window), "mark \"81\"?");
  window["mark_certain"] = true;
  EXPECT_EQ(window_mark_text(window), "mark \"81\"");
  window["mark_status"] = "no_match_yet";
  EXPECT_EQ(window_mark_text(window), "mark (no match yet)");
  window["ended_in"] = "finish";
  window["end_inferred"] = true;
  window["events_not_kept"] = 5;
  window["lost_events"] = 5;
  EXPECT_EQ(window_header(window, {}),
            "window 4  thread 77  incomplete (events may be missing)  ran 0 ns  0 events (5 more not kept)  lost 5  "
            "ended in finish (reached by a tail jump)  end inferred (seen by a later event)  mark (no match yet)");
}

}  // namespace
}  // namespace xref::render
