// xref profile: one program on every sampling event (one cpu-clock event
// per thread of the target, and the copies the kernel inherits into the
// threads they create). Each sample walks the user stack here - the leaf
// only, frame pointers, or the module's CFI rows (shared/profile_abi.h) -
// hashes the frames into a stack id, keeps the frames once in `stacks` and
// adds 1 to counts[{stack id, tid}]. No sample goes through a ring: only a
// module's first need of its unwind table does. The program returns 0, so
// the kernel writes no sample record either.
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile_abi.h"

struct task_struct;

#define CALLERS_NONE 0
#define CALLERS_FP 1
#define CALLERS_DWARF 2

const volatile __u32 target_tgid = 0;
const volatile __u32 callers = CALLERS_DWARF;

/* Every module's rows, one after another; a mapping says where its module's are. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_PROFILE_DEFAULT_ROWS); /* resized at load */
  __type(key, __u32);
  __type(value, struct xref_unwind_row);
} unwind_rows SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xref_profile_mappings);
} mappings SEC(".maps");

/* Both hash maps allocate an entry when it is first added (BPF_F_NO_PREALLOC,
 * the BPF memory allocator, safe in any context since Linux 6.1): preallocated,
 * `stacks` alone is 64 Ki x 1 KiB, zeroed and charged at every load, which
 * was most of a short capture's CPU. An entry that cannot be had is counted
 * as the map being full. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, XREF_PROFILE_MAX_STACKS);
  __type(key, __u64);
  __type(value, struct xref_profile_stack);
} stacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, XREF_PROFILE_MAX_COUNTS);
  __type(key, struct xref_profile_count_key);
  __type(value, __u64);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XREF_PROFILE_STATS);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);
} requests SEC(".maps");

/* The walk of one sample (per CPU: too large for the BPF stack). */
struct walk {
  struct xref_profile_stack stack;
  __u64 pc;       /* of the frame being unwound */
  __u64 sp;
  __u64 bp;
  __u64 hash;
  __u32 bp_known; /* 0 once a frame's rbp rule could not be followed */
  __u32 exact_pc; /* the pc was interrupted (leaf, signal frame): not a return address */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct walk);
} scratch SEC(".maps");

static __always_inline void count_stat(__u32 index, __u64 by) {
  __u64 *value = bpf_map_lookup_elem(&stats, &index);
  if (value) *value += by;
}

static __always_inline __u64 mix(__u64 hash, __u64 word) {
  hash ^= word;
  hash *= 0x100000001b3ull; /* FNV-1a's prime, over whole words */
  return hash ^ (hash >> 29);
}

/* The binary searches run under bpf_loop: the verifier checks one step
 * once, instead of every path through an unrolled search (2^steps). */
struct mapping_search {
  struct xref_profile_mappings *all;
  __u64 pc;
  __u32 low;
  __u32 high;
  __s32 found;
};

static long mapping_step(__u32 step, void *data) {
  struct mapping_search *search = data;
  (void)step;
  struct xref_profile_mappings *all = search->all;
  if (!all || search->low >= search->high) return 1;
  __u32 middle = (search->low + search->high) / 2;
  struct xref_profile_mapping *mapping = &all->mapping[middle & (XREF_PROFILE_MAX_MAPPINGS - 1)];
  if (search->pc < mapping->start) {
    search->high = middle;
  } else if (search->pc >= mapping->end) {
    search->low = middle + 1;
  } else {
    search->found = (__s32)middle;
    return 1;
  }
  return 0;
}

/* The mapping holding pc (binary search over the sorted table), or 0. */
static __always_inline struct xref_profile_mapping *mapping_of(struct xref_profile_mappings *all, __u64 pc,
                                                               __u32 *index) {
  struct mapping_search search = {.all = all, .pc = pc, .low = 0, .high = all->count, .found = -1};
  if (search.high > XREF_PROFILE_MAX_MAPPINGS) search.high = XREF_PROFILE_MAX_MAPPINGS;
  bpf_loop(XREF_PROFILE_MAPPING_SEARCH + 1, mapping_step, &search, 0);
  if (search.found < 0) return 0;
  *index = (__u32)search.found & (XREF_PROFILE_MAX_MAPPINGS - 1);
  return &all->mapping[*index];
}

