/* xref watch --stop-when, between the BPF programs (bpf/watch_stop.bpf.h,
 * included by watch_stores.bpf.c and watch_hw.bpf.c) and the helper: the
 * write that made the stop condition hold, noted once in .bss. The
 * condition is a lowered filter (shared/filter_program.h) over two names:
 * slot 0 `value` (the bytes the write left, the first 8 as a little-endian
 * integer) and slot 1 `old` (the bytes before it). */
#ifndef XREF_WATCH_STOP_ABI_H
#define XREF_WATCH_STOP_ABI_H

#ifdef __BPF__
#include <linux/types.h>
#else
#include <linux/types.h>
#endif

#define XREF_WATCH_STOP_SLOT_VALUE 0
#define XREF_WATCH_STOP_SLOT_OLD 1

struct xref_watch_stop {
  __u64 fired;          /* 1 once the signal went out */
  __u64 sequence;       /* the write's record sequence number */
  __u64 match;          /* the condition's passes so far, this one included: --stop-skip + 1 */
  __u64 timestamp_ns;   /* CLOCK_MONOTONIC */
  __s64 signal_result;  /* bpf_send_signal_thread: 0 sent */
  __u32 tid;
  __u32 range;
};

#endif
