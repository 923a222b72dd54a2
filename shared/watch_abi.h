/* What the watch BPF programs (bpf/watch_stores.bpf.c, bpf/watch_hw.bpf.c)
 * and the helper's watch engines share: the watched ranges, the store-site
 * table of the `stores` engine (indexed by the attach cookie), the per-CPU
 * counts and the write record sent through the ring buffer. Plain C for
 * both compilers; fixed-size layouts with explicit padding.
 *
 * A record is one write that overlapped one watched range: which thread,
 * which site (stores) or which trap pc (hw), the bytes of the range it
 * covered before and after. Counts never pass through the ring buffer, so a
 * record the buffer cannot take is counted, per range. */
#ifndef XREF_WATCH_ABI_H
#define XREF_WATCH_ABI_H

#include "bpf_abi.h"

#define XREF_WATCH_MAX_RANGES 64        /* watched ranges at once (ADDRs, --follow targets and their slots) */
#define XREF_WATCH_MAX_SITES 65536      /* store sites of the stores engine */
#define XREF_WATCH_VALUE_BYTES 64       /* bytes of old and new a record carries (a record says when cut) */
#define XREF_WATCH_MAX_THREADS 16384    /* threads with a write in flight at once (after-probes, contracts) */
#define XREF_WATCH_HW_SLOTS 4           /* x86 debug registers per thread */

#define XREF_WATCH_NO_REG 0xffff        /* xref_watch_site.base/index/source_offset: none */

/* xref_watch_site.kind: how the instruction writes. */
#define XREF_STORE_PLAIN 1      /* one write of `width` bytes at base + index*scale + disp */
#define XREF_STORE_REP_STOS 2   /* rep stos: the uprobe fires once per element: `width` bytes at rdi, rax's */
#define XREF_STORE_REP_MOVS 3   /* rep movs: once per element: `width` bytes at rdi, those at rsi */
#define XREF_STORE_AFTER 4      /* the instruction after a store whose new value is not in its operand:
                                 * reads the new bytes of the thread's write in flight (site `pair`) */
#define XREF_STORE_CONTRACT_ENTRY 5  /* a libc writer's entry (memcpy, memset, ...): dst/len from registers */
#define XREF_STORE_CONTRACT_RETURN 6 /* where that writer returns to: reads the new bytes */
#define XREF_STORE_AFTER_ONLY 7 /* the instruction after a store the kernel takes no uprobe on (lock prefix):
                                 * the address from the operand (its registers are unchanged there), the new
                                 * bytes read there, the old ones as `contract` says (XREF_AFTER_ONLY_*) */

/* xref_watch_site.contract (AFTER_ONLY): where the old value is after the store ran. */
#define XREF_AFTER_ONLY_OLD_UNKNOWN 0   /* lock add/or/and/...: not known (the record says so) */
#define XREF_AFTER_ONLY_OLD_REGISTER 1  /* xadd: the source register (source_offset) holds the old value */
#define XREF_AFTER_ONLY_CMPXCHG 2       /* cmpxchg: rax holds it (ZF set: the expected value; clear: what was
                                         * there, written back unchanged) */
#define XREF_AFTER_ONLY_ADD 3           /* lock add m, src: old = new - src (source_offset's register, else immediate) */
#define XREF_AFTER_ONLY_SUB 4           /* lock sub m, src: old = new + src */
#define XREF_AFTER_ONLY_XOR 5           /* lock xor m, src: old = new ^ src */

/* xref_watch_site.source: where the new value comes from (PLAIN). */
#define XREF_SOURCE_REGISTER 1  /* source_offset's register, shifted right by source_shift, width bytes */
#define XREF_SOURCE_IMMEDIATE 2 /* `immediate`, width bytes */
#define XREF_SOURCE_AFTER 3     /* not known before the store runs (add, xchg, cmpxchg, vector, ...):
                                 * read at the after-probe of the next instruction */

/* xref_watch_site.contract (CONTRACT_ENTRY): which registers give dst and len. */
#define XREF_CONTRACT_MEMCPY 1  /* memcpy, memmove, mempcpy, memset: rdi = dst, rdx = len */
#define XREF_CONTRACT_STRCPY 2  /* strcpy, stpcpy: rdi = dst, len = strlen(rsi) + 1 (bounded by the range) */

