// --backend tracefs: the probe without BPF, through the kernel's
// uprobe_events. Each site becomes a uprobe event (events.h) recording
// into the helper's private ftrace instance (attach/tracefs/recording.h:
// reaper, watchdog, per-CPU raw rings, the target's threads only, loss);
// its records are decoded (records.h), merged across CPUs by timestamp
// (attach/tracefs/merge.h) and counted in the helper exactly as the BPF
// program counts (tally.h). Counts come from records, so a record the
// kernel loses is a hit not counted: the loss is the result's lost_events,
// and the result is then incomplete.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "probe/engine.h"
#include "probe/plan.h"
#include "probe/tracefs/tally.h"

namespace xref {

struct ProbeTracefsOptions {
  pid_t pid = 0;                      // the target
  pid_t helper_pid = 0;               // with its start time, names our instance and event group
  uint64_t ringbuf_bytes = 1u << 20;  // per CPU
  ProbeTallyOptions tally;
  std::string fallback_from;          // --backend auto: why BPF could not be used ("" when asked for)
};

Result<std::unique_ptr<ProbeEngine>> start_tracefs_probe_engine(const ProbePlan& plan,
                                                                const ProbeTracefsOptions& options,
                                                                ProbeRecordSink sink);

}  // namespace xref
