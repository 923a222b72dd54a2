/* What both watch programs (watch_stores.bpf.c, watch_hw.bpf.c) add to a
 * write for --fetch, --filter, --regs and --callers: the values fetched
 * and the registers where the write is seen (stores: at the uprobe, before
 * the store runs; hw: after the trap), the filter over those values and
 * the range's `value` and `old`, the user stack counted per writer site,
 * and a record that carries all of it (xref_watch_detail after the
 * xref_watch_record). probe's machinery does the fetching and filtering
 * (fetch_filter.bpf.h). Include after watch_ranges.bpf.h. */
#ifndef XREF_WATCH_DETAIL_BPF_H
#define XREF_WATCH_DETAIL_BPF_H

#include "fetch_filter.bpf.h"
#include "watch_abi.h"

const volatile __u8 with_detail = 0;  /* records carry an xref_watch_detail */
const volatile __u8 want_regs = 0;    /* --regs */
const volatile __u8 want_callers = 0; /* --callers */
const volatile __u8 filtering = 0;    /* --filter: `filter` holds a program */
const volatile __u8 fetch_count = 0;  /* --fetch: items in `fetches`; `value`, `old` come after them */

/* What one hit carries to its records. */
struct hit_detail {
  struct fetched values;
  __u64 regs[XREF_WATCH_REG_WORDS];
  __u64 caller;
  __s64 stack_id;
};

struct fetch_list {
  struct xref_fetch items[XREF_FETCH_MAX_ITEMS];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fetch_list);
} fetches SEC(".maps");

FILTER_PROGRAM_MAP(filter);

/* --callers: user stacks walked by the kernel through frame pointers,
 * deduplicated by id, and the passing writes counted per (site, stack). */
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, XREF_WATCH_MAX_STACKS); /* 1 entry when --callers is not given */
  __type(key, __u32);
  __uint(value_size, XREF_WATCH_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XREF_WATCH_MAX_STACKS);
  __type(key, struct xref_watch_stack_key);
  __type(value, __u64);
  __uint(map_flags, BPF_F_NO_PREALLOC);
} stacks SEC(".maps");

/* Records (and their detail) to user space; resized by user space before load. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22);
} records SEC(".maps");

/* The record and its detail as one ring-buffer entry. */
struct record_with_detail {
  struct xref_watch_record record;
  struct xref_watch_detail detail;
};

/* --filter over the write's values. A global function: verified once,
 * not at every place a record is finished. */
__noinline int filter_verdict(const struct fetched *values) {
  if (!values) return XREF_FILTER_UNREADABLE;
  __u32 zero = 0;
  return filter_result(bpf_map_lookup_elem(&filter, &zero), values);
}

/* The hit's fetches over its registers (copied already), and the
 * registers for --regs. */
static __always_inline void read_detail(struct hit_detail *detail, const struct saved_regs *regs) {
  __u32 zero = 0;
  const struct fetch_list *list = bpf_map_lookup_elem(&fetches, &zero);
  detail->values.count = 0;
  detail->values.failed = 0;
  detail->values.string_count = 0;
  if (list && fetch_count) read_fetches_from(regs, list->items, fetch_count, &detail->values);
  if (want_regs) {
    for (__u32 w = 0; w < XREF_WATCH_REG_WORDS; w++) detail->regs[w] = regs->words[w];
  }
  detail->caller = 0;
  detail->stack_id = -1;
}

/* The range's bytes as integers before and after the write, for the
 * filter's `old` and `value`: the range is 1, 2, 4 or 8 bytes. A write
 * that covers part of it: the rest as it is now (before the store for a
 * record whose new bytes come from its operand, after it for one read
 * after the store). Bit 1 of the result: `value` unknown; bit 2: `old`. */