struct xref_watch_site {
  __u16 base_offset;   /* pt_regs offset of the base register; XREF_WATCH_NO_REG */
  __u16 index_offset;  /* pt_regs offset of the index register; XREF_WATCH_NO_REG */
  __u16 source_offset; /* XREF_SOURCE_REGISTER: pt_regs offset; else XREF_WATCH_NO_REG */
  __u8 scale;          /* 1, 2, 4, 8 */
  __u8 kind;           /* XREF_STORE_* */
  __u8 width;          /* bytes written (PLAIN: 1..32), element size (REP_*) */
  __u8 source;         /* XREF_SOURCE_* (PLAIN) */
  __u8 source_shift;   /* 8 for ah/bh/ch/dh, else 0 */
  __u8 contract;       /* XREF_CONTRACT_* (CONTRACT_ENTRY) */
  __u32 pair;          /* AFTER: the store site it completes; PLAIN with SOURCE_AFTER: its AFTER site */
  __s64 disp;          /* displacement; a rip-relative operand: the live absolute address, no base */
  __u64 immediate;     /* XREF_SOURCE_IMMEDIATE */
};

/* One watched range. The table is an array of XREF_WATCH_MAX_RANGES; a slot
 * with length 0 is unused. User space rewrites a slot (--follow) without
 * re-attaching: a write seen against the old bounds before the update is
 * recorded against them, and the record carries the range's generation. */
struct xref_watch_range {
  __u64 address;       /* live start */
  __u32 length;        /* bytes; 0: unused slot */
  __u32 generation;    /* bumped by user space at every move (--follow re-arm) */
  __u8 changed_only;   /* --changed: writes that leave the bytes as they were are counted, not recorded */
  __u8 stop;           /* --stop-when applies to this range */
  __u8 wake;           /* a --follow slot: its records wake the helper at once (it re-arms the
                        * dependents); other records wait for the helper's drain timer */
  __u8 reserved[5];
};

/* hw only, per range: a resync user space asks of the range's next trap
 * (its bytes changed with no trap: the kernel wrote them). The trap takes
 * `bytes` as its old value if no trap came since user space saw them (the
 * program's trap count is still `traps_seen`). User space fills bytes and
 * traps_seen, then sets pending (release); the trap swaps pending to 0. */
struct xref_watch_resync {
  __u64 bytes;
  __u64 traps_seen;
  __u64 pending;
};

/* Per range, per CPU (PERCPU_ARRAY indexed by range): summed in user space. */
struct xref_watch_counts {
  __u64 writes;          /* writes that overlapped the range */
  __u64 unchanged;       /* of those, writes that left its bytes as they were */
  __u64 passed;          /* writes the filter and --changed let through */
  __u64 records;         /* records submitted */
  __u64 records_lost;    /* records the ring buffer could not take */
  __u64 unread;          /* writes whose old or new bytes could not be read (-EFAULT, ...) */
  __u64 in_flight_full;  /* writes whose new value could not be kept for the after-probe (map full) */
  __u64 unfiltered;      /* --filter: writes whose filter could not be evaluated (a value it needs unread) */
  __u64 stacks_unread;   /* --callers: passing writes whose stack could not be walked or kept */
};

/* Per CPU, once (index 0): what the engine saw that belongs to no range. */
struct xref_watch_engine_counts {
  __u64 site_hits;       /* every probed store executed by the target's threads */
  __u64 address_faults;  /* effective addresses that could not be computed (a register not readable) */
};

/* xref_watch_record.flags */
#define XREF_WATCH_R_CUT 1         /* the write covered more of the range than XREF_WATCH_VALUE_BYTES */
#define XREF_WATCH_R_NEW_AFTER 2   /* `new` was read after the store ran (after-probe, contract return, hw) */
#define XREF_WATCH_R_NEW_UNREAD 4  /* `new` could not be read */
#define XREF_WATCH_R_OLD_UNREAD 8  /* `old` could not be read (hw: the previous value was not known) */
#define XREF_WATCH_R_STOPPED 16    /* --stop-when held: this write's thread was sent the stop signal */

