// xref watch, stores engine: one program on every store instruction that
// can reach a watched range (one uprobe_multi link per module, or perf
// uprobes), told apart by the attach cookie, the index of its site
// (shared/watch_abi.h). The uprobe runs before the instruction: the
// effective address comes from the registers and the operand, the old bytes
// are read now, and the new bytes come from the source register or
// immediate - or, where the operand does not hold them (read-modify-write,
// xchg, vector, rep movs, a libc writer by contract), the write is kept per
// thread in flight and its new bytes are read at the thread's next probed
// instruction (the after-site, the contract's return, any store) or by user
// space at the end. Counts per range never pass through the ring buffer.
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "watch_abi.h"
#include "watch_ranges.bpf.h"
#include "watch_detail.bpf.h"
#include "watch_stop.bpf.h"

const volatile __u32 target_tgid = 0;
const volatile __u64 max_records = 0; /* --max-events; 0: unbounded */
const volatile __u64 first = 0;       /* per range: the first N sampled writes are recorded; 0: no limit */
const volatile __u64 every = 1;       /* per range: every Nth passing write is recorded */
const volatile __u64 until_hits = 0;  /* the watch stops after N passing writes in all; 0: no bound */

/* Set by user space once every probe is in, and before it detaches. */
__u32 armed = 0;
__u32 detaching = 0;
__u32 stopped = 0;      /* set here when --until-hits is reached */
__u32 range_count = 0;  /* the used prefix of `ranges`, set by user space */
__u64 sequence = 0;
__u64 passed_total = 0;
__u64 records_total = 0;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_SITES); /* resized by user space */
  __type(key, __u32);
  __type(value, struct xref_watch_site);
} sites SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xref_watch_engine_counts);
} engine_counts SEC(".maps");

#define IN_FLIGHT_PARTS 4

/* A write whose new bytes are read after it ran: the part of each range
 * it covers, with the old bytes read before, and what the hit fetched
 * (--fetch, --regs, --callers: read at the store, before it ran). */
struct in_flight {
  __u32 count;
  __u32 reserved;
  struct xref_watch_record parts[IN_FLIGHT_PARTS];
  struct hit_detail detail;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XREF_WATCH_MAX_THREADS);
  __type(key, __u32);
  __type(value, struct in_flight);
  __uint(map_flags, BPF_F_NO_PREALLOC);
} writes_in_flight SEC(".maps");

/* Per CPU: the write being looked at and the registers of the hit. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct in_flight);
} scratch_flight SEC(".maps");

/* --callers: where each site's return address is (by its index). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_WATCH_MAX_SITES); /* resized by user space */
  __type(key, __u32);
  __type(value, struct xref_watch_site_caller);
} site_callers SEC(".maps");


static __always_inline __u64 reg_word(const struct saved_regs *regs, __u16 offset) {
  __u32 word = offset / 8;
  if (offset == XREF_WATCH_NO_REG || word >= PT_REGS_WORDS) return 0;
  return regs->words[word & 31];
}

#define PASS_NONE 0     /* past --until-hits: not counted as passing */
#define PASS_COUNTED 1  /* passed, not sampled (--every, --first, --max-events) */
#define PASS_RECORD 2   /* passed and recorded */

/* Counts a passing write and says whether it is recorded (--every,
 * --first, --until-hits, --max-events). */
static __always_inline int pass_write(__u32 range, struct xref_watch_counts *count) {
  __sync_fetch_and_add(&count->passed, 1);
  __u64 *passed = bpf_map_lookup_elem(&range_passed, &range);
  if (!passed) return PASS_NONE;
  const __u64 nth = __sync_fetch_and_add(passed, 1) + 1;
  const __u64 total = __sync_fetch_and_add(&passed_total, 1) + 1;
  if (until_hits && total >= until_hits) stopped = 1;
  if (until_hits && total > until_hits) return PASS_NONE;
  const __u64 step = every ? every : 1;
  if (nth % step) return PASS_COUNTED;
  if (first && nth / step > first) return PASS_COUNTED;
  if (max_records && __sync_fetch_and_add(&records_total, 1) >= max_records) return PASS_COUNTED;
  return PASS_RECORD;
}

