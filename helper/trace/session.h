// Runs one trace: attach (a BPF engine, or with --backend tracefs the
// tracefs engine), drain on a short timer (no per-event wakeups), watch the
// bounds, the target's exit and SIGINT/SIGTERM, then detach everything and
// take the final counts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process/target.h"
#include "result.h"
#include "trace/counters.h"
#include "trace/plan.h"
#include "trace/request.h"
#include "trace/windows.h"

namespace xref {

struct TraceRun {
  std::string backend;
  // max_windows, max_events, duration, interrupted, stopped, target_exited,
  // target_changed (an exec), output_closed (the reader went away)
  std::string stop_reason;
  uint64_t elapsed_ms = 0;
  bool target_exited = false;
  std::optional<Error> target_changed;  // process_changed: the target called exec
  TraceCounters counters;
  std::unique_ptr<WindowCollector> windows;
  std::vector<std::pair<std::string, nlohmann::json>> backend_details;  // e.g. the tracefs instance
  // Windows counted in the summary but left out of the output, by reason
  // (the output's business: "output_stalled", "json_limit", "all_events_lost").
  std::map<std::string, uint64_t> windows_not_shown;
  uint64_t heartbeats_not_shown = 0;  // --heartbeat-ms lines a stalled reader could not take
};

struct TraceAttachInfo {
  std::string backend;
  size_t probes = 0;
  uint64_t here_window = 0;  // --here: the window already open on the stopped thread
};

struct TraceCallbacks {
  std::function<void(const TraceAttachInfo&)> attached;
  // Each window as it ends; true when the caller is done with it (it went
  // out), so the run keeps only its counts.
  std::function<bool(const TraceWindow&)> window_closed;
  // -1: SIGINT and SIGTERM stop the trace ("interrupted"). Else a
  // descriptor that becomes readable to stop it, with `cancel_reason` as
  // the stop reason (xref serve's session.stop: "stopped"; the CLI's own
  // signalfd: "interrupted"), and signals are left alone. One pending stop
  // is read from it.
  int cancel_fd = -1;
  std::string cancel_reason = "stopped";
  // True when the output's reader went away: the trace stops ("output_closed").
  std::function<bool()> output_closed;
  // Readable (an eventfd): drain the ring buffer now, then call `drained`
  // (xref serve's `drain`, sent by a front end when the process stops);
  // `ending`: a bound was reached, the trace ends with no further window.
  int drain_fd = -1;
  std::function<void(bool ending)> drained;
  // Every heartbeat_ms while the trace runs (0: never): the engine's
  // counts so far, `elapsed_ms` since the attach; the same every status_ms,
  // for the CLI's status line on a terminal.
  using Progress = std::function<void(uint64_t elapsed_ms, const TraceCounters& counters)>;
  uint64_t heartbeat_ms = 0;
  Progress heartbeat;
  uint64_t status_ms = 0;
  Progress status;
};

Result<TraceRun> run_trace(const Target& target, const TracePlan& plan, const TraceRequest& request,
                           const TraceCallbacks& callbacks);

}  // namespace xref