/* One write to one range. For the stores engine `site` is the cookie of
 * the store (or contract entry) that wrote; for hw, XREF_WATCH_SITE_HW and
 * `pc` is the trap pc (the instruction after the writer). */
#define XREF_WATCH_SITE_HW 0xffffffffu

struct xref_watch_record {
  __u64 timestamp_ns;  /* CLOCK_MONOTONIC, when the store was about to run (hw: after it ran) */
  __u64 sequence;      /* per engine, 1-based, in the order the writes were seen */
  __u64 address;       /* the first byte written inside the range */
  __u64 pc;            /* hw: the trap pc; stores: the probed instruction's live address */
  __u64 return_address;/* a contract writer's caller ([rsp] at its entry); else 0 */
  __u32 site;          /* the store site's cookie; XREF_WATCH_SITE_HW */
  __u32 tid;
  __u32 range;         /* the range's slot */
  __u32 generation;    /* the range's generation when the write was seen */
  __u32 length;        /* bytes of the range the write covered (may exceed XREF_WATCH_VALUE_BYTES) */
  __u32 flags;         /* XREF_WATCH_R_* */
  __u8 old_bytes[XREF_WATCH_VALUE_BYTES];
  __u8 new_bytes[XREF_WATCH_VALUE_BYTES];
};

/* --fetch, --filter, --regs, --callers: what a record carries besides its
 * bytes, right after it in the ring buffer (a record of 192 + 1400 bytes;
 * without those options records are 192). The values are read where the
 * write is seen: stores, at the uprobe before the store runs; hw, after the
 * trap. Fetched values by fetch slot, then (--filter) `value` and `old` at
 * slots fetch_count and fetch_count + 1. */
#define XREF_WATCH_REG_WORDS 21      /* struct pt_regs */
#define XREF_WATCH_MAX_STACKS 4096   /* distinct user stacks (--callers), and (site, stack) pairs */
#define XREF_WATCH_STACK_DEPTH 32    /* frames per stack */

struct xref_watch_detail {
  __u64 values[XREF_FETCH_MAX_ITEMS];
  __u64 regs[XREF_WATCH_REG_WORDS];  /* has_regs: pt_regs order (r15 .. ss) */
  __u64 caller;                      /* --callers: the return address by the site's CFA rule; 0: not read */
  __s32 stack_id;                    /* --callers: the user stack's id in stack_traces; < 0: none */
  __u16 failed;                      /* bit i: value i was not read; errors[i] holds -errno */
  __u8 fetch_count;
  __u8 has_regs;
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
};

/* --callers: a passing write counted under (site, key): key = stack id |
 * (the CFA-rule return address << XREF_WATCH_STACK_ID_BITS); hw: site
 * XREF_WATCH_SITE_HW, told apart by the stack's frame 0 (the trap pc). */
#define XREF_WATCH_STACK_ID_BITS 16
struct xref_watch_stack_key {
  __u32 site;
  __u32 reserved;
  __u64 key;
};

/* Per store site (--callers): where its return address is, as probe's
 * (XREF_CALLER_* of probe_abi.h: 0 none, 1 [rsp], 2 base + offset). */
struct xref_watch_site_caller {
  __u8 caller;
  __u8 base;          /* 0: rsp, 1: rbp */
  __u16 reserved;
  __s32 offset;
};

#ifdef __cplusplus
static_assert(sizeof(struct xref_watch_detail) == 1400, "xref_watch_detail layout");
static_assert(sizeof(struct xref_watch_site) == 32, "xref_watch_site layout");
static_assert(sizeof(struct xref_watch_range) == 24, "xref_watch_range layout");
static_assert(sizeof(struct xref_watch_record) == 192, "xref_watch_record layout");
#else
_Static_assert(sizeof(struct xref_watch_detail) == 1400, "xref_watch_detail layout");
_Static_assert(sizeof(struct xref_watch_site) == 32, "xref_watch_site layout");
_Static_assert(sizeof(struct xref_watch_range) == 24, "xref_watch_range layout");
_Static_assert(sizeof(struct xref_watch_record) == 192, "xref_watch_record layout");
#endif

#endif
