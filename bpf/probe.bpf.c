// xref probe: one program attached to every probed address (one
// uprobe_multi link, or one perf uprobe per address), told apart by the
// attach cookie, the index of the address's site. Every hit is counted
// here, in per-CPU counts and hash maps keyed by site (callers, threads,
// groups), so a count never depends on the ring buffer; only detail records
// (the sampled passing hits) go through it, and one it cannot take is
// counted as lost.
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "fetch_filter.bpf.h"
#include "probe_abi.h"

const volatile __u32 target_tgid = 0;
const volatile __u64 max_records = 0; /* --max-events; 0: unbounded */
const volatile __u64 first = 0;       /* per site: the first N sampled hits are kept; 0: no limit */
const volatile __u64 every = 1;       /* per site: every Nth passing hit is sampled */
const volatile __u64 until_hits = 0;  /* the run stops after N passing hits in all; 0: no bound */
const volatile __u32 stop_signal = 0; /* --stop-when: sent to the thread of the stopping hit; 0: none */
const volatile __u64 stop_skip = 0;   /* --skip: that many passes of the stop filter go by first */

/* Set by user space once every probe is attached, and before it detaches:
 * counts cover exactly the time every probe was in. */
__u32 armed = 0;
__u32 detaching = 0;
/* Set here when --until-hits is reached; user space then detaches. */
__u32 stopped = 0;
__u64 passed_total = 0;
__u64 records_total = 0;
__u64 stop_matches = 0;
struct xref_probe_stop stop_info = {};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_PROBE_MAX_SITES);
  __type(key, __u32);
  __type(value, struct xref_probe_site);
} sites SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XREF_PROBE_MAX_SITES);
  __type(key, __u32);
  __type(value, struct xref_probe_counts);
} counts SEC(".maps");

/* Passing hits per site, shared by every CPU: a hit's number. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_PROBE_MAX_SITES);
  __type(key, __u32);
  __type(value, __u64);
} site_passed SEC(".maps");

/* (site, value) -> hits: callers, threads, groups, stacks. Not
 * preallocated: created fast, entries only as keys come. */
#define KEYED_COUNTS(name, entries)           \
  struct {                                    \
    __uint(type, BPF_MAP_TYPE_HASH);          \
    __uint(max_entries, entries);             \
    __type(key, struct xref_probe_key);       \
    __type(value, __u64);                     \
    __uint(map_flags, BPF_F_NO_PREALLOC);     \
  } name SEC(".maps")

KEYED_COUNTS(callers, XREF_PROBE_MAX_CALLERS);

KEYED_COUNTS(threads, XREF_PROBE_MAX_THREADS);

KEYED_COUNTS(groups, XREF_PROBE_MAX_GROUPS);

/* --group-by a :string fetch: (site, string) -> hits. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XREF_PROBE_MAX_STRING_GROUPS);
  __type(key, struct xref_probe_string_key);
  __type(value, __u64);
  __uint(map_flags, BPF_F_NO_PREALLOC);
} string_groups SEC(".maps");

/* Per CPU: the string key being built (too large for the stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xref_probe_string_key);
} scratch_string_key SEC(".maps");

/* --stacks: user stacks walked by the kernel through frame pointers,
 * deduplicated by their id; the value size (the depth) is set by user space
 * before load. */
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, XREF_PROBE_MAX_STACKS);
  __type(key, __u32);
  __uint(value_size, XREF_PROBE_MAX_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

KEYED_COUNTS(stacks, XREF_PROBE_MAX_STACKS);

FILTER_PROGRAM_MAP(filter);

/* --stop-when's filter, over the same fetched values. */
FILTER_PROGRAM_MAP(stop_filter);

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22); /* resized by user space before load */
} records SEC(".maps");

/* Adds one to `key`'s count; 0 when the map is full. */
static __always_inline int count_key(void *map, void *key) {
  __u64 *count = bpf_map_lookup_elem(map, key);
  if (count) {
    __sync_fetch_and_add(count, 1);
    return 1;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(map, key, &one, BPF_NOEXIST) == 0) return 1;
  count = bpf_map_lookup_elem(map, key); /* another CPU put it in first */
  if (count) {
    __sync_fetch_and_add(count, 1);
    return 1;
  }
  return 0;
}

/* floor(log2(value)) + 1, 0 for 0: a binary search, not a loop of 64
 * steps the verifier would walk at every load. */
