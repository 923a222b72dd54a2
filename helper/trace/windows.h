// Windows assembled from the ring buffer's events: grouped by window id and
// ordered by the sequence numbers the BPF program assigned, so the order is
// the thread's program order whatever CPU each event ran on. Gaps in the
// sequence are events the ring buffer could not take.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/plan.h"
#include "trace_abi.h"

namespace xref {

// One value a fetch read, or the -errno of the read that failed; its name
// and type are the probe's (plan.probes[probe_index].fetches). A :string
// fetch's value is its length | XREF_STRING_CUT, its bytes (at most its
// bound) in the window's `strings` from string_at: in the padding, so a
// value stays 16 bytes.
struct EventFetch {
  uint64_t value = 0;
  int16_t error = 0;
  bool read = false;
  uint32_t string_at = 0;
};

// Held per event for the whole life of its window: kept small (no
// allocation of its own), its fetched values in the window's `fetches`.
struct TraceEvent {
  uint64_t seq = 0;
  uint64_t timestamp_ns = 0;
  uint64_t return_address = 0;  // live; entries only
  uint32_t function_id = 0;
  uint32_t probe_index = 0;
  uint32_t depth = 0;
  uint32_t fetch_first = 0;     // its values: window.fetches[fetch_first, fetch_first + fetch_count)
  uint8_t fetch_count = 0;
  uint8_t type = 0;             // XREF_EVENT_*
  bool window_begin = false;
  bool depth_overflow = false;
  bool tail = false;            // entered through a tail jump (call-site mode)
  bool inferred = false;        // a return no probe saw: a later event (or a stop) showed the frame was over
};

struct TraceWindow {
  uint64_t window_id = 0;
  uint32_t tid = 0;
  std::vector<TraceEvent> events;  // by seq, without the WINDOW_END record
  std::vector<EventFetch> fetches;  // the events' fetched values, in arrival order
  std::string strings;             // the bytes of their :string fetches, one after another
  bool ended = false;
  uint8_t end_status = 0;          // XREF_WINDOW_*
  uint64_t lost_reported = 0;      // from the BPF window result (or the WINDOW_END record)
  uint64_t end_seq = 0;
  bool end_record_lost = false;    // ended per BPF, but its WINDOW_END record never arrived
  uint64_t end_timestamp_ns = 0;
  // The start frame was handed by a tail jump to code whose ret is not
  // traced: the function whose ret ended it (a continuation probe), or
  // XREF_FUNCTION_NONE; end_inferred when no probe saw the end and a later
  // event above the frame showed it was over.
  uint32_t end_function_id = XREF_FUNCTION_NONE;
  bool end_inferred = false;
  // Events were lost while the window was open, but which and how many of
  // them is unknown (tracefs: the kernel counts loss per CPU only).
  bool loss_unattributed = false;
  // Events received but not kept: the collector held its bound of events.
  uint64_t events_not_kept = 0;

  uint64_t first_timestamp_ns() const { return events.empty() ? 0 : events.front().timestamp_ns; }
  const EventFetch* fetches_of(const TraceEvent& event) const { return fetches.data() + event.fetch_first; }
  // A read :string fetch's bytes (its value's length of them).
  std::string_view string_of(const EventFetch& fetch) const {
    const size_t length = fetch.value & XREF_STRING_LENGTH_MASK;
    if (fetch.string_at > strings.size() || length > strings.size() - fetch.string_at) return {};
    return std::string_view(strings).substr(fetch.string_at, length);
  }
  // Sequence numbers never received: lost events, including a lost end.
  uint64_t missing_events() const;
  // Some event of the window is known (or, tracefs, may be) missing.
  bool has_loss() const {
    return lost_reported > 0 || missing_events() > 0 || loss_unattributed || events_not_kept > 0;
  }
  // The start call returned (or the stop was reached) and nothing was lost.
  bool complete() const { return ended && end_status == XREF_WINDOW_COMPLETE && !has_loss(); }
};

// What the windows taken out of a collector (release) still count for.
struct WindowTally {
  uint64_t windows = 0;
  uint64_t complete = 0;
  uint64_t events = 0;
};

class WindowCollector {
 public:
  // Events held at once, in the windows not released (about 100 bytes
  // each): past it, events are counted, not kept, and their windows show
  // the gap. A window that never ends cannot take all memory.
  static constexpr uint64_t kMaxEventsHeld = 2000000;
  // String bytes held at once (:string fetches, at most 256 bytes each):
  // past it, an event with strings is counted, not kept, as above.
  static constexpr uint64_t kMaxStringBytesHeld = uint64_t{64} << 20;

  explicit WindowCollector(const TracePlan& plan, uint64_t max_events_held = kMaxEventsHeld,
                           uint64_t max_string_bytes_held = kMaxStringBytesHeld);

  // Adds one ring-buffer record; returns the window id when it ended a window.
  std::optional<uint64_t> add(const xref_trace_event& record);

  // The windows held: open ones, and ended ones not released yet.
  const std::map<uint64_t, TraceWindow>& windows() const { return windows_; }
  // Drops a window whose output is done, keeping only its counts, so a
  // streaming output holds the open windows, not the whole run.
  void release(uint64_t window_id);
  const WindowTally& released() const { return released_; }
  // Final word from the engine on the windows whose end record did not
  // come: the open ones, and those that ended while their end record was
  // lost (exact loss, how each ended). Any other window without an end
  // ended with its status unknown.
  void apply_results(const std::map<uint64_t, xref_window_result>& results);
  // Loss happened somewhere while the window was open (see loss_unattributed).
  void mark_possible_loss(uint64_t window_id);
  uint64_t events_received() const { return events_received_; }
  uint64_t unparsed_events() const { return unparsed_events_; }
  uint64_t events_not_kept() const { return events_not_kept_; }

 private:
  const TracePlan& plan_;
  const uint64_t max_events_held_;
  const uint64_t max_string_bytes_held_;
  // Per probe: each fetch's string slot in a record, -1 for a number.
  std::vector<std::vector<int>> string_slots_;
  std::map<uint64_t, TraceWindow> windows_;
  // Released windows, map node and storage, handed to new ones: a run of
  // short windows allocates nothing per window once it is warm.
  std::vector<std::map<uint64_t, TraceWindow>::node_type> spare_;
  WindowTally released_;
  uint64_t events_held_ = 0;
  uint64_t string_bytes_held_ = 0;
  uint64_t events_not_kept_ = 0;
  uint64_t events_received_ = 0;
  uint64_t unparsed_events_ = 0;
};

}  // namespace xref
