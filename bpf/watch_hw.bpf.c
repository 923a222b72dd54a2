// xref watch --backend hw: one program on every perf breakpoint event (one
// per watched range per thread of the target). A debug-register trap comes
// after the access, so the bytes read here are the new value; the old one
// is the range's previous bytes, kept in `previous` (set by user space from
// process_vm_readv when it arms or moves the range) and swapped atomically
// for the new ones at each hit, so every record is old -> new. Counts never
// pass through the ring buffer; a record it cannot take is counted as lost.
//
// Which range a hit is for: the attach cookie (range + 1). An event the
// kernel inherited into a thread created later carries no cookie (0): then
// the event's breakpoint address (ctx->addr, its bp_addr) is looked up in
// the ranges.
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "watch_abi.h"
#include "watch_ranges.bpf.h"
#include "watch_detail.bpf.h"
#include "watch_stop.bpf.h"

const volatile __u32 target_tgid = 0;
const volatile __u64 every = 1;       /* per range: every Nth passing write is recorded */
const volatile __u64 first = 0;       /* per range: the first N recorded writes; 0: no limit */
const volatile __u64 until_hits = 0;  /* the run stops after N passing writes in all; 0: no bound */
const volatile __u64 max_records = 0; /* records in all (--max-events); 0: no bound */

/* Set by user space once every event is in, and before it detaches. */
__u32 armed = 0;
__u32 detaching = 0;
/* Set here when --until-hits is reached; user space then detaches. */
__u32 stopped = 0;
__u32 range_count = 0;      /* the used prefix of `ranges` */
__u64 sequence = 0;         /* writes seen, in the order they were seen */
__u64 passed_total = 0;
__u64 records_total = 0;
__u64 over_max_records = 0; /* passing writes past --max-events, kept by no record */
__u64 foreign_hits = 0;     /* hits in another process (an event inherited across fork) */
__u64 unknown_range = 0;    /* hits whose range could not be told */

/* The bytes each range held before the last write this program saw (at
 * most 8: a debug register watches 1, 2, 4 or 8 bytes). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_RANGES);
  __type(key, __u32);
  __type(value, __u64);
} previous SEC(".maps");


/* Traps per range, counted before anything else is read: user space's
 * proof that no trap came while it looked at a range. */
__u64 traps[XREF_WATCH_MAX_RANGES] = {};

/* A range's bytes changed with no trap (the kernel wrote them): user space
 * asks the range's next trap to take them as the old value. It cannot write
 * `previous` itself: a write already in memory whose trap has not yet run
 * looks the same from outside, and that trap would then read old == new;
 * here the trap can tell (the request holds its own new bytes). */
struct xref_watch_resync resync[XREF_WATCH_MAX_RANGES] = {};

/* Per CPU: the record being built and what the trap fetched. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xref_watch_record);
} scratch_record SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct hit_detail);
} scratch_detail SEC(".maps");

/* The trap's registers in struct pt_regs order: a perf event's ctx holds
 * them behind a pointer the verifier only lets be read field by field. */
static __always_inline void copy_trap_regs(struct bpf_perf_event_data *ctx, struct saved_regs *regs) {
  regs->words[0] = ctx->regs.r15;
  regs->words[1] = ctx->regs.r14;
  regs->words[2] = ctx->regs.r13;
  regs->words[3] = ctx->regs.r12;
  regs->words[4] = ctx->regs.rbp;
  regs->words[5] = ctx->regs.rbx;
  regs->words[6] = ctx->regs.r11;
  regs->words[7] = ctx->regs.r10;
  regs->words[8] = ctx->regs.r9;
  regs->words[9] = ctx->regs.r8;
  regs->words[10] = ctx->regs.rax;
  regs->words[11] = ctx->regs.rcx;
  regs->words[12] = ctx->regs.rdx;
  regs->words[13] = ctx->regs.rsi;
  regs->words[14] = ctx->regs.rdi;
  regs->words[15] = ctx->regs.orig_rax;
  regs->words[16] = ctx->regs.rip;
  regs->words[17] = ctx->regs.cs;
  regs->words[18] = ctx->regs.eflags;
  regs->words[19] = ctx->regs.rsp;
  regs->words[20] = ctx->regs.ss;
}

/* The range whose breakpoint sits at `address` (an inherited event). */
static __always_inline int range_at(__u64 address, __u32* found) {
  for (__u32 index = 0; index < XREF_WATCH_MAX_RANGES; ++index) {
    if (index >= range_count) break;
    __u32 key = index;
    struct xref_watch_range* range = bpf_map_lookup_elem(&ranges, &key);
    if (range && range->length != 0 && range->address == address) {
      *found = index;
      return 1;
    }
  }
  return 0;
}

/* `length` bytes at `address` of the current process, as a little-endian
 * word; only the lengths a debug register can watch. */
static __always_inline long read_bytes(__u64 address, __u32 length, __u64* value) {
  *value = 0;
  switch (length) {
    case 1: return bpf_probe_read_user(value, 1, (const void*)address);
    case 2: return bpf_probe_read_user(value, 2, (const void*)address);
    case 4: return bpf_probe_read_user(value, 4, (const void*)address);
    case 8: return bpf_probe_read_user(value, 8, (const void*)address);
  }
  return -1;
}