/* The first n (<= 64) bytes of a and b are equal: eight words, the
 * bytes past n masked off (a loop of 64 would cost the verifier dearly). */
static __always_inline int bytes_equal(const __u8 *a, const __u8 *b, __u32 n) {
  __u64 differ = 0;
  for (__u32 w = 0; w < XREF_WATCH_VALUE_BYTES / 8; w++) {
    __u64 x = 0, y = 0;
    __builtin_memcpy(&x, a + w * 8, 8);
    __builtin_memcpy(&y, b + w * 8, 8);
    const __u32 first = w * 8;
    __u64 mask = 0;
    if (n >= first + 8) mask = ~0ull;
    else if (n > first) mask = (1ull << ((n - first) * 8)) - 1;
    differ |= (x ^ y) & mask;
  }
  return differ == 0;
}

/* 64 bytes of a write that repeats `value`'s `width` bytes (1, 2, 4 or 8),
 * starting `skip` bytes into the write: one word, repeated. */
static __always_inline void fill_repeated(__u8 *out, __u64 value, __u32 width, __u64 skip) {
  __u64 word = 0;
  const __u32 mask = width - 1;
  for (__u32 k = 0; k < 8; k++) {
    const __u32 at = (__u32)((skip + k) & mask) & 7;
    word |= ((value >> (8 * at)) & 0xff) << (8 * k);
  }
  for (__u32 w = 0; w < XREF_WATCH_VALUE_BYTES / 8; w++) __builtin_memcpy(out + w * 8, &word, 8);
}

/* Hands a complete record (old and new bytes known) to the ring buffer
 * unless --changed or --filter drops it; counts either way. The filter
 * runs here, where the new bytes are known: at the store for a value from
 * its operand, at the later probe that read them for one read after. */
__noinline int finish(struct xref_watch_record *record, struct hit_detail *detail) {
  if (!record) return 0;
  __u32 range = record->range;
  struct xref_watch_counts *count = bpf_map_lookup_elem(&counts, &range);
  if (!count) return 0;
  __u32 n = record->length > XREF_WATCH_VALUE_BYTES ? XREF_WATCH_VALUE_BYTES : record->length;
  int same = bytes_equal(record->old_bytes, record->new_bytes, n);
  if (record->length > XREF_WATCH_VALUE_BYTES) same = 0; /* not all compared */
  if (record->flags & (XREF_WATCH_R_NEW_UNREAD | XREF_WATCH_R_OLD_UNREAD)) same = 0;
  if (same) __sync_fetch_and_add(&count->unchanged, 1);
  const struct xref_watch_range *watched = bpf_map_lookup_elem(&ranges, &range);
  if (same && watched && watched->changed_only) return 0;
  const int verdict = filter_write(record, watched, detail);
  if (verdict == XREF_FILTER_UNREADABLE) {
    __sync_fetch_and_add(&count->unfiltered, 1);
    return 0;
  }
  if (verdict != XREF_FILTER_ACCEPTS) return 0;
  const int pass = pass_write(range, count);
  if (pass == PASS_NONE) return 0;
  count_stack(record->site, detail, count);
  if (pass != PASS_RECORD) return 0;
  /* A write in flight took its number when its store was about to run:
   * the order of the stores, not of their completions. */
  if (record->sequence == 0) record->sequence = __sync_fetch_and_add(&sequence, 1) + 1;
  /* A slot's write wakes the helper now (its --follow re-arm waits on
   * it); any other write waits for the drain timer, so a busy target
   * never turns the helper's loop into a spin. */
  const __u64 wakeup = watched && watched->wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
  if (emit_watch_record(record, detail, wakeup) == 0) {
    __sync_fetch_and_add(&count->records, 1);
  } else {
    __sync_fetch_and_add(&count->records_lost, 1);
  }
  if (stop_signal) {
    const __u32 unread = (record->flags & XREF_WATCH_R_NEW_UNREAD ? 1 : 0) | (record->flags & XREF_WATCH_R_OLD_UNREAD ? 2 : 0);
    watch_stop_when(record->sequence, (__u64)range << 32 | record->tid, watch_stop_word(record->new_bytes, n),
                    watch_stop_word(record->old_bytes, n), unread);
  }
  return 0;
}