static __always_inline __u32 range_integers(const struct xref_watch_record *record,
                                            const struct xref_watch_range *range, __u64 *value, __u64 *old) {
  *value = 0;
  *old = 0;
  const __u32 length = range->length;
  if (length != 1 && length != 2 && length != 4 && length != 8) return 3;
  if (record->address < range->address) return 3;
  const __u64 offset = record->address - range->address;
  const __u32 covered = record->length;
  if (covered == 0 || covered > length || offset + covered > length) return 3;
  __u64 written_old = 0, written_new = 0;
  __builtin_memcpy(&written_old, record->old_bytes, 8);
  __builtin_memcpy(&written_new, record->new_bytes, 8);
  const __u64 mask = covered >= 8 ? ~0ull : (1ull << (covered * 8)) - 1;
  if (covered == length) {
    *old = written_old & mask;
    *value = written_new & mask;
  } else {
    __u64 now = 0;
    if (bpf_probe_read_user(&now, length & 15, (const void *)range->address) != 0) return 3;
    const __u32 shift = (__u32)offset * 8;
    const __u64 place = (mask << (shift & 63));
    if (record->flags & XREF_WATCH_R_NEW_AFTER) {
      *value = now;
      *old = (now & ~place) | ((written_old & mask) << (shift & 63));
    } else {
      *old = now;
      *value = (now & ~place) | ((written_new & mask) << (shift & 63));
    }
  }
  __u32 missing = 0;
  if (record->flags & XREF_WATCH_R_NEW_UNREAD) missing |= 1;
  if (record->flags & XREF_WATCH_R_OLD_UNREAD) missing |= 2;
  return missing;
}

/* Does the write pass --filter? XREF_FILTER_* */
static __always_inline int filter_write(const struct xref_watch_record *record, const struct xref_watch_range *range,
                                        struct hit_detail *detail) {
  if (!filtering) return XREF_FILTER_ACCEPTS;
  if (!detail || !range) return XREF_FILTER_UNREADABLE;
  __u64 value = 0, old = 0;
  const __u32 missing = range_integers(record, range, &value, &old);
  const __u32 value_slot = fetch_count & (XREF_FETCH_MAX_ITEMS - 1);
  const __u32 old_slot = (fetch_count + 1) & (XREF_FETCH_MAX_ITEMS - 1);
  detail->values.values[value_slot] = value;
  detail->values.values[old_slot] = old;
  __u16 failed = detail->values.failed & ~(__u16)((1u << value_slot) | (1u << old_slot));
  if (missing & 1) failed |= (__u16)(1u << value_slot);
  if (missing & 2) failed |= (__u16)(1u << old_slot);
  detail->values.failed = failed;
  return filter_verdict(&detail->values);
}

/* --callers: a passing write counted under its site and stack. */
static __always_inline void count_stack(__u32 site, const struct hit_detail *detail, struct xref_watch_counts *count) {
  if (!want_callers || !detail) return;
  if (detail->stack_id < 0) {
    __sync_fetch_and_add(&count->stacks_unread, 1);
    return;
  }
  struct xref_watch_stack_key key = {.site = site, .reserved = 0,
                                     .key = (__u64)detail->stack_id | (detail->caller << XREF_WATCH_STACK_ID_BITS)};
  __u64 *hits = bpf_map_lookup_elem(&stacks, &key);
  if (hits) {
    __sync_fetch_and_add(hits, 1);
    return;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(&stacks, &key, &one, BPF_NOEXIST) == 0) return;
  hits = bpf_map_lookup_elem(&stacks, &key); /* another CPU put it in first */
  if (hits) {
    __sync_fetch_and_add(hits, 1);
    return;
  }
  __sync_fetch_and_add(&count->stacks_unread, 1);
}

/* The record into the ring buffer, with its detail when the watch asked
 * for one; 0 when the ring buffer took it. A global function: verified
 * once, not at every place a record is finished. */
__noinline int emit_watch_record(struct xref_watch_record *record, struct hit_detail *detail, __u64 wakeup) {
  if (!record) return -1;
  if (!with_detail || !detail) return bpf_ringbuf_output(&records, record, sizeof(*record), wakeup) == 0 ? 0 : -1;
  struct record_with_detail *out = bpf_ringbuf_reserve(&records, sizeof(*out), 0);
  if (!out) return -1;
  __builtin_memcpy(&out->record, record, sizeof(out->record));
  struct xref_watch_detail *d = &out->detail;
  for (int i = 0; i < XREF_FETCH_MAX_ITEMS; i++) {
    d->values[i] = detail->values.values[i];
    d->errors[i] = detail->values.errors[i];
  }
  for (int w = 0; w < XREF_WATCH_REG_WORDS; w++) d->regs[w] = want_regs ? detail->regs[w] : 0;
  d->caller = detail->caller;
  d->stack_id = (__s32)detail->stack_id;
  d->failed = detail->values.failed;
  d->fetch_count = fetch_count;
  d->has_regs = want_regs;
  /* Read by the helper only for :string fetches, whose slots are read. */
  bpf_probe_read_kernel(d->strings, sizeof(d->strings), detail->values.strings);
  bpf_ringbuf_submit(out, wakeup);
  return 0;
}

#endif
