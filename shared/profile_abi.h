/* What the profile BPF program (bpf/profile.bpf.c) and the helper's
 * profile capture share: the unwind rows compiled from each module's CFI,
 * the target's executable mappings, the stacks and their counts, and the
 * reasons a stack ends. Plain C for both compilers; fixed-size layouts with
 * explicit padding.
 *
 * A sample is one overflow of the sampling event (cpu-clock: every period
 * of a thread's CPU time). The program walks the user stack there, hashes
 * its frames into a stack id, keeps the frames once in `stacks` and adds 1
 * to `counts[{stack id, tid}]`: a stack seen again costs no ring traffic.
 * The ring buffer carries only requests for a module's unwind table. */
#ifndef XREF_PROFILE_ABI_H
#define XREF_PROFILE_ABI_H

#include "bpf_abi.h"

#define XREF_PROFILE_MAX_FRAMES 128      /* frames of one stack, leaf first; deeper stacks end TRUNCATED */
#define XREF_PROFILE_MAX_MAPPINGS 512    /* executable mappings of the target at once */
#define XREF_PROFILE_MAX_STACKS 65536    /* distinct stacks (map `stacks`) */
#define XREF_PROFILE_MAX_COUNTS 262144   /* distinct (stack, thread) pairs (map `counts`) */
#define XREF_PROFILE_DEFAULT_ROWS (1u << 21) /* unwind rows of all modules (map `unwind_rows`), resized at load */
#define XREF_PROFILE_MAPPING_SEARCH 10   /* binary-search steps over the mappings: 2^10 > MAX_MAPPINGS */
#define XREF_PROFILE_ROW_SEARCH 24       /* binary-search steps over one module's rows: 2^24 rows at most */

/* xref_unwind_row.cfa_kind: where the canonical frame address (CFA: rsp
 * before the call that entered the function) is. */
#define XREF_CFA_RSP 1         /* cfa = rsp + cfa_offset */
#define XREF_CFA_RBP 2         /* cfa = rbp + cfa_offset */
#define XREF_CFA_PLT 3         /* PLT stubs' expression: cfa = rsp + cfa_offset + ((pc & 15) >= rbp_offset ? 8 : 0)
                                * (rbp_offset holds the threshold, 11 in .plt; rbp is unchanged there) */
#define XREF_CFA_SIGNAL 4      /* a signal frame (__restore_rt, the 'S' augmentation): the caller's rsp, rbp
                                * and pc are read from the ucontext at rsp: cfa = *(rsp + cfa_offset),
                                * rbp = *(rsp + rbp_offset), pc = *(rsp + ra_offset) */
#define XREF_CFA_END 5         /* the outermost frame: the return address is undefined (_start, a thread's
                                * clone3 start): the stack is complete */
#define XREF_CFA_NONE 6        /* no FDE covers this pc: a gap between FDEs */
#define XREF_CFA_UNSUPPORTED 7 /* a rule this unwinder cannot follow (another register, an expression) */

/* xref_unwind_row.rbp_kind: the caller's rbp. */
#define XREF_RBP_SAME 0        /* unchanged (same value, or no rule) */
#define XREF_RBP_AT_CFA 1      /* saved at cfa + rbp_offset */
#define XREF_RBP_UNSUPPORTED 2 /* another rule (a register, an expression): rbp is unknown past this frame */

/* One row of a module's unwind table: the rule from `pc` up to the next
 * row's pc. pc is relative to the module's table origin (its lowest
 * executable static VA, xref_profile_mapping.table_base's static side), so
 * a module's table is the same in every process that maps it. Rows of a
 * module are sorted by pc; a gap between FDEs is a NONE row. */
struct xref_unwind_row {
  __u32 pc;
  __u8 cfa_kind;   /* XREF_CFA_* */
  __u8 rbp_kind;   /* XREF_RBP_* */
  __s16 rbp_offset;
  __s32 cfa_offset;
  __s32 ra_offset; /* the return address is at cfa + ra_offset (-8 as every x86-64 CIE says); SIGNAL: rsp + */
};

/* xref_profile_mapping.table_state */
#define XREF_TABLE_ABSENT 0    /* not loaded, not asked for: the program asks (ring) and the stack ends PENDING */
#define XREF_TABLE_REQUESTED 1 /* asked for, not loaded yet: the stack ends PENDING */
#define XREF_TABLE_LOADED 2    /* rows [table_first, table_first + table_rows) */
#define XREF_TABLE_NO_CFI 3    /* the module has no usable CFI (or it failed to compile: the capture says why) */
#define XREF_TABLE_NO_ROOM 4   /* the rows did not fit in `unwind_rows` */