/* One part of a write in flight (bpf_loop callback): its new bytes now. */
static long finish_part(__u32 p, void *data) {
  __u32 *tid = data;
  struct in_flight *flight = bpf_map_lookup_elem(&writes_in_flight, tid);
  if (!flight || p >= flight->count || p >= IN_FLIGHT_PARTS) return 1;
  /* The mask keeps the verifier sure of the bound; the empty asm stops
   * clang from dropping it as redundant after the check above. */
  asm volatile("" : "+r"(p));
  struct xref_watch_record *record = &flight->parts[p & (IN_FLIGHT_PARTS - 1)];
  __u32 n = record->length > XREF_WATCH_VALUE_BYTES ? XREF_WATCH_VALUE_BYTES : record->length;
  n &= 127;
  if (n > XREF_WATCH_VALUE_BYTES) n = XREF_WATCH_VALUE_BYTES;
  record->flags |= XREF_WATCH_R_NEW_AFTER;
  if (n > 0 && bpf_probe_read_user(record->new_bytes, n, (const void *)record->address) != 0) {
    record->flags |= XREF_WATCH_R_NEW_UNREAD;
    __u32 range = record->range;
    struct xref_watch_counts *count = bpf_map_lookup_elem(&counts, &range);
    if (count) __sync_fetch_and_add(&count->unread, 1);
  }
  finish(record, &flight->detail);
  return 0;
}

/* The thread's write in flight, if any, has run by now: its new bytes are
 * read and its records finished. */
static __always_inline void complete_in_flight(__u32 tid) {
  struct in_flight *flight = bpf_map_lookup_elem(&writes_in_flight, &tid);
  if (!flight) return;
  bpf_loop(IN_FLIGHT_PARTS, finish_part, &tid, 0);
  bpf_map_delete_elem(&writes_in_flight, &tid);
}

/* What one hit writes: [start, start + length), and where its new bytes
 * come from. */
struct write_walk {
  __u64 start;
  __u64 length;
  __u64 value;        /* REGISTER, IMMEDIATE: the bytes written; REP_STOS: the element */
  __u64 pc;
  __u64 return_address;
  __u64 timestamp_ns;
  __u32 site;
  __u32 tid;
  __u32 value_width;  /* 0: new bytes after the write (in flight) */
  __u32 after_only;   /* the store already ran: new bytes read now; `value` is the old one (value_width 0: unknown) */
  __u32 in_flight_full;
  __u32 overlaps;     /* overlap_step: the write reaches some range */
};

/* Does the write reach range r? (bpf_loop callback; 1 ends the walk) */
static long overlap_step(__u32 r, void *data) {
  struct write_walk *walk = data;
  if (r >= range_count || r >= XREF_WATCH_MAX_RANGES) return 1;
  const struct xref_watch_range *range = bpf_map_lookup_elem(&ranges, &r);
  if (!range || range->length == 0) return 0;
  if (walk->start < range->address + range->length && range->address < walk->start + walk->length) {
    walk->overlaps = 1;
    return 1;
  }
  return 0;
}

/* --callers: the return address of the store's function, where the site's
 * CFA rule says it is (as probe's --callers reads it); 0 when unread. */
