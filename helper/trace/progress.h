// What `xref trace` says while it runs (docs/trace.md, "Long runs"): a
// heartbeat every --heartbeat-ms (windows and events so far, the rate of
// windows since the last one, events lost), as a line of text or a JSON
// line, and the status line's text on a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "mark/follower.h"
#include "output/status_line.h"
#include "trace/counters.h"
#include "trace/request.h"

namespace xref {

class TraceProgress {
 public:
  TraceProgress(const TraceRequest& request, MarkFollower* marks) : request_(request), marks_(marks) {}

  // A window that closed, as it reaches the output: its events counted.
  void window_closed(size_t events) {
    ++windows_;
    events_ += events;
  }

  // {"type": "heartbeat", "elapsed_ms", "windows" (closed, received so
  // far), "windows_open" (the engine's count), "windows_per_s" (since the
  // previous heartbeat), "events" (of those windows), "lost_events"},
  // stamped with --mark-file's latest line.
  nlohmann::json heartbeat_json(uint64_t elapsed_ms, const TraceCounters& counters);
  // "heartbeat 1000 ms  12 windows (12.0/s)  340 events  lost 0\n"
  static std::string heartbeat_text(const nlohmann::json& heartbeat);
  // "xref: 12.4 s  3,201 windows (258/s)  48,112 events  lost 0  (Ctrl-C to stop)"
  std::string status_text(uint64_t elapsed_ms, const TraceCounters& counters);

 private:
  const TraceRequest& request_;
  MarkFollower* marks_;
  uint64_t windows_ = 0;
  uint64_t events_ = 0;
  uint64_t last_heartbeat_ms_ = 0;
  uint64_t last_windows_ = 0;
  RecentRate rate_;
};

}  // namespace xref