struct row_search {
  __u64 relative;
  __u32 first;
  __u32 low;  /* rows [0, low) have pc <= relative */
  __u32 high; /* rows [high, count) have pc > relative */
  __u32 failed;
};

static long row_step(__u32 step, void *data) {
  struct row_search *search = data;
  (void)step;
  if (search->low >= search->high) return 1;
  __u32 middle = search->low + (search->high - search->low) / 2;
  __u32 key = search->first + middle;
  struct xref_unwind_row *row = bpf_map_lookup_elem(&unwind_rows, &key);
  if (!row) {
    search->failed = 1;
    return 1;
  }
  if (row->pc <= search->relative) {
    search->low = middle + 1;
  } else {
    search->high = middle;
  }
  return 0;
}

/* The last row of [first, first + count) whose pc <= relative, or 0. */
static __always_inline struct xref_unwind_row *row_of(__u32 first, __u32 count, __u64 relative) {
  if (count == 0 || relative > 0xffffffffull) return 0;
  struct row_search search = {.relative = relative, .first = first, .low = 0, .high = count, .failed = 0};
  bpf_loop(XREF_PROFILE_ROW_SEARCH + 1, row_step, &search, 0);
  if (search.failed || search.low == 0 || search.low < search.high) return 0;
  __u32 key = first + search.low - 1;
  return bpf_map_lookup_elem(&unwind_rows, &key);
}

static __always_inline int read_word(__u64 address, __u64 *word) {
  return bpf_probe_read_user(word, sizeof *word, (const void *)address);
}

/* The module's table state as one 64-bit word with the module index
 * before it (offsets 32 and 36: 8-aligned): BPF has 32-bit atomics only
 * with alu32, which the other programs are not built for. */
static __always_inline int swap_state(struct xref_profile_mapping *mapping, __u32 from, __u32 to) {
  __u64 *word = (__u64 *)&mapping->module;
  __u64 module = mapping->module;
  __u64 expected = module | ((__u64)from << 32);
  return __sync_val_compare_and_swap(word, expected, module | ((__u64)to << 32)) == expected;
}

/* The module's table is not loaded: ask for it once (ABSENT -> REQUESTED). */
static __always_inline void request_table(struct xref_profile_mappings *all, struct xref_profile_mapping *mapping,
                                          __u32 index) {
  if (!swap_state(mapping, XREF_TABLE_ABSENT, XREF_TABLE_REQUESTED)) return;
  struct xref_profile_request *request = bpf_ringbuf_reserve(&requests, sizeof *request, 0);
  if (!request) {
    /* Back to ABSENT: the next sample in this module asks again. */
    swap_state(mapping, XREF_TABLE_REQUESTED, XREF_TABLE_ABSENT);
    count_stat(XREF_PROFILE_STAT_REQUESTS_LOST, 1);
    return;
  }
  request->mapping = index;
  request->generation = all->generation;
  request->module = mapping->module;
  request->pad = 0;
  bpf_ringbuf_submit(request, 0);
}

/* One frame of a CFI walk: the frame at w->pc is recorded, then its
 * caller's pc, sp and rbp are computed from its row. Returns the end
 * reason, or 0 to go on. */