static __always_inline __u64 site_caller(struct pt_regs *ctx, __u32 index) {
  const struct xref_watch_site_caller *rule = bpf_map_lookup_elem(&site_callers, &index);
  if (!rule) return 0;
  /* Both registers read as fixed fields: ctx may not be read at an offset
   * chosen at run time. */
  const __u64 sp = PT_REGS_SP(ctx);
  const __u64 bp = PT_REGS_FP(ctx);
  __u64 at = 0;
  if (rule->caller == 1) {
    at = sp;
  } else if (rule->caller == 2) {
    at = (rule->base == 1 ? bp : sp) + (__s64)rule->offset;
  } else {
    return 0;
  }
  __u64 address = 0;
  if (bpf_probe_read_user(&address, sizeof address, (const void *)at) != 0) return 0;
  return address;
}

/* One range against the hit's write (bpf_loop callback). */
static long range_step(__u32 r, void *data) {
  struct write_walk *walk = data;
  if (r >= range_count || r >= XREF_WATCH_MAX_RANGES) return 1;
  const struct xref_watch_range *range = bpf_map_lookup_elem(&ranges, &r);
  if (!range || range->length == 0) return 0;
  const __u64 range_end = range->address + range->length;
  const __u64 write_end = walk->start + walk->length;
  const __u64 lo = walk->start > range->address ? walk->start : range->address;
  const __u64 hi = write_end < range_end ? write_end : range_end;
  if (lo >= hi) return 0;
  struct xref_watch_counts *count = bpf_map_lookup_elem(&counts, &r);
  if (!count) return 0;
  __sync_fetch_and_add(&count->writes, 1);
  const __u32 zero = 0;
  struct in_flight *flight = bpf_map_lookup_elem(&scratch_flight, &zero);
  if (!flight) return 1;
  __u32 slot = walk->value_width || walk->after_only ? 0 : flight->count;
  if (slot >= IN_FLIGHT_PARTS) {
    walk->in_flight_full = 1;
    __sync_fetch_and_add(&count->in_flight_full, 1);
    return 0;
  }
  asm volatile("" : "+r"(slot));
  struct xref_watch_record *record = &flight->parts[slot & (IN_FLIGHT_PARTS - 1)];
  record->timestamp_ns = walk->timestamp_ns;
  record->sequence = 0;
  record->address = lo;
  record->pc = walk->pc;
  record->return_address = walk->return_address;
  record->site = walk->site;
  record->tid = walk->tid;
  record->range = r;
  record->generation = range->generation;
  record->length = (__u32)(hi - lo);
  record->flags = hi - lo > XREF_WATCH_VALUE_BYTES ? XREF_WATCH_R_CUT : 0;
  __u32 n = hi - lo > XREF_WATCH_VALUE_BYTES ? XREF_WATCH_VALUE_BYTES : (__u32)(hi - lo);
  n &= 127;
  if (n > XREF_WATCH_VALUE_BYTES) n = XREF_WATCH_VALUE_BYTES;
  if (n == 0) return 0;
  if (bpf_probe_read_user(record->old_bytes, n, (const void *)lo) != 0) {
    record->flags |= XREF_WATCH_R_OLD_UNREAD;
    __sync_fetch_and_add(&count->unread, 1);
  }
  if (walk->after_only) {
    /* The store ran: what is there now is new; the old bytes were read
     * over it above and come from the register that kept them, if any. */
    __builtin_memcpy(record->new_bytes, record->old_bytes, XREF_WATCH_VALUE_BYTES);
    if (record->flags & XREF_WATCH_R_OLD_UNREAD) record->flags |= XREF_WATCH_R_NEW_UNREAD;
    record->flags &= ~XREF_WATCH_R_OLD_UNREAD;
    record->flags |= XREF_WATCH_R_NEW_AFTER;
    if (walk->value_width == 0) {
      record->flags |= XREF_WATCH_R_OLD_UNREAD;
    } else {
      fill_repeated(record->old_bytes, walk->value, walk->value_width, lo - walk->start);
    }
    finish(record, &flight->detail);
    return 0;
  }
  if (walk->value_width == 0) {
    record->sequence = __sync_fetch_and_add(&sequence, 1) + 1;
    flight->count = slot + 1;
    return 0;
  }
  /* The new bytes from the operand: byte k of the write is byte
   * k % value_width of the value (one element, or rep stos's repeated). */
  fill_repeated(record->new_bytes, walk->value, walk->value_width, lo - walk->start);
  finish(record, &flight->detail);
  return 0;
}