static __always_inline __u32 log2_bucket(__u64 value) {
  if (value == 0) return 0;
  __u32 bits = 0;
  if (value >> 32) { value >>= 32; bits += 32; }
  if (value >> 16) { value >>= 16; bits += 16; }
  if (value >> 8) { value >>= 8; bits += 8; }
  if (value >> 4) { value >>= 4; bits += 4; }
  if (value >> 2) { value >>= 2; bits += 2; }
  if (value >> 1) bits += 1;
  const __u32 bucket = bits + 1;
  return bucket < XREF_PROBE_HIST_BUCKETS ? bucket : XREF_PROBE_HIST_BUCKETS - 1;
}

/* The hit's return address: [rsp] at a function's first instruction, or at
 * the CFA rule's offset from rsp or rbp inside it. 0 when unread. */
static __always_inline __u64 read_return_address(struct pt_regs *ctx, const struct xref_probe_site *site) {
  /* Both registers read as fixed fields: ctx may not be read at an offset
   * chosen at run time. */
  const __u64 sp = PT_REGS_SP(ctx);
  const __u64 bp = PT_REGS_FP(ctx);
  __u64 at = 0;
  if (site->caller == XREF_CALLER_AT_SP) {
    at = sp;
  } else if (site->caller == XREF_CALLER_CFA) {
    at = (site->caller_base == XREF_CALLER_BASE_BP ? bp : sp) + (__s64)site->caller_offset;
  } else {
    return 0;
  }
  __u64 address = 0;
  if (bpf_probe_read_user(&address, sizeof address, (const void *)at) != 0) return 0;
  return address;
}

static __always_inline void emit_record(struct pt_regs *ctx, __u32 index, const struct xref_probe_site *site,
                                        struct xref_probe_counts *count, __u64 hit, __u64 return_address,
                                        const struct fetched *values) {
  if (max_records && __sync_fetch_and_add(&records_total, 1) >= max_records) return;
  /* The string slots only when a string was read: 1.4 KiB, not 0.4. */
  const int with_strings = values && values->string_count;
  struct xref_probe_record *record = with_strings ? bpf_ringbuf_reserve(&records, sizeof(*record), 0)
                                                  : bpf_ringbuf_reserve(&records, XREF_PROBE_RECORD_STRINGS_OFFSET, 0);
  if (!record) {
    __sync_fetch_and_add(&count->records_lost, 1);
    return;
  }
  record->timestamp_ns = bpf_ktime_get_ns();
  record->hit = hit;
  record->return_address = return_address;
  record->site = index;
  record->tid = (__u32)bpf_get_current_pid_tgid();
  record->failed = values ? values->failed : 0;
  record->fetch_count = values ? values->count : 0;
  record->has_regs = 0;
  record->reserved = 0;
  for (int i = 0; i < XREF_FETCH_MAX_ITEMS; i++) {
    record->values[i] = values ? values->values[i] : 0;
    record->errors[i] = values ? values->errors[i] : 0;
  }
  if (site->flags & XREF_SITE_F_REGS) {
    record->has_regs = 1;
    if (bpf_probe_read_kernel(record->regs, sizeof(record->regs), ctx) != 0) record->has_regs = 0;
  } else {
    __builtin_memset(record->regs, 0, sizeof(record->regs));
  }
  /* On failure the helper zeroes what it was to fill. */
  if (with_strings) bpf_probe_read_kernel(record->strings, sizeof(record->strings), values->strings);
  bpf_ringbuf_submit(record, 0);
  __sync_fetch_and_add(&count->records, 1);
}

/* A hit that passed: --until-hits, the pass counted, its number at its
 * site (1-based); 0 when it is past --until-hits and does not count. */
static __always_inline __u64 count_pass(struct xref_probe_counts *count, __u64 *passed_at_site) {
  if (until_hits) {
    const __u64 total = __sync_fetch_and_add(&passed_total, 1) + 1;
    if (total > until_hits) return 0; /* past the bound, before the detach */
    if (total == until_hits) stopped = 1;
  }
  __sync_fetch_and_add(&count->passed, 1);
  return __sync_fetch_and_add(passed_at_site, 1) + 1;
}

/* A passing hit's thread and caller; returns the return address read (0:
 * none). */
static __always_inline __u64 count_thread_and_caller(struct pt_regs *ctx, __u32 index, __u32 tid,
                                                     const struct xref_probe_site *site,
                                                     struct xref_probe_counts *count) {
  struct xref_probe_key key = {.site = index, .reserved = 0, .value = tid};
  if (!count_key(&threads, &key)) __sync_fetch_and_add(&count->threads_full, 1);
  if (site->caller == XREF_CALLER_NONE) return 0;
  const __u64 return_address = read_return_address(ctx, site);
  if (return_address == 0) {
    __sync_fetch_and_add(&count->caller_unread, 1);
  } else {
    key.value = return_address;
    if (!count_key(&callers, &key)) __sync_fetch_and_add(&count->callers_full, 1);
  }
  return return_address;
}

