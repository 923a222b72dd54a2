/* What bpf/trace.bpf.c and the helper's trace engine share: the probe table
 * (indexed by the attach cookie), the per-thread window state, and the event
 * record sent through the ring buffer. Plain C for both compilers. */
#ifndef XREF_TRACE_ABI_H
#define XREF_TRACE_ABI_H

#include "bpf_abi.h"

#define XREF_TRACE_MAX_PROBES 8192
#define XREF_TRACE_MAX_DEPTH 64      /* frames tracked per window */
#define XREF_TRACE_MAX_THREADS 8192 /* threads with an open window at once (preallocated: ~13 MB) */
/* Results kept of windows whose end record the ring buffer refused (LRU):
 * under heavy loss most windows are such, and one evicted shows only as a
 * count (summary.windows_without_records) when none of its events came. */
#define XREF_TRACE_MAX_WINDOW_RESULTS 65536

/* The attach cookie of a probe: its index in the probe table, plus the
 * START flag in bit 32 so an inactive thread is turned away after a single
 * map lookup (its own state), without reading the probe table. */
#define XREF_COOKIE_INDEX_MASK 0xffffffffull
#define XREF_COOKIE_START (1ull << 32)

/* xref_probe.kind: what kind of instruction the probe sits on. */
#define XREF_PROBE_ENTRY 1     /* a function's first instruction */
#define XREF_PROBE_RET 2       /* a ret instruction of the function */
#define XREF_PROBE_TAIL_EXIT 3 /* a jmp that leaves the function for another one */
#define XREF_PROBE_STOP 4      /* --stop VA: closes the window when hit */
#define XREF_PROBE_URETPROBE 5 /* --uretprobes: a return probe on the function entry */
#define XREF_PROBE_CALL_SITE 6   /* a call instruction in a traced caller: the callee's entry */
#define XREF_PROBE_RETURN_SITE 7 /* the instruction after that call: the callee's return */
#define XREF_PROBE_TAIL_SITE 8   /* a tail jmp in a traced caller: the target's entry, no return */
/* The entry of a function the unwinder's landing pads call (__cxa_begin_catch,
 * _Unwind_Resume): its stack pointer tells which traced frames an exception
 * has left, at the moment the handler runs. Emits nothing of its own. */
#define XREF_PROBE_UNWIND_CHECK 9
/* The instruction after a call to a traced function that can leave through
 * a jump no probe sees (XREF_PROBE_F_UNSEEN_EXIT): the caller runs again
 * there, so every frame below its stack pointer is over, [inferred]. The
 * word in such a frame's return-address slot is no proof it lives on: the
 * code that runs later may never overwrite it. Emits nothing of its own. */
#define XREF_PROBE_RESUME 10

/* One instruction can play several roles (a thunk's first instruction is
 * its entry and its tail jump; a root's first instruction can be a call).
 * Each role is one xref_probe; the roles of one address are chained through
 * `next` in the order they act, and only the first (the head) is attached.
 * Every role is run at each hit, so the chain is short by construction. */
#define XREF_PROBE_MAX_ROLES 4
#define XREF_PROBE_NO_NEXT 0xffffffffu
/* function_id / tail_target_id of a frame whose function is not known */
#define XREF_FUNCTION_NONE 0xffffffffu

/* xref_probe.flags */
#define XREF_PROBE_F_STOP_RETURN 1 /* entry or ret of the --stop-return function */
/* The address is also the return site of the call just before it (back-to-
 * back calls): first return from return_function_id, then act as `kind`. */
#define XREF_PROBE_F_RETURN_SITE 2
/* This role opens windows (the head's cookie carries XREF_COOKIE_START). */
#define XREF_PROBE_F_START 4
/* A ret or tail jmp of a function reached by a tail jump from a start
 * function: not traced itself, it tells when the start frame really ends. */
#define XREF_PROBE_F_CONTINUATION 8
/* A call site whose return site cannot be probed: its frame ends silently
 * when a later event is above it (as a tailed frame does). */