static __always_inline int dwarf_frame(struct walk *w) {
  __u32 zero = 0;
  struct xref_profile_mappings *all = bpf_map_lookup_elem(&mappings, &zero);
  if (!all) return XREF_STACK_NO_MAPPING;
  __u32 index = 0;
  /* A return address is looked up as the call before it: the call may be a
   * function's last instruction (noreturn callee). */
  __u64 lookup = w->exact_pc ? w->pc : w->pc - 1;
  struct xref_profile_mapping *mapping = mapping_of(all, lookup, &index);
  if (!mapping) return XREF_STACK_NO_MAPPING;
  __u32 state = mapping->table_state;
  if (state == XREF_TABLE_ABSENT) {
    request_table(all, mapping, index);
    return XREF_STACK_TABLE_PENDING;
  }
  if (state == XREF_TABLE_REQUESTED) return XREF_STACK_TABLE_PENDING;
  if (state == XREF_TABLE_NO_CFI) return XREF_STACK_NO_CFI;
  if (state == XREF_TABLE_NO_ROOM) return XREF_STACK_TABLE_NO_ROOM;
  if (lookup < mapping->table_base) return XREF_STACK_NO_CFI;
  struct xref_unwind_row *row = row_of(mapping->table_first, mapping->table_rows, lookup - mapping->table_base);
  if (!row) return XREF_STACK_NO_CFI;
  __u64 cfa = 0;
  __u64 ra = 0;
  __u64 bp = w->bp;
  switch (row->cfa_kind) {
    case XREF_CFA_END:
      return XREF_STACK_COMPLETE;
    case XREF_CFA_NONE:
      return XREF_STACK_NO_CFI;
    case XREF_CFA_RSP:
      cfa = w->sp + (__s64)row->cfa_offset;
      break;
    case XREF_CFA_RBP:
      if (!w->bp_known) return XREF_STACK_UNSUPPORTED_RULE;
      cfa = w->bp + (__s64)row->cfa_offset;
      break;
    case XREF_CFA_PLT:
      cfa = w->sp + (__s64)row->cfa_offset + ((lookup & 15) >= (__u64)(__s64)row->rbp_offset ? 8 : 0);
      break;
    case XREF_CFA_SIGNAL: {
      /* The interrupted context's registers, from the ucontext at rsp. */
      if (read_word(w->sp + (__s64)row->cfa_offset, &cfa) || read_word(w->sp + (__s64)row->rbp_offset, &bp) ||
          read_word(w->sp + (__s64)row->ra_offset, &ra)) {
        return XREF_STACK_READ_FAILED;
      }
      if (ra == 0) return XREF_STACK_BAD_FRAME;
      w->pc = ra;
      w->sp = cfa;
      w->bp = bp;
      w->bp_known = 1;
      w->exact_pc = 1;
      return 0;
    }
    default:
      return XREF_STACK_UNSUPPORTED_RULE;
  }
  if (cfa <= w->sp) return XREF_STACK_BAD_FRAME;
  if (read_word(cfa + (__s64)row->ra_offset, &ra)) return XREF_STACK_READ_FAILED;
  if (row->rbp_kind == XREF_RBP_AT_CFA) {
    if (read_word(cfa + (__s64)row->rbp_offset, &bp)) return XREF_STACK_READ_FAILED;
    w->bp_known = 1;
  } else if (row->rbp_kind == XREF_RBP_UNSUPPORTED) {
    w->bp_known = 0;
  }
  if (ra == 0) return XREF_STACK_BAD_FRAME;
  w->pc = ra;
  w->sp = cfa;
  w->bp = bp;
  w->exact_pc = 0;
  return 0;
}

/* One frame of a frame-pointer walk: the caller's return address at
 * rbp + 8, its rbp at rbp. */
static __always_inline int fp_frame(struct walk *w) {
  /* A saved rbp of 0 ends the chain (_start and clone clear rbp); an rbp of
   * 0 in the sampled registers themselves is code without frame pointers. */
  if (w->bp == 0) return w->stack.depth > 1 ? XREF_STACK_COMPLETE : XREF_STACK_BAD_FRAME;
  __u64 next_bp = 0;
  __u64 ra = 0;
  if (read_word(w->bp, &next_bp) || read_word(w->bp + 8, &ra)) return XREF_STACK_READ_FAILED;
  if (ra == 0) return next_bp == 0 ? XREF_STACK_COMPLETE : XREF_STACK_BAD_FRAME;
  if (next_bp != 0 && next_bp <= w->bp) return XREF_STACK_BAD_FRAME;
  w->pc = ra;
  w->sp = w->bp + 16;
  w->bp = next_bp;
  return 0;
}

