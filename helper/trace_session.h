// Runs one trace: attach (a BPF engine, or with --backend tracefs the
// tracefs engine), drain on a short timer (no per-event wakeups), watch the
// bounds, the target's exit and SIGINT/SIGTERM, then detach everything and
// take the final counts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "result.h"
#include "target.h"
#include "trace_counters.h"
#include "trace_plan.h"
#include "trace_request.h"
#include "trace_windows.h"

namespace xref {

struct TraceRun {
  std::string backend;
  std::string stop_reason;  // max_windows, max_events, duration, interrupted, stopped, target_exited
  uint64_t elapsed_ms = 0;
  bool target_exited = false;
  TraceCounters counters;
  std::unique_ptr<WindowCollector> windows;
  std::vector<std::pair<std::string, std::string>> backend_details;  // e.g. the tracefs instance
};

struct TraceAttachInfo {
  std::string backend;
  size_t probes = 0;
  uint64_t here_window = 0;  // --here: the window already open on the stopped thread
};

struct TraceCallbacks {
  std::function<void(const TraceAttachInfo&)> attached;
  std::function<void(const TraceWindow&)> window_closed;
  // -1 (the CLI): SIGINT and SIGTERM stop the trace ("interrupted"). Else a
  // descriptor that becomes readable to stop it ("stopped"; xref serve's
  // session.stop), and signals are left alone.
  int cancel_fd = -1;
  // Readable (an eventfd): drain the ring buffer now, then call `drained`
  // (xref serve's `drain`, sent by a front end when the process stops);
  // `ending`: a bound was reached, the trace ends with no further window.
  int drain_fd = -1;
  std::function<void(bool ending)> drained;
};

Result<TraceRun> run_trace(const Target& target, const TracePlan& plan, const TraceRequest& request,
                           const TraceCallbacks& callbacks);

}  // namespace xref
