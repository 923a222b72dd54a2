/* What bpf/probe.bpf.c and the helper's probe engine share: the site table
 * (indexed by the attach cookie), the per-site counts, the keys of the
 * aggregation maps, and the detail record sent through the ring buffer.
 * Plain C for both compilers; layouts are fixed-size with explicit padding.
 *
 * Counts are kept in BPF and never pass through the ring buffer, so a count
 * is never lost: every hit of the target's threads adds to its site's
 * per-CPU counts. Only detail records (--first/--every samples, --regs) go
 * through the ring buffer, and a record it cannot take is counted. */
#ifndef XREF_PROBE_ABI_H
#define XREF_PROBE_ABI_H

#include "bpf_abi.h"

#define XREF_PROBE_MAX_SITES 4096
#define XREF_PROBE_MAX_CALLERS 65536  /* (site, return address) pairs */
#define XREF_PROBE_MAX_THREADS 65536  /* (site, tid) pairs */
#define XREF_PROBE_MAX_GROUPS 65536   /* (site, group key) pairs */
/* (site, string) pairs of --group-by a :string fetch: each key holds the
 * whole string slot (272 bytes), so fewer than the numbers' 65536 — about
 * 5 MiB of keys when full (entries are made as keys come). */
#define XREF_PROBE_MAX_STRING_GROUPS 16384
#define XREF_PROBE_MAX_STACKS 4096    /* distinct user stacks (--stacks), and (site, stack) pairs */
#define XREF_PROBE_MAX_STACK_DEPTH 127 /* frames per stack: the kernel's PERF_MAX_STACK_DEPTH */
/* --stacks: a stack's count key is (return address << 16) | stack id at a
 * function's entry, the stack id elsewhere: the frame-pointer walk misses
 * the caller there, whose return address is at [rsp]. */
#define XREF_STACK_ID_BITS 16
#define XREF_PROBE_HIST_BUCKETS 65    /* log2 buckets: 0, 1, 2-3, 4-7, ... 2^63.. */

/* xref_probe_site.caller: how a hit's return address (its caller) is read. */
#define XREF_CALLER_NONE 0
#define XREF_CALLER_AT_SP 1  /* a function's first instruction: [rsp], exact */
#define XREF_CALLER_CFA 2    /* inside a function: [base + caller_offset], from the .eh_frame CFA rule */

/* xref_probe_site.caller_base with XREF_CALLER_CFA */
#define XREF_CALLER_BASE_SP 0
#define XREF_CALLER_BASE_BP 1

/* xref_probe_site.group: what --group-by counts by. */
#define XREF_GROUP_NONE 0
#define XREF_GROUP_RET 1     /* %rax, at the ret sites of the address's function */
#define XREF_GROUP_CALLER 2  /* the return address */
#define XREF_GROUP_TID 3
#define XREF_GROUP_FETCH 4   /* a fetched value (group_slot) */
#define XREF_GROUP_STRING 5  /* a fetched string (group_slot; its string slot is string_slot) */

/* xref_probe_site.flags */
#define XREF_SITE_F_RET 1    /* a ret site: counts only into its address's ret groups */
#define XREF_SITE_F_REGS 2   /* detail records carry every general register */
#define XREF_SITE_F_STACKS 4 /* count passing hits by their user stack (frame pointers) */

#define XREF_NO_SLOT 0xff

/* --stop-when's signal: SIGRTMAX-1 with glibc (gdb calls it SIG63). Sent
 * from BPF it arrives with si_code SI_KERNEL and no sender, which is how the
 * debugger front ends tell it from the program's own: they stop at it and
 * keep it from the process, and pass the program's own on. Outside a
 * debugger it would end the process. */
#define XREF_PROBE_STOP_SIGNAL 63


struct xref_probe_site {
  __u32 address;       /* the user's ADDR this site counts for (its index) */
  __u8 fetch_count;    /* 0..XREF_FETCH_MAX_ITEMS */
  __u8 caller;         /* XREF_CALLER_* */
  __u8 caller_base;    /* XREF_CALLER_BASE_* */
  __u8 group;          /* XREF_GROUP_* */
  __u8 group_slot;     /* XREF_GROUP_FETCH: the fetch it groups by */
  __u8 hist_slot;      /* --hist NAME: the fetch; XREF_NO_SLOT: none */
  __u8 flags;          /* XREF_SITE_F_* */
  __u8 string_slot;    /* XREF_GROUP_STRING: the string slot of group_slot's fetch */
  __s32 caller_offset; /* XREF_CALLER_CFA: the return address is at base + caller_offset */
  __u32 reserved2;
  struct xref_fetch fetches[XREF_FETCH_MAX_ITEMS];
};