/* One executable mapping of the target, live addresses. The table is
 * sorted by start; pc - table_base is the row pc. */
struct xref_profile_mapping {
  __u64 start;
  __u64 end;
  __u64 table_base; /* live address of row pc 0 (load bias + the module's table origin) */
  __u32 table_first;
  __u32 table_rows;
  __u32 module;      /* the capture's module index */
  __u32 table_state; /* XREF_TABLE_* (updated with atomics by the program: ABSENT -> REQUESTED) */
};

/* The one value of the `mappings` array map; user space rewrites it when
 * the target's maps change (dlopen), bumping generation. */
struct xref_profile_mappings {
  __u32 count;
  __u32 generation;
  struct xref_profile_mapping mapping[XREF_PROFILE_MAX_MAPPINGS];
};

/* Why a stack ends (xref_profile_stack.end). COMPLETE and LEAF_ONLY are
 * whole; every other one is incomplete, and the capture counts samples by it. */
#define XREF_STACK_COMPLETE 1        /* reached the outermost frame (dwarf: CFA_END; fp: a saved rbp of 0) */
#define XREF_STACK_LEAF_ONLY 2       /* --callers none */
#define XREF_STACK_TRUNCATED 3       /* XREF_PROFILE_MAX_FRAMES reached */
#define XREF_STACK_NO_MAPPING 4      /* a pc in no known executable mapping (JIT code, a dlopen not seen yet) */
#define XREF_STACK_TABLE_PENDING 5   /* the module's table was not loaded yet */
#define XREF_STACK_NO_CFI 6          /* no CFI for the pc (NONE row, or a module without CFI) */
#define XREF_STACK_UNSUPPORTED_RULE 7
#define XREF_STACK_READ_FAILED 8     /* reading the stack failed (a bad pointer, or a page not present) */
#define XREF_STACK_BAD_FRAME 9       /* the stack pointer went down, or a return address of 0 before the end */
#define XREF_STACK_NO_USER_REGS 10   /* no user registers (a kernel thread) */
#define XREF_STACK_TABLE_NO_ROOM 11  /* the module's table did not fit */
#define XREF_STACK_END_REASONS 12    /* array bound of counts by reason */

/* xref_profile_stack.flags */
#define XREF_STACK_IN_KERNEL 1  /* sampled in kernel mode: pcs[0] is where the thread entered the kernel */

/* A stack: pcs[0] the sampled user pc, pcs[1..] return addresses, live. */
struct xref_profile_stack {
  __u64 pcs[XREF_PROFILE_MAX_FRAMES];
  __u16 depth; /* pcs used */
  __u8 end;    /* XREF_STACK_* */
  __u8 flags;  /* XREF_STACK_IN_KERNEL */
  __u32 pad;
};

struct xref_profile_count_key {
  __u64 stack_id; /* a 64-bit hash of depth, end, flags and pcs */
  __u32 tid;
  __u32 pad;
};

/* Per-CPU counters (array `stats`, indexed by XREF_PROFILE_STAT_*). */
#define XREF_PROFILE_STAT_SAMPLES 0         /* samples of the target this program ran for */
#define XREF_PROFILE_STAT_OTHER_PROCESS 1   /* samples of another process (an event inherited across fork) */
#define XREF_PROFILE_STAT_STACKS_FULL 2     /* samples whose new stack `stacks` could not take (not counted in counts) */
#define XREF_PROFILE_STAT_COUNTS_FULL 3     /* samples whose (stack, thread) `counts` could not take */
#define XREF_PROFILE_STAT_REQUESTS_LOST 4   /* table requests the ring could not take (retried by the next sample) */
#define XREF_PROFILE_STAT_FRAMES 5          /* frames walked, all samples */
#define XREF_PROFILE_STAT_KERNEL_SAMPLES 6  /* samples taken in kernel mode */
#define XREF_PROFILE_STAT_END_BASE 8        /* + XREF_STACK_*: samples by how their stack ended */
#define XREF_PROFILE_STATS (XREF_PROFILE_STAT_END_BASE + XREF_STACK_END_REASONS)

/* The ring buffer's one record: the program met a mapping whose table is
 * ABSENT (it set it REQUESTED first, so a module is asked for once). */
struct xref_profile_request {
  __u32 mapping;    /* index in xref_profile_mappings at `generation` */
  __u32 generation;
  __u32 module;
  __u32 pad;
};

#endif
