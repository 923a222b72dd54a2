// What run_trace drives: a backend that puts the plan's probes into the
// target and turns what they see into window records (struct
// xref_trace_event) for the shared WindowCollector. The BPF engine gets the
// records from its program's ring buffer; the tracefs engine makes them
// itself from raw probe hits with the WindowMachine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "result.h"
#include "trace_abi.h"
#include "trace_counters.h"
#include "trace_plan.h"
#include "trace_windows.h"

namespace xref {

// Where records go: into the collector, and each window that ends to the
// caller at once.
class EventSink {
 public:
  using WindowClosed = std::function<void(const TraceWindow&)>;
  EventSink(WindowCollector& windows, WindowClosed window_closed)
      : windows_(windows), window_closed_(std::move(window_closed)) {}

  void add(const xref_trace_event& record) {
    if (auto ended = windows_.add(record); ended && window_closed_) window_closed_(windows_.windows().at(*ended));
  }
  WindowCollector& windows() { return windows_; }

 private:
  WindowCollector& windows_;
  WindowClosed window_closed_;
};

class TraceEngine {
 public:
  virtual ~TraceEngine() = default;
  // "uprobe_multi", "perf_uprobe", "tracefs"
  virtual const std::string& backend() const = 0;
  // Hands every record that is ready to the sink. After detach(), all of them.
  virtual Result<void> drain() = 0;
  virtual TraceCounters counters() const = 0;
  // Takes the probes out; nothing new is recorded afterwards.
  virtual void detach() = 0;
  // Every window opened, with its loss count and end status.
  virtual std::map<uint64_t, xref_window_result> window_results() const = 0;
  // Backend facts for the summary ("instance", "tgid_filter", ...).
  virtual std::vector<std::pair<std::string, std::string>> details() const { return {}; }
  // --here: opens the plan's window on the debugger's stopped thread and
  // hands its first record to the sink; returns the window id.
  virtual Result<uint64_t> open_here(const HereWindow&) {
    return make_error(ErrorCode::unsupported, "--here needs a BPF backend");
  }
  // At a debugger's stop (a drain request): ends the frames of every window
  // whose thread is stopped with its stack pointer above them
  // (stopped_threads.h). Call after drain(), so their records come last.
  virtual void settle_stopped_threads() {}
};

}  // namespace xref
