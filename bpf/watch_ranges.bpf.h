/* The maps every watch program keeps per watched range (watch_hw.bpf.c,
 * watch_stores.bpf.c): the ranges user space writes (and rewrites for
 * --follow), the passing writes per range that --every and --first count,
 * and the per-CPU counts user space sums (helper/watch/watch_records). */
#ifndef XREF_WATCH_RANGES_BPF_H
#define XREF_WATCH_RANGES_BPF_H

#include "watch_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_RANGES);
  __type(key, __u32);
  __type(value, struct xref_watch_range);
} ranges SEC(".maps");

/* Passing writes per range, shared by every CPU: a write's number. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_RANGES);
  __type(key, __u32);
  __type(value, __u64);
} range_passed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_RANGES);
  __type(key, __u32);
  __type(value, struct xref_watch_counts);
} counts SEC(".maps");

#endif