/* --every/--first: is passing hit `hit` of a site sampled? Without
 * --every, no division: this runs at every hit. */
static __always_inline int sampled(__u64 hit) {
  if (every <= 1) return first == 0 || hit <= first;
  return hit % every == 0 && (first == 0 || hit / every <= first);
}

/* --filter over the hit's fetched values. A global function, verified once
 * (as stop_when), not inlined into on_hit. */
__noinline int filter_verdict(const struct fetched *values) {
  if (!values) return XREF_FILTER_UNREADABLE;
  __u32 zero = 0;
  return filter_result(bpf_map_lookup_elem(&filter, &zero), values);
}

/* --stop-when: at the stop filter's skip+1th pass, note the hit and stop
 * its thread with a signal the debugger catches (and does not pass on).
 * Only one hit ever gets there: the pass count is atomic. A global
 * function, verified once: inlined, the second filter loop doubles the
 * verifier's work at every load. */
__noinline int stop_when(__u32 index, __u64 hit, __u64 return_address, const struct fetched *values) {
  if (!values) return 0;
  __u32 zero = 0;
  const struct xref_filter_program *when = bpf_map_lookup_elem(&stop_filter, &zero);
  if (!when || filter_result(when, values) != XREF_FILTER_ACCEPTS) return 0;
  const __u64 match = __sync_fetch_and_add(&stop_matches, 1) + 1;
  if (match != stop_skip + 1) return 0;
  stop_info.timestamp_ns = bpf_ktime_get_ns();
  stop_info.hit = hit;
  stop_info.match = match;
  stop_info.return_address = return_address;
  stop_info.site = index;
  stop_info.tid = (__u32)bpf_get_current_pid_tgid();
  stop_info.failed = values->failed;
  stop_info.fetch_count = values->count;
  for (int i = 0; i < XREF_FETCH_MAX_ITEMS; i++) {
    stop_info.values[i] = values->values[i];
    stop_info.errors[i] = values->errors[i];
  }
  /* On failure the helper zeroes what it was to fill. */
  bpf_probe_read_kernel(stop_info.strings, sizeof(stop_info.strings), values->strings);
  stop_info.signal_result = bpf_send_signal_thread(stop_signal);
  __sync_fetch_and_add(&stop_info.fired, 1);
  return 1;
}

/* --group-by a :string fetch: counts the hit under its string. 1: counted;
 * 0: the map was full; -1: the string was unread. A global function. */
__noinline int count_string_group(__u32 index, __u8 slot, __u8 string_slot, const struct fetched *values) {
  if (!values || slot >= XREF_FETCH_MAX_ITEMS || ((values->failed >> (slot & 15)) & 1)) return -1;
  __u32 zero = 0;
  struct xref_probe_string_key *key = bpf_map_lookup_elem(&scratch_string_key, &zero);
  if (!key) return -1;
  key->site = index;
  key->reserved = 0;
  key->value = values->values[slot & 15];
  if (bpf_probe_read_kernel(key->bytes, sizeof(key->bytes),
                            values->strings[string_slot & (XREF_FETCH_MAX_STRINGS - 1)]) != 0) {
    return -1;
  }
  return count_key(&string_groups, key);
}