/* bpf_loop's step: record the frame at w->pc, then find its caller. 1 ends the walk. */
static long walk_step(__u32 step, void *data) {
  (void)data;
  __u32 zero = 0;
  struct walk *w = bpf_map_lookup_elem(&scratch, &zero);
  if (!w) return 1;
  __u32 depth = w->stack.depth;
  if (depth >= XREF_PROFILE_MAX_FRAMES) {
    w->stack.end = XREF_STACK_TRUNCATED;
    return 1;
  }
  w->stack.pcs[depth & (XREF_PROFILE_MAX_FRAMES - 1)] = w->pc;
  w->stack.depth = depth + 1;
  w->hash = mix(w->hash, w->pc);
  int end = 0;
  if (callers == CALLERS_NONE) {
    end = XREF_STACK_LEAF_ONLY;
  } else if (callers == CALLERS_FP) {
    end = fp_frame(w);
  } else {
    end = dwarf_frame(w);
  }
  if (end != 0) {
    w->stack.end = end;
    return 1;
  }
  /* The next frame would be past the limit: the stack is cut here. */
  if (depth + 1 >= XREF_PROFILE_MAX_FRAMES) {
    w->stack.end = XREF_STACK_TRUNCATED;
    return 1;
  }
  return 0;
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx) {
  if ((bpf_get_current_pid_tgid() >> 32) != target_tgid) {
    count_stat(XREF_PROFILE_STAT_OTHER_PROCESS, 1);
    return 0;
  }
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u32 zero = 0;
  struct walk *w = bpf_map_lookup_elem(&scratch, &zero);
  if (!w) return 0;
  count_stat(XREF_PROFILE_STAT_SAMPLES, 1);
  w->stack.depth = 0;
  w->stack.end = 0;
  w->stack.flags = 0;
  w->stack.pad = 0;
  w->hash = 0xcbf29ce484222325ull;
  w->bp_known = 1;
  w->exact_pc = 1;
  if ((ctx->regs.cs & 3) != 0) {
    w->pc = ctx->regs.rip;
    w->sp = ctx->regs.rsp;
    w->bp = ctx->regs.rbp;
  } else {
    /* In the kernel: the user registers saved when the thread entered it. */
    struct pt_regs user;
    struct pt_regs *saved = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
    if (!saved || bpf_probe_read_kernel(&user, sizeof user, saved) != 0 || (user.cs & 3) == 0) {
      w->stack.end = XREF_STACK_NO_USER_REGS;
      w->pc = 0;
    } else {
      w->pc = user.rip;
      w->sp = user.rsp;
      w->bp = user.rbp;
    }
    w->stack.flags = XREF_STACK_IN_KERNEL;
    count_stat(XREF_PROFILE_STAT_KERNEL_SAMPLES, 1);
  }
  if (w->stack.end == 0) bpf_loop(XREF_PROFILE_MAX_FRAMES, walk_step, 0, 0);
  if (w->stack.end == 0) w->stack.end = XREF_STACK_TRUNCATED;
  __u32 end = w->stack.end;
  count_stat(XREF_PROFILE_STAT_FRAMES, w->stack.depth);
  if (end < XREF_STACK_END_REASONS) count_stat(XREF_PROFILE_STAT_END_BASE + end, 1);
  __u64 id = mix(w->hash, ((__u64)w->stack.depth << 16) | ((__u64)end << 8) | w->stack.flags);
  long stored = bpf_map_update_elem(&stacks, &id, &w->stack, BPF_NOEXIST);
  if (stored != 0 && stored != -17 /* EEXIST: seen before */) {
    count_stat(XREF_PROFILE_STAT_STACKS_FULL, 1);
    return 0;
  }
  struct xref_profile_count_key key = {.stack_id = id, .tid = tid, .pad = 0};
  __u64 *count = bpf_map_lookup_elem(&counts, &key);
  if (count) {
    __sync_fetch_and_add(count, 1);
    return 0;
  }
  __u64 one = 1;
  long added = bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
  if (added == -17) {
    /* Another CPU added it meanwhile. */
    count = bpf_map_lookup_elem(&counts, &key);
    if (count) __sync_fetch_and_add(count, 1);
  } else if (added != 0) {
    count_stat(XREF_PROFILE_STAT_COUNTS_FULL, 1);
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
