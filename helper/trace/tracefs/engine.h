// --backend tracefs: the trace without BPF, through the kernel's
// uprobe_events. The plan's probes become uprobe events (probes.h)
// recording into the helper's private ftrace instance
// (attach/tracefs/recording.h: the instance, its per-CPU raw ring buffers
// read without blocking, records kept to the target's threads, the
// watchdog and the reaper); the records are decoded (records.h), merged by
// timestamp (attach/tracefs/merge.h) and run through the C++ port of the
// BPF window state machine (window_machine.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "trace/engine.h"
#include "trace/plan.h"

namespace xref {

struct TracefsEngineOptions {
  pid_t pid = 0;                      // the target
  pid_t helper_pid = 0;               // with its start time, names our instance and event group
  uint64_t ringbuf_bytes = 4u << 20;  // per CPU
  uint64_t max_events = 0;
  uint64_t max_windows = 0;
};

// `module` is the traced executable as the target maps it (plan.module).
Result<std::unique_ptr<TraceEngine>> start_tracefs_engine(const TracePlan& plan, const TracefsEngineOptions& options,
                                                          EventSink& sink);

}  // namespace xref
