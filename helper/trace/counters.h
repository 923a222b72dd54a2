// What a trace engine counted while it ran, whatever the backend: the BPF
// program's counters, or the tracefs engine's port of them plus what the
// kernel's per-CPU ring buffers report.
#pragma once

#include <cstdint>

namespace xref {

struct TraceCounters {
  uint64_t events_emitted = 0;
  uint64_t windows_opened = 0;
  uint64_t windows_closed = 0;
  uint64_t starts_filtered = 0;
  // Start calls that opened no window: XREF_TRACE_MAX_THREADS threads had
  // one open already. Their requests are not in the output.
  uint64_t starts_refused = 0;
  uint64_t lost_events = 0;      // every event known to be lost: the total of the three below
  // The lost events by cause. BPF: ring buffer reservations that failed are
  // dropped_events. tracefs: the per-CPU `stats` counters of the instance.
  uint64_t overrun = 0;
  uint64_t commit_overrun = 0;
  uint64_t dropped_events = 0;
  bool stopped = false;
  uint32_t stop_reason = 0;      // XREF_STOP_*
  // tracefs: records of other processes (uprobe events are global) and of
  // threads whose process could not be told; both are left out.
  uint64_t excluded_other_tgid_events = 0;
  uint64_t ambiguous_tid_events = 0;
  uint64_t unparsed_records = 0;  // tracefs records that did not decode
};

}  // namespace xref