#define XREF_PROBE_F_UNSEEN_RETURN 16
/* The entry of a function that may leave by a jump no probe sees (through a
 * pointer, a conditional tail jump, a jump to no known function): its frame
 * can end without an event, so its end is inferred, not taken for unwinding. */
#define XREF_PROBE_F_UNSEEN_EXIT 32

/* xref_probe.frame_base: what a start probe's frame (the entry sp of the
 * function it sits in) is computed from. At a function's first instruction
 * that is sp itself (frame_offset 0); a start probe in the middle of a
 * function (a debugger breakpoint's location) takes its CFA rule from
 * .eh_frame: entry sp = CFA - 8 = base register + frame_offset. */
#define XREF_FRAME_BASE_SP 0
#define XREF_FRAME_BASE_BP 1

struct xref_probe {
  __u64 static_va;
  __u32 function_id; /* the traced function this probe belongs to */
  __u8 kind;         /* XREF_PROBE_* */
  __u8 flags;        /* XREF_PROBE_F_* */
  __u8 fetch_count;  /* 0..XREF_FETCH_MAX_ITEMS */
  __u8 frame_base;   /* start probes: XREF_FRAME_BASE_* */
  __u32 return_function_id; /* with XREF_PROBE_F_RETURN_SITE */
  __s32 frame_offset;       /* start probes: entry sp = base + frame_offset */
  __u32 next;               /* the next role at this address, or XREF_PROBE_NO_NEXT */
  __u32 tail_target_id;     /* TAIL_EXIT: the function jumped to, or XREF_FUNCTION_NONE */
  struct xref_fetch fetches[XREF_FETCH_MAX_ITEMS];
};

/* One traced frame: the stack pointer at the function's entry (the address
 * of its return address) identifies it; a frame is over when an event on
 * its thread sees a stack pointer above it, or when the word at its entry
 * sp is no longer its return address (the caller has made another call
 * there since: the frame ended where no probe saw it). */
struct xref_frame {
  __u64 entry_sp;
  __u32 function_id; /* the function running in it now (a tail jump changes it) */
  __u32 flags;       /* XREF_FRAME_F_* */
  __u64 return_address; /* the word at entry_sp when it was entered; 0 when not read */
};

/* xref_frame.flags */
/* Its return is seen at its function's ret probes (it was entered through
 * an entry probe), not at a return site of its caller. */
#define XREF_FRAME_F_BY_RET 1
/* Its function left it by a tail jump to code whose ret is not probed: the
 * frame lives on, and its end is seen by a continuation probe or inferred
 * from a later event above it. */
#define XREF_FRAME_F_TAILED 2
/* With TAILED: a tail-call site already showed the entry of the function
 * now running in it, so that function's own entry probe adds nothing. */
#define XREF_FRAME_F_NAMED 4
/* A tail jump changed the function running in it: a return site of the
 * original call ends it whatever the function now is. */
#define XREF_FRAME_F_TAIL_CHANGED 8
/* Its function may leave by a jump no probe sees (XREF_PROBE_F_UNSEEN_EXIT):
 * when it is found over, it returned unseen ([inferred]), not unwound. */
#define XREF_FRAME_F_UNSEEN_EXIT 16
/* The frames that can end without any event of their own: the only ones
 * whose return address is checked to tell that they are over. */
#define XREF_FRAME_F_ENDS_UNSEEN (XREF_FRAME_F_TAILED | XREF_FRAME_F_UNSEEN_EXIT)

/* Per thread (HASH tid -> state); only threads with an open window have one. */
struct xref_thread_window {
  __u64 window_id; /* 1-based; never 0 in the map */
  __u64 seq;       /* next sequence number, consumed by lost events too */
  __u64 start_sp;  /* entry sp of the start call */
  __u64 stop_sp;   /* entry sp of the --stop-return frame, 0 until entered */
  __u32 depth;     /* frames in use */
  __u32 lost;      /* events of this window the ring buffer refused */
  __u64 start_ns;
  struct xref_frame frames[XREF_TRACE_MAX_DEPTH];
};