/* Per site, per CPU (PERCPU_ARRAY indexed by site): summed in user space.
 * Added to atomically: two tasks preempting each other on one CPU must not
 * lose an increment. */
struct xref_probe_counts {
  __u64 hits;            /* every hit of the target's threads */
  __u64 passed;          /* hits the filter let through (all of them without --filter) */
  __u64 unfiltered;      /* hits whose filter could not be evaluated: a fetch it needs failed */
  __u64 records;         /* detail records submitted */
  __u64 records_lost;    /* detail records the ring buffer could not take */
  __u64 callers_full;    /* hits whose caller the full caller map could not count */
  __u64 threads_full;    /* hits the full thread map could not count */
  __u64 groups_full;     /* hits the full group map could not count */
  __u64 caller_unread;   /* hits whose return address could not be read */
  __u64 stacks_unread;   /* --stacks: hits whose stack could not be walked or kept */
  __u64 groups_unread;   /* --group-by: passing hits whose key (a fetch, the caller) could not be read */
  __u64 hist[XREF_PROBE_HIST_BUCKETS];
};

struct xref_probe_key {
  __u32 site;
  __u32 reserved;
  __u64 value; /* a return address, a tid, a group key */
};

/* --group-by a :string fetch: the string's value (length | XREF_STRING_CUT)
 * and its slot's bytes, zero after the string. */
struct xref_probe_string_key {
  __u32 site;
  __u32 reserved;
  __u64 value;
  __u8 bytes[XREF_STRING_BUFFER_BYTES];
};

/* Detail records: header, then fetched values, then (XREF_SITE_F_REGS)
 * the registers, in struct pt_regs order. */
#define XREF_PROBE_REG_WORDS 21

struct xref_probe_record {
  __u64 timestamp_ns;   /* CLOCK_MONOTONIC */
  __u64 hit;            /* the passing hit's number at its site, 1-based */
  __u64 return_address; /* live; 0 when not read */
  __u32 site;
  __u32 tid;
  __u16 failed;         /* bit i: fetch i's read failed; errors[i] holds -errno */
  __u8 fetch_count;
  __u8 has_regs;
  __u32 reserved;
  __u64 values[XREF_FETCH_MAX_ITEMS];
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  __u64 regs[XREF_PROBE_REG_WORDS];
  /* Only in a record of a hit that read a :string fetch; others end here. */
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
};
#define XREF_PROBE_RECORD_STRINGS_OFFSET (40 + 8 * XREF_FETCH_MAX_ITEMS + 2 * XREF_FETCH_MAX_ITEMS + 8 * XREF_PROBE_REG_WORDS)

/* --stop-when: the hit that stopped its thread (the stop filter's
 * skip+1th pass), written once, in .bss, before the signal is sent; user
 * space reads it from the mapped .bss, so it can never be lost. */
struct xref_probe_stop {
  __u64 timestamp_ns;   /* CLOCK_MONOTONIC */
  __u64 hit;            /* its passing-hit number at its site, 1-based */
  __u64 match;          /* the stop filter's passes so far, this one included: skip + 1 */
  __u64 return_address; /* live; 0 when not read */
  __u32 site;
  __u32 tid;
  __u32 fired;          /* 1 once the rest is written (set last) */
  __s32 signal_result;  /* bpf_send_signal_thread's: 0, or -errno */
  __u16 failed;         /* bit i: fetch i's read failed; errors[i] holds -errno */
  __u8 fetch_count;
  __u8 reserved;
  __u32 reserved2;
  __u64 values[XREF_FETCH_MAX_ITEMS];
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
};

#ifdef __cplusplus
static_assert(__builtin_offsetof(struct xref_probe_record, strings) == XREF_PROBE_RECORD_STRINGS_OFFSET,
              "a record without strings ends before them");
#else
_Static_assert(__builtin_offsetof(struct xref_probe_record, strings) == XREF_PROBE_RECORD_STRINGS_OFFSET,
               "a record without strings ends before them");
#endif

#endif
