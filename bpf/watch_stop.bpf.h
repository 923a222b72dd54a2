/* xref watch --stop-when, in both engines: at a write whose old and new
 * bytes are known (its record is committed), the stop condition over
 * `value` and `old`; its --stop-skip + 1th pass stops the writing thread
 * with stop_signal (the debugger catches it; a stores write has run by
 * then: the uprobe's single-step defers the signal past the store). Once:
 * the pass count is atomic. */
#ifndef XREF_WATCH_STOP_BPF_H
#define XREF_WATCH_STOP_BPF_H

#include "fetch_filter.bpf.h"
#include "watch_stop_abi.h"

const volatile __u32 stop_signal = 0; /* --stop-when: the signal; 0: no condition */
const volatile __u64 stop_skip = 0;   /* --stop-skip: passes that go by first */
__u64 stop_matches = 0;
struct xref_watch_stop stop_info = {};

FILTER_PROGRAM_MAP(stop_filter);

/* A global function, verified once (at most five arguments: `where` is
 * range << 32 | tid). `unread`: the new (1) or old (2) bytes were not
 * read: the condition is then neither true nor false. */
__noinline int watch_stop_when(__u64 sequence, __u64 where, __u64 value, __u64 old, __u32 unread) {
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  const struct xref_filter_program *when = bpf_map_lookup_elem(&stop_filter, &zero);
  if (!values || !when) return 0;
  values->count = 2;
  values->string_count = 0;
  values->failed = (__u16)(unread & 3);
  values->values[XREF_WATCH_STOP_SLOT_VALUE] = value;
  values->values[XREF_WATCH_STOP_SLOT_OLD] = old;
  if (filter_result(when, values) != XREF_FILTER_ACCEPTS) return 0;
  const __u64 match = __sync_fetch_and_add(&stop_matches, 1) + 1;
  if (match != stop_skip + 1) return 0;
  stop_info.sequence = sequence;
  stop_info.match = match;
  stop_info.timestamp_ns = bpf_ktime_get_ns();
  stop_info.tid = (__u32)where;
  stop_info.range = (__u32)(where >> 32);
  stop_info.signal_result = bpf_send_signal_thread(stop_signal);
  __sync_fetch_and_add(&stop_info.fired, 1);
  return 1;
}

/* The first 8 bytes as a little-endian integer. */
static __always_inline __u64 watch_stop_word(const __u8 *bytes, __u32 length) {
  __u64 word = 0;
  __builtin_memcpy(&word, bytes, 8);
  if (length < 8) word &= (1ull << (length * 8)) - 1;
  return word;
}

#endif