/* Every hit of site `index`. A global function: verified once. */
__noinline int on_hit(struct pt_regs *ctx, __u32 index) {
  if (!ctx) return 0;
  const struct xref_probe_site *site = bpf_map_lookup_elem(&sites, &index);
  struct xref_probe_counts *count = bpf_map_lookup_elem(&counts, &index);
  __u64 *passed_at_site = bpf_map_lookup_elem(&site_passed, &index);
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  struct saved_regs *regs = bpf_map_lookup_elem(&scratch_regs, &zero);
  if (!site || !count || !passed_at_site || !values || !regs) return 0;
  __sync_fetch_and_add(&count->hits, 1);
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();

  if (site->flags & XREF_SITE_F_RET) {
    /* A ret of the address's function: only its return value counts. */
    struct xref_probe_key key = {.site = index, .reserved = 0, .value = PT_REGS_RC(ctx)};
    if (!count_key(&groups, &key)) __sync_fetch_and_add(&count->groups_full, 1);
    return 0;
  }

  values->count = 0;
  values->failed = 0;
  read_fetches(ctx, site->fetches, site->fetch_count, regs, values);
  const int verdict = filter_verdict(values);
  if (verdict == XREF_FILTER_UNREADABLE) {
    __sync_fetch_and_add(&count->unfiltered, 1);
    return 0;
  }
  if (verdict != XREF_FILTER_ACCEPTS) return 0;
  const __u64 hit = count_pass(count, passed_at_site);
  if (hit == 0) return 0;
  const __u64 return_address = count_thread_and_caller(ctx, index, tid, site, count);
  struct xref_probe_key key = {.site = index, .reserved = 0, .value = 0};

  int grouped = 1;
  if (site->group == XREF_GROUP_TID) {
    key.value = tid;
  } else if (site->group == XREF_GROUP_CALLER) {
    key.value = return_address;
    grouped = return_address != 0;
  } else if (site->group == XREF_GROUP_FETCH) {
    __u8 slot = site->group_slot;
    grouped = slot < XREF_FETCH_MAX_ITEMS && !((values->failed >> (slot & 15)) & 1);
    key.value = grouped ? values->values[slot & 15] : 0;
  } else {
    grouped = 0;
  }
  /* Every passing hit a key is asked of is counted once: under its key, as
   * one the full map had no room for, or as one whose key was unread (ret
   * groups are keyed at the rets, not here). */
  const int keyed = site->group == XREF_GROUP_TID || site->group == XREF_GROUP_CALLER || site->group == XREF_GROUP_FETCH;
  if (site->group == XREF_GROUP_STRING) {
    const int counted = count_string_group(index, site->group_slot, site->string_slot, values);
    if (counted < 0) {
      __sync_fetch_and_add(&count->groups_unread, 1);
    } else if (counted == 0) {
      __sync_fetch_and_add(&count->groups_full, 1);
    }
  } else if (keyed && !grouped) {
    __sync_fetch_and_add(&count->groups_unread, 1);
  } else if (grouped && !count_key(&groups, &key)) {
    __sync_fetch_and_add(&count->groups_full, 1);
  }

  if (site->flags & XREF_SITE_F_STACKS) {
    /* No BPF_F_REUSE_STACKID: a stack whose hash meets another's is not
     * counted as that one, but as unread. */
    const long id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
    key.value = (__u64)id;
    if (site->caller == XREF_CALLER_AT_SP) key.value |= return_address << XREF_STACK_ID_BITS;
    if (id < 0 || !count_key(&stacks, &key)) __sync_fetch_and_add(&count->stacks_unread, 1);
  }

  __u8 hist_slot = site->hist_slot;
  if (hist_slot < XREF_FETCH_MAX_ITEMS && !((values->failed >> (hist_slot & 15)) & 1)) {
    __u32 bucket = log2_bucket(values->values[hist_slot & 15]);
    if (bucket < XREF_PROBE_HIST_BUCKETS) __sync_fetch_and_add(&count->hist[bucket], 1);
  }

  if (sampled(hit)) emit_record(ctx, index, site, count, hit, return_address, values);
  if (stop_signal) stop_when(index, hit, return_address, values);
  return 0;
}

/* Every hit of a probe that fetches, filters, groups and stops on nothing:
 * counts, threads, callers and samples only. User space loads this one
 * instead of probe_hit then: it costs less per hit and far less to verify. */
SEC("uprobe")
int probe_count(struct pt_regs *ctx) {
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  if ((__u32)(pid_tgid >> 32) != target_tgid) return 0;
  if (!armed || detaching || stopped) return 0;
  __u32 index = (__u32)bpf_get_attach_cookie(ctx);
  const struct xref_probe_site *site = bpf_map_lookup_elem(&sites, &index);
  struct xref_probe_counts *count = bpf_map_lookup_elem(&counts, &index);
  __u64 *passed_at_site = bpf_map_lookup_elem(&site_passed, &index);
  if (!site || !count || !passed_at_site) return 0;
  __sync_fetch_and_add(&count->hits, 1);
  const __u64 hit = count_pass(count, passed_at_site);
  if (hit == 0) return 0;
  const __u64 return_address = count_thread_and_caller(ctx, index, (__u32)pid_tgid, site, count);
  if (sampled(hit)) emit_record(ctx, index, site, count, hit, return_address, 0);
  return 0;
}

SEC("uprobe")
int probe_hit(struct pt_regs *ctx) {
  if ((__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid) return 0;
  if (!armed || detaching || stopped) return 0;
  return on_hit(ctx, (__u32)bpf_get_attach_cookie(ctx));
}

char LICENSE[] SEC("license") = "GPL";