SEC("perf_event")
int watch_hw_hit(struct bpf_perf_event_data* ctx) {
  if (!armed || detaching || stopped) return 0;
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  if ((__u32)(pid_tgid >> 32) != target_tgid) {
    __sync_fetch_and_add(&foreign_hits, 1);
    return 0;
  }
  const __u64 address = ctx->addr;
  __u32 index = 0;
  const __u64 cookie = bpf_get_attach_cookie(ctx);
  if (cookie != 0) {
    index = (__u32)(cookie - 1);
  } else if (!range_at(address, &index)) {
    __sync_fetch_and_add(&unknown_range, 1);
    return 0;
  }
  struct xref_watch_range* range = bpf_map_lookup_elem(&ranges, &index);
  __u64* before = bpf_map_lookup_elem(&previous, &index);
  struct xref_watch_counts* count = bpf_map_lookup_elem(&counts, &index);
  __u64* passed_slot = bpf_map_lookup_elem(&range_passed, &index);
  if (!range || !before || !count || !passed_slot || range->length == 0) return 0;
  _Static_assert((XREF_WATCH_MAX_RANGES & (XREF_WATCH_MAX_RANGES - 1)) == 0, "a power of two");
  /* XREF_WATCH_MAX_RANGES is a power of two: the mask is the bound the
   * verifier can see where the index comes back from the stack. */
  const __u32 slot = index & (XREF_WATCH_MAX_RANGES - 1);
  const __u64 traps_before = __sync_fetch_and_add(&traps[slot], 1);
  count->writes++;

  __u32 flags = XREF_WATCH_R_NEW_AFTER;
  __u32 generation = range->generation;
  __u64 now_bytes = 0;
  if (read_bytes(address, range->length, &now_bytes) != 0) {
    count->unread++;
    flags |= XREF_WATCH_R_NEW_UNREAD;
  }
  /* The event still at the range's old place (user space moved the range
   * and has not yet moved every thread's breakpoint): the write is to the
   * old generation, whose previous bytes are no longer kept. */
  __u64 old_bytes = 0;
  if (address != range->address) {
    generation = generation > 0 ? generation - 1 : 0;
    flags |= XREF_WATCH_R_OLD_UNREAD;
  } else {
    old_bytes = __sync_lock_test_and_set(before, now_bytes);
    struct xref_watch_resync* request = &resync[slot & (XREF_WATCH_MAX_RANGES - 1)];
    /* A request whose bytes are this trap's new ones was read from this very
     * write (in memory, its trap not yet run): it is not taken. */
    if (request->pending && __sync_val_compare_and_swap(&request->pending, 1, 0) == 1 &&
        request->traps_seen == traps_before && request->bytes != now_bytes) {
      old_bytes = request->bytes;
    }
  }
  const __u64 seq = __sync_fetch_and_add(&sequence, 1) + 1;
  const int unchanged = (flags & (XREF_WATCH_R_OLD_UNREAD | XREF_WATCH_R_NEW_UNREAD)) == 0 && old_bytes == now_bytes;
  if (unchanged) {
    count->unchanged++;
    if (range->changed_only) return 0;
  }

  const __u32 zero = 0;
  struct xref_watch_record* record = bpf_map_lookup_elem(&scratch_record, &zero);
  struct hit_detail* detail = bpf_map_lookup_elem(&scratch_detail, &zero);
  struct saved_regs* regs = bpf_map_lookup_elem(&scratch_regs, &zero);
  if (!record || !detail || !regs) return 0;
  record->timestamp_ns = bpf_ktime_get_ns();
  record->sequence = seq;
  record->address = address;
  record->pc = PT_REGS_IP(&ctx->regs);
  record->return_address = 0;
  record->site = XREF_WATCH_SITE_HW;
  record->tid = (__u32)pid_tgid;
  record->range = index;
  record->generation = generation;
  record->length = range->length;
  record->flags = flags;
  __builtin_memset(record->old_bytes, 0, sizeof(record->old_bytes));
  __builtin_memset(record->new_bytes, 0, sizeof(record->new_bytes));
  __builtin_memcpy(record->old_bytes, &old_bytes, sizeof(old_bytes));
  __builtin_memcpy(record->new_bytes, &now_bytes, sizeof(now_bytes));
  if (with_detail) {
    /* After the trap: the registers as the writing instruction left them. */
    copy_trap_regs(ctx, regs);
    read_detail(detail, regs);
    if (want_callers) detail->stack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
  }
  const int verdict = filter_write(record, range, detail);
  if (verdict == XREF_FILTER_UNREADABLE) {
    __sync_fetch_and_add(&count->unfiltered, 1);
    return 0;
  }
  if (verdict != XREF_FILTER_ACCEPTS) return 0;

  const __u64 passed = __sync_fetch_and_add(&passed_total, 1) + 1;
  if (until_hits != 0 && passed >= until_hits) stopped = 1;
  if (until_hits != 0 && passed > until_hits) return 0;
  count->passed++;
  count_stack(XREF_WATCH_SITE_HW, detail, count);
  const __u64 number = __sync_fetch_and_add(passed_slot, 1);
  const __u64 stride = every == 0 ? 1 : every;
  if (number % stride != 0) return 0;
  if (first != 0 && number / stride >= first) return 0;
  if (max_records != 0 && __sync_fetch_and_add(&records_total, 1) >= max_records) {
    __sync_fetch_and_add(&over_max_records, 1);
    return 0;
  }
  /* A --follow slot's write wakes the helper at once; others wait for its timer. */
  if (emit_watch_record(record, detail, range->wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP) != 0) {
    count->records_lost++;
    return 0;
  }
  count->records++;
  if (stop_signal) {
    const __u32 unread = (flags & XREF_WATCH_R_NEW_UNREAD ? 1 : 0) | (flags & XREF_WATCH_R_OLD_UNREAD ? 2 : 0);
    watch_stop_when(seq, (__u64)index << 32 | (__u32)pid_tgid, now_bytes, old_bytes, unread);
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