/* xref_trace_event.type */
#define XREF_EVENT_ENTRY 1
#define XREF_EVENT_RETURN 2
#define XREF_EVENT_TAIL_EXIT 3
#define XREF_EVENT_UNWOUND 4    /* a frame left without passing a probed ret */
#define XREF_EVENT_STOP 5       /* the --stop probe was hit */
#define XREF_EVENT_WINDOW_END 6 /* last event of a window; status says how */

/* xref_trace_event.flags */
#define XREF_EVENT_F_WINDOW_BEGIN 1 /* the entry that opened the window */
#define XREF_EVENT_F_DEPTH_OVERFLOW 2
#define XREF_EVENT_F_TAIL 4 /* an entry through a tail jump: no return of its own follows */
/* WINDOW_END, and the RETURN of a frame whose entry was shown: its end was
 * not observed at a probe; a later event above it (or the thread's next
 * start, or a debugger's stop) showed it was over. */
#define XREF_EVENT_F_INFERRED 8

/* xref_trace_event.status of WINDOW_END */
#define XREF_WINDOW_COMPLETE 1  /* the start call returned, or --stop was hit */
#define XREF_WINDOW_TRUNCATED 2 /* a new start on the thread while still open */
#define XREF_WINDOW_UNWOUND 3   /* the start frame was left by unwinding */

struct xref_trace_event {
  __u64 window_id;
  __u64 seq;
  __u64 timestamp_ns;
  __u64 sp;
  __u64 return_address; /* ENTRY: the word at sp (where the call returns) */
  __u32 tid;
  __u32 probe_index;    /* the probe hit; for UNWOUND, none (0xffffffff) */
  __u32 function_id;    /* ENTRY/RETURN/TAIL_EXIT/UNWOUND: the frame's function */
  __u32 lost;           /* WINDOW_END: events of the window that were lost */
  __u16 depth;          /* the frame's depth, 0 = the start call */
  __u8 type;            /* XREF_EVENT_* */
  __u8 flags;           /* XREF_EVENT_F_* */
  __u8 status;          /* WINDOW_END: XREF_WINDOW_* */
  __u8 fetch_count;
  __u16 fetch_failed;   /* bit i: fetch i could not be read */
  __s16 fetch_error[XREF_FETCH_MAX_ITEMS]; /* -errno of the failed read, 0 if read */
  __u64 values[XREF_FETCH_MAX_ITEMS];
  /* :string fetches' bytes (bpf_abi.h), only in a record of an event that
   * read one: the others end before them. */
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
};

/* A record without fetched values is its header only: the fields up to
 * fetch_error (fetch_count 0); one without strings ends before them. */
#define XREF_TRACE_EVENT_HEADER_BYTES 64
#define XREF_TRACE_EVENT_STRINGS_OFFSET (XREF_TRACE_EVENT_HEADER_BYTES + 32 + 8 * XREF_FETCH_MAX_ITEMS)
#ifdef __cplusplus
static_assert(__builtin_offsetof(struct xref_trace_event, fetch_error) == XREF_TRACE_EVENT_HEADER_BYTES,
              "the header is what comes before fetch_error");
static_assert(__builtin_offsetof(struct xref_trace_event, strings) == XREF_TRACE_EVENT_STRINGS_OFFSET,
              "the strings come after the values");
#else
_Static_assert(__builtin_offsetof(struct xref_trace_event, fetch_error) == XREF_TRACE_EVENT_HEADER_BYTES,
               "the header is what comes before fetch_error");
_Static_assert(__builtin_offsetof(struct xref_trace_event, strings) == XREF_TRACE_EVENT_STRINGS_OFFSET,
               "the strings come after the values");
#endif

/* Per window, kept after the window's end (HASH window_id -> result), so
 * user space learns the loss count and the end status even when the
 * ring buffer refused the WINDOW_END record itself. */
struct xref_window_result {
  __u64 lost;
  __u32 tid;
  __u8 status; /* XREF_WINDOW_*, 0 while open */
  __u8 reserved[3];
};

/* Why the BPF side stopped emitting (trace_bpf.bss stop_reason). */
#define XREF_STOP_NONE 0
#define XREF_STOP_MAX_EVENTS 1
#define XREF_STOP_MAX_WINDOWS 2

#endif /* XREF_TRACE_ABI_H */