static __always_inline int on_store(struct pt_regs *ctx, __u32 index) {
  const __u32 zero = 0;
  struct xref_watch_engine_counts *engine = bpf_map_lookup_elem(&engine_counts, &zero);
  if (engine) __sync_fetch_and_add(&engine->site_hits, 1);
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  /* Whatever this thread wrote before has run by now. */
  complete_in_flight(tid);
  const struct xref_watch_site *site = bpf_map_lookup_elem(&sites, &index);
  if (!site) return 0;
  if (site->kind == XREF_STORE_AFTER || site->kind == XREF_STORE_CONTRACT_RETURN) return 0;
  struct saved_regs *regs = bpf_map_lookup_elem(&scratch_regs, &zero);
  struct in_flight *flight = bpf_map_lookup_elem(&scratch_flight, &zero);
  if (!regs || !flight) return 0;
  if (bpf_probe_read_kernel(regs->words, sizeof(struct pt_regs), ctx) != 0) {
    if (engine) __sync_fetch_and_add(&engine->address_faults, 1);
    return 0;
  }
  struct write_walk walk = {};
  walk.pc = PT_REGS_IP(ctx);
  walk.site = index;
  walk.tid = tid;
  walk.timestamp_ns = bpf_ktime_get_ns();
  flight->count = 0;
  const __u64 rcx = PT_REGS_PARM4(ctx); /* rcx */
  switch (site->kind) {
    case XREF_STORE_PLAIN:
      walk.start = reg_word(regs, site->base_offset) + reg_word(regs, site->index_offset) * site->scale + site->disp;
      walk.length = site->width;
      if (site->width <= 8 && site->source == XREF_SOURCE_REGISTER) {
        walk.value = reg_word(regs, site->source_offset) >> site->source_shift;
        walk.value_width = site->width;
      } else if (site->width <= 8 && site->source == XREF_SOURCE_IMMEDIATE) {
        walk.value = site->immediate;
        walk.value_width = site->width;
      }
      break;
    case XREF_STORE_AFTER_ONLY:
      walk.start = reg_word(regs, site->base_offset) + reg_word(regs, site->index_offset) * site->scale + site->disp;
      walk.length = site->width;
      walk.after_only = 1;
      if (site->width <= 8 && site->contract == XREF_AFTER_ONLY_OLD_REGISTER) {
        walk.value = reg_word(regs, site->source_offset);
        walk.value_width = site->width;
      } else if (site->width <= 8 && site->contract == XREF_AFTER_ONLY_CMPXCHG) {
        /* rax holds the old value either way: the expected one when the
         * exchange succeeded (ZF set), else what was there, which a locked
         * cmpxchg writes back unchanged. */
        walk.value = PT_REGS_RC(ctx);
        walk.value_width = site->width;
      } else if (site->width <= 8 && (site->contract == XREF_AFTER_ONLY_ADD || site->contract == XREF_AFTER_ONLY_SUB ||
                                      site->contract == XREF_AFTER_ONLY_XOR)) {
        /* The old value from the new one and the source, which the store left as it was. */
        __u64 now = 0;
        __u32 width = site->width & 15;
        if (width == 0 || width > 8 || bpf_probe_read_user(&now, width, (const void *)walk.start) != 0) break;
        const __u64 source = site->source_offset != XREF_WATCH_NO_REG ? reg_word(regs, site->source_offset) : site->immediate;
        walk.value = site->contract == XREF_AFTER_ONLY_ADD ? now - source
                     : site->contract == XREF_AFTER_ONLY_SUB ? now + source
                                                              : now ^ source;
        walk.value_width = site->width;
      }
      break;
    /* A uprobe on a rep string store fires once per element (the kernel
     * single-steps it; the CPU traps after each iteration with rip still on
     * it): each hit writes one element at rdi, none when rcx is 0. */
    case XREF_STORE_REP_STOS:
      if (rcx == 0) return 0;
      walk.start = PT_REGS_PARM1(ctx);
      walk.length = site->width;
      walk.value = PT_REGS_RC(ctx); /* rax */
      walk.value_width = site->width <= 8 ? site->width : 0;
      break;
    case XREF_STORE_REP_MOVS: {
      if (rcx == 0) return 0;
      walk.start = PT_REGS_PARM1(ctx);
      walk.length = site->width;
      /* The element's new bytes are at rsi now. */
      __u32 width = site->width & 15;
      __u64 element = 0;
      if (width > 0 && width <= 8 && bpf_probe_read_user(&element, width, (const void *)PT_REGS_PARM2(ctx)) == 0) {
        walk.value = element;
        walk.value_width = width;
      }
      break;
    }
    case XREF_STORE_CONTRACT_ENTRY: {
      walk.start = PT_REGS_PARM1(ctx); /* rdi */
      if (site->contract == XREF_CONTRACT_STRCPY) {
        /* Up to the range's end at most: the string's length + 1, read now. */
        char buffer[64];
        long copied = bpf_probe_read_user_str(buffer, sizeof buffer, (const void *)PT_REGS_PARM2(ctx));
        walk.length = copied > 0 ? (__u64)copied : 0;
        if (copied == sizeof buffer) walk.length = 1ull << 20; /* longer: bounded by the ranges */
      } else {
        walk.length = PT_REGS_PARM3(ctx); /* rdx */
      }
      __u64 return_address = 0;
      bpf_probe_read_user(&return_address, sizeof return_address, (const void *)PT_REGS_SP(ctx));
      walk.return_address = return_address;
      break;
    }
    default:
      return 0;
  }
  if (walk.length == 0) return 0;
  if (walk.start + walk.length < walk.start) walk.length = ~0ull - walk.start; /* no wrap */
  if (with_detail) {
    /* Only a write that reaches a range pays for its fetches and stack. */
    if (bpf_loop(XREF_WATCH_MAX_RANGES, overlap_step, &walk, 0) < 0 || !walk.overlaps) return 0;
    read_detail(&flight->detail, regs);
    if (want_callers) {
      flight->detail.caller = site->kind == XREF_STORE_CONTRACT_ENTRY ? walk.return_address : site_caller(ctx, index);
      flight->detail.stack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
    }
  }
  bpf_loop(XREF_WATCH_MAX_RANGES, range_step, &walk, 0);
  if (walk.value_width == 0 && !walk.after_only && flight->count > 0) {
    if (bpf_map_update_elem(&writes_in_flight, &tid, flight, BPF_ANY) != 0) {
      for (__u32 p = 0; p < IN_FLIGHT_PARTS; p++) {
        if (p >= flight->count) break;
        __u32 range = flight->parts[p].range;
        struct xref_watch_counts *count = bpf_map_lookup_elem(&counts, &range);
        if (count) __sync_fetch_and_add(&count->in_flight_full, 1);
      }
    }
  }
  return 0;
}

SEC("uprobe")
int watch_store(struct pt_regs *ctx) {
  if ((__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid) return 0;
  if (!armed || detaching || stopped) return 0;
  return on_store(ctx, (__u32)bpf_get_attach_cookie(ctx));
}

char LICENSE[] SEC("license") = "GPL";
