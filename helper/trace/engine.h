// What run_trace drives: a backend that puts the plan's probes into the
// target and turns what they see into window records (struct
// xref_trace_event) for the shared WindowCollector. The BPF engine gets the
// records from its program's ring buffer; the tracefs engine makes them
// itself from raw probe hits with the WindowMachine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "result.h"
#include "trace/counters.h"
#include "trace/plan.h"
#include "trace/windows.h"
#include "trace_abi.h"

namespace xref {

// Where records go: into the collector, and each window that ends to the
// caller at once; the caller says whether it is done with it (true: the
// collector keeps only its counts).
class EventSink {
 public:
  using WindowClosed = std::function<bool(const TraceWindow&)>;
  EventSink(WindowCollector& windows, WindowClosed window_closed)
      : windows_(windows), window_closed_(std::move(window_closed)) {}

  void add(const xref_trace_event& record) {
    const auto ended = windows_.add(record);
    if (ended && window_closed_ && window_closed_(windows_.windows().at(*ended))) windows_.release(*ended);
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
  // Hands the records that are ready to the sink, at most a bounded round of
  // them, so the caller gets back to its deadline and signals however fast
  // the target produces: true when it stopped with more ready. After
  // detach(), every record, and false.
  virtual Result<bool> drain() = 0;
  virtual TraceCounters counters() const = 0;
  // Takes the probes out; nothing new is recorded afterwards.
  virtual void detach() = 0;
  // The windows whose end record was not delivered (open at the end, or its
  // end record lost), with their loss count and end status.
  virtual std::map<uint64_t, xref_window_result> window_results() const = 0;
  // Backend facts for the summary ("instance", "tgid_filter", ...): text as
  // JSON strings, counts as JSON numbers.
  virtual std::vector<std::pair<std::string, nlohmann::json>> details() const { return {}; }
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
