// xref trace: one program attached to every traced address (one
// uprobe_multi link, or one perf uprobe per address), told apart by the
// attach cookie. Windows live in a per-thread map: a start probe opens one
// on the thread that hits it (when the start filter passes), every other
// probe returns at once on a thread without a window, and inside a window
// each event gets the next sequence number, so user space orders events by
// (window, seq), never by clock. Frames are tracked by the stack pointer at
// function entry, which is how frames left by unwinding (exceptions,
// panics, longjmp) are noticed: the next event on the thread sees a stack
// pointer above them.
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "fetch_filter.bpf.h"
#include "trace_abi.h"

#define EFAULT_CODE 14

const volatile __u32 target_tgid = 0;
const volatile __u64 max_events = 0;  /* 0: unbounded */
const volatile __u64 max_windows = 0; /* 0: unbounded */
const volatile __u32 ringbuf_wakeup = 0; /* 0: user space drains on a timer */

/* Written by BPF, read by user space through the skeleton's .bss. */
__u64 events_emitted = 0;
__u64 windows_opened = 0;
__u64 windows_closed = 0;
__u64 starts_filtered = 0;
__u64 starts_refused = 0; /* start calls that found the thread table full */
__u64 lost_events = 0;
__u32 stopped = 0;
/* Set by user space once every probe is attached: a link puts its probes
 * in one by one, and a window opened before the last one is in could miss
 * events without knowing it. */
__u32 armed = 0;
/* Set by user space before it detaches: from then on every hit returns at
 * once. Detaching removes probes one by one while the program still runs;
 * without this, windows would go on (or open) with half of their probes
 * gone and take in events of later requests. */
__u32 detaching = 0;
__u32 stop_reason = XREF_STOP_NONE;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, XREF_TRACE_MAX_PROBES);
  __type(key, __u32);
  __type(value, struct xref_probe);
} probes SEC(".maps");

FILTER_PROGRAM_MAP(start_filter);

/* Preallocated: an entry allocated when a window opens can fail in a
 * probe's context (the allocator refills its caches later), which would
 * lose whole windows. A full table is counted (starts_refused). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XREF_TRACE_MAX_THREADS);
  __type(key, __u32);
  __type(value, struct xref_thread_window);
} threads SEC(".maps");

/* The windows that ended while the ring buffer could not take their end
 * record: how they ended and what they lost. An open window's state is in
 * `threads`, so this holds nothing else; LRU, so a long run with much loss
 * never fills it: user space counts an evicted window as ended with its
 * status unknown. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, XREF_TRACE_MAX_WINDOW_RESULTS);
  __type(key, __u64);
  __type(value, struct xref_window_result);
} window_results SEC(".maps");

/* Reservation failures per CPU: user space sums them. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost_per_cpu SEC(".maps");

/* Never written: the all-zero value a new thread state starts from (the
 * state is too big for the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xref_thread_window);
} zero_window SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22); /* resized by user space before load */
} events SEC(".maps");

/* Runs probe `index`'s fetches into the per-CPU scratch_fetched (what every
 * caller's `values` points to). A global function: its loops are verified
 * once, not at each of the places that fetch. */
__noinline int fetch_values(struct pt_regs *ctx, __u32 index) {
  __u32 zero = 0;
  struct fetched *out = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!out) return 0;
  out->count = 0;
  out->failed = 0;
  out->string_count = 0;
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!probe || probe->fetch_count == 0) return 0;
  struct saved_regs *regs = bpf_map_lookup_elem(&scratch_regs, &zero);
  if (!regs) return 0;
  read_fetches(ctx, probe->fetches, probe->fetch_count, regs, out);
  return 0;
}

static __always_inline void run_fetches(struct pt_regs *ctx, __u32 index) { fetch_values(ctx, index); }

/* The start filter over the start probe's fetches. */
static __always_inline int filter_accepts(const struct fetched *values) {
  __u32 zero = 0;
  const struct xref_filter_program *program = bpf_map_lookup_elem(&start_filter, &zero);
  return filter_result(program, values) == XREF_FILTER_ACCEPTS;
}

static __always_inline void count_loss(struct xref_thread_window *window) {
  __u32 zero = 0;
  __u64 *per_cpu = bpf_map_lookup_elem(&lost_per_cpu, &zero);
  if (per_cpu) *per_cpu += 1;
  __sync_fetch_and_add(&lost_events, 1);
  window->lost += 1;
}

static __always_inline void stop_emitting(__u32 reason) {
  if (!stopped) {
    stop_reason = reason;
    stopped = 1;
  }
}

/* How much of a record an event with `values` needs: its header only
 * (RECORD_HEADER), the fetched values (RECORD_VALUES), or those and the
 * string slots (RECORD_STRINGS), only when a :string fetch was read. */
#define RECORD_HEADER 0
#define RECORD_VALUES 1
#define RECORD_STRINGS 2
static __always_inline int record_part(const struct fetched *values) {
  if (values->count == 0) return RECORD_HEADER;
  return values->string_count ? RECORD_STRINGS : RECORD_VALUES;
}

/* Reserves the next event of the window: the record up to what it carries
 * (`full`, a RECORD_* part): its header only (XREF_TRACE_EVENT_HEADER_BYTES,
 * a third of the values' part) for most, so the ring buffer holds three
 * times the events. Every
 * attempt consumes a sequence number, so a lost event leaves a gap user
 * space can see. */
static __always_inline struct xref_trace_event *reserve_event(struct xref_thread_window *window, __u32 tid,
                                                              __u8 type, int full) {
  __u64 seq = window->seq;
  window->seq = seq + 1;
  /* --max-events counts the events a user sees, not the end records. */
  if (max_events && type != XREF_EVENT_WINDOW_END && __sync_fetch_and_add(&events_emitted, 1) >= max_events) {
    stop_emitting(XREF_STOP_MAX_EVENTS);
    return 0;
  }
  struct xref_trace_event *event;
  if (full == RECORD_STRINGS) {
    event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
  } else if (full) {
    event = bpf_ringbuf_reserve(&events, XREF_TRACE_EVENT_STRINGS_OFFSET, 0);
  } else {
    event = bpf_ringbuf_reserve(&events, XREF_TRACE_EVENT_HEADER_BYTES, 0);
  }
  if (!event) {
    count_loss(window);
    return 0;
  }
  /* Every header field is written; the fetch arrays only when there are
   * values (copy_fetched), and user space reads only fetch_count of them. */
  event->window_id = window->window_id;
  event->seq = seq;
  event->timestamp_ns = bpf_ktime_get_ns();
  event->sp = 0;
  event->return_address = 0;
  event->tid = tid;
  event->probe_index = 0xffffffff;
  event->function_id = 0;
  event->lost = 0;
  event->depth = 0;
  event->type = type;
  event->flags = 0;
  event->status = 0;
  event->fetch_count = 0;
  event->fetch_failed = 0;
  return event;
}

static __always_inline void submit(struct xref_trace_event *event) {
  bpf_ringbuf_submit(event, ringbuf_wakeup ? 0 : BPF_RB_NO_WAKEUP);
}

/* Fixed-size copies (one branch, no loop to walk) into a full record;
 * user space reads only the first fetch_count of them. */
static __always_inline void copy_fetched(struct xref_trace_event *event, const struct fetched *values) {
  event->fetch_count = values->count;
  event->fetch_failed = values->failed;
  __builtin_memcpy(event->values, values->values, sizeof(event->values));
  __builtin_memcpy(event->fetch_error, values->errors, sizeof(event->fetch_error));
}

/* The string slots too, into a record reserved whole (RECORD_STRINGS). */
static __always_inline void copy_strings(struct xref_trace_event *event, const struct fetched *values) {
  /* On failure the helper zeroes what it was to fill. */
  bpf_probe_read_kernel(event->strings, sizeof(event->strings), values->strings);
}

/* One event on the thread's window: of probe `index` (0xffffffff for a
 * frame's end no probe saw), with the values fetched into scratch_fetched
 * when `with_values`. `what` packs type | flags << 8 | depth << 16, `ids`
 * index << 32 | function_id (a BPF call takes five arguments). A global
 * function, like the other emitters below: the verifier checks each once,
 * not at every place an event is made, which kept the program's load at
 * about a third of a second. */
__noinline int emit_record(__u32 tid, __u64 what, __u64 ids, __u64 sp, __u32 with_values) {
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  __u32 zero = 0;
  const struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!window || !values) return 0;
  int full = with_values ? record_part(values) : RECORD_HEADER;
  struct xref_trace_event *event = reserve_event(window, tid, (__u8)what, full);
  if (!event) return 0;
  event->depth = (__u16)(what >> 16);
  event->probe_index = (__u32)(ids >> 32);
  event->function_id = (__u32)ids;
  event->sp = sp;
  event->flags = (__u8)(what >> 8);
  if (full) copy_fetched(event, values);
  if (full == RECORD_STRINGS) copy_strings(event, values);
  submit(event);
  return 0;
}

static __always_inline void emit_event(struct xref_thread_window *window, __u32 tid, __u8 type, __u32 depth,
                                       __u32 index, __u32 function_id, __u64 sp, __u8 flags,
                                       const struct fetched *values) {
  (void)window;
  emit_record(tid, type | ((__u64)flags << 8) | ((__u64)(depth & 0xffff) << 16), ((__u64)index << 32) | function_id,
              sp, values != 0);
}

/* Ends the thread's window: its WINDOW_END record, or, when the ring
 * buffer refuses that, its result in window_results. */
__noinline int end_window(__u32 tid, __u32 status, __u32 function_id, __u32 flags) {
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  if (!window) return 0;
  __u64 window_id = window->window_id;
  struct xref_trace_event *event = reserve_event(window, tid, XREF_EVENT_WINDOW_END, 0);
  if (event) {
    event->status = (__u8)status;
    event->lost = window->lost;
    event->function_id = function_id;
    event->flags = (__u8)flags;
    submit(event);
  } else {
    /* The end record itself was lost (counted in window->lost). */
    struct xref_window_result result = {.lost = window->lost, .tid = tid, .status = (__u8)status};
    bpf_map_update_elem(&window_results, &window_id, &result, BPF_ANY);
  }
  bpf_map_delete_elem(&threads, &tid);
  __u64 closed = __sync_fetch_and_add(&windows_closed, 1) + 1;
  if (max_windows && closed >= max_windows) stop_emitting(XREF_STOP_MAX_WINDOWS);
  return 0;
}

static __always_inline void close_window(struct xref_thread_window *window, __u32 tid, __u8 status,
                                         __u32 function_id, __u8 flags) {
  (void)window;
  end_window(tid, status, function_id, flags);
}

/* How frames are popped (pop_frames' `mode`). */
#define POP_INCLUSIVE 1 /* also the frame at exactly `sp` */
#define POP_UNWINDING 2 /* an exception handler runs: what ends is unwound */

/* bpf_loop's context for popping frames. */
struct pop_walk {
  struct xref_thread_window *window;
  __u64 sp;
  __u32 tid;
  int mode;
  int closed;
};

/* Pops the innermost frame (one whose entry sp is below walk->sp, or at it
 * with POP_INCLUSIVE), saying how it ended. A frame a tail jump handed to
 * unprobed code, or one whose function may leave by a jump no probe sees,
 * returned where no probe saw it: if its function's entry was shown, so is
 * its return, [inferred]; the start frame's window is complete, its end
 * inferred. Any other frame was left by unwinding (and so is every frame
 * an exception handler's probe finds over). 1 ends the walk. */
static long pop_step(__u32 step, void *data) {
  struct pop_walk *walk = data;
  struct xref_thread_window *window = walk->window;
  __u32 tid = walk->tid;
  (void)step;
  if (!window) return 1;
  __u32 depth = window->depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return 1;
  struct xref_frame *top = &window->frames[(depth - 1) & (XREF_TRACE_MAX_DEPTH - 1)];
  if ((walk->mode & POP_INCLUSIVE) ? top->entry_sp > walk->sp : top->entry_sp >= walk->sp) return 1;
  window->depth = depth - 1;
  __u32 flags = top->flags;
  int tailed = (flags & XREF_FRAME_F_TAILED) != 0;
  if (tailed || ((flags & XREF_FRAME_F_UNSEEN_EXIT) && !(walk->mode & POP_UNWINDING))) {
    /* Its function's entry was shown: so is its end, as inferred. */
    if (!tailed || (flags & XREF_FRAME_F_NAMED)) {
      emit_event(window, tid, XREF_EVENT_RETURN, depth - 1, 0xffffffff, top->function_id, top->entry_sp,
                 XREF_EVENT_F_INFERRED, 0);
    }
    if (depth - 1 == 0) {
      close_window(window, tid, XREF_WINDOW_COMPLETE, tailed ? top->function_id : XREF_FUNCTION_NONE,
                   XREF_EVENT_F_INFERRED);
      walk->closed = 1;
      return 1;
    }
    return 0;
  }
  emit_event(window, tid, XREF_EVENT_UNWOUND, depth - 1, 0xffffffff, top->function_id, top->entry_sp, 0, 0);
  if (depth - 1 == 0) {
    close_window(window, tid, XREF_WINDOW_UNWOUND, XREF_FUNCTION_NONE, 0);
    walk->closed = 1;
    return 1;
  }
  return 0;
}

/* Pops frames whose entry sp is below `sp` (strictly below for a ret, which
 * runs with sp at its own frame's entry sp; at or below for an entry, since
 * a live frame cannot share a new call's entry sp: POP_INCLUSIVE). Returns
 * 1 when the start frame itself was popped and the window closed. A global
 * function whose steps run under bpf_loop: the verifier checks one step,
 * once. */
__noinline int pop_frames(__u32 tid, __u64 sp, int mode) {
  struct pop_walk walk = {.window = 0, .sp = sp, .tid = tid, .mode = mode, .closed = 0};
  walk.window = bpf_map_lookup_elem(&threads, &tid);
  if (!walk.window) return 0;
  bpf_loop(XREF_TRACE_MAX_DEPTH, pop_step, &walk, 0);
  return walk.closed;
}

/* Pops the innermost frame if it can end unseen and is over: the word at
 * its entry sp (at or above `lowest`, the lowest address that holds live
 * stack at this hit) is no longer its return address, because its caller
 * has made another call from there since. 1 ends the walk. */
static long stale_step(__u32 step, void *data) {
  struct pop_walk *walk = data;
  struct xref_thread_window *window = walk->window;
  if (!window) return 1;
  __u32 depth = window->depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return 1;
  struct xref_frame *top = &window->frames[(depth - 1) & (XREF_TRACE_MAX_DEPTH - 1)];
  if (!(top->flags & XREF_FRAME_F_ENDS_UNSEEN) || top->return_address == 0 || top->entry_sp < walk->sp) return 1;
  __u64 word = 0;
  if (bpf_probe_read_user(&word, sizeof(word), (const void *)top->entry_sp) != 0 || word == top->return_address) {
    return 1;
  }
  struct pop_walk one = {.window = window, .sp = top->entry_sp, .tid = walk->tid, .mode = POP_INCLUSIVE, .closed = 0};
  pop_step(step, &one);
  walk->closed = one.closed;
  return one.closed;
}

/* The innermost frames that ended unseen (stale_step), popped. Costs one
 * load on a hit whose innermost frame cannot end unseen. Returns 1 when
 * the window closed. */
__noinline int pop_stale(__u32 tid, __u64 lowest) {
  struct pop_walk walk = {.window = 0, .sp = lowest, .tid = tid, .mode = 0, .closed = 0};
  walk.window = bpf_map_lookup_elem(&threads, &tid);
  if (!walk.window) return 0;
  __u32 depth = walk.window->depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return 0;
  if (!(walk.window->frames[(depth - 1) & (XREF_TRACE_MAX_DEPTH - 1)].flags & XREF_FRAME_F_ENDS_UNSEEN)) return 0;
  bpf_loop(XREF_TRACE_MAX_DEPTH, stale_step, &walk, 0);
  return walk.closed;
}

static __always_inline struct xref_frame *top_frame(struct xref_thread_window *window) {
  __u32 depth = window->depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return 0;
  return &window->frames[(depth - 1) & (XREF_TRACE_MAX_DEPTH - 1)];
}

/* Pushes a frame for the function probe `index` enters and emits its
 * entry, with the values in scratch_fetched. `sp` is the callee's entry
 * sp: the probe's sp at a function's first instruction, or sp - 8 at a
 * call instruction (the call is about to push the return address). The
 * frame keeps the word at sp where it is already the return address (at
 * an entry, and at a tail jump of a function entered unseen). */
__noinline int push_entry(__u32 tid, __u32 index, __u32 flags, __u64 sp, __u32 frame_flags) {
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  __u32 zero = 0;
  const struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!window || !probe || !values) return 0;
  __u32 depth = window->depth;
  __u8 kind = probe->kind;
  __u64 return_address = 0;
  if ((kind == XREF_PROBE_ENTRY || kind == XREF_PROBE_TAIL_SITE) &&
      bpf_probe_read_user(&return_address, sizeof(return_address), (const void *)sp) != 0) {
    return_address = 0;
  }
  if (probe->flags & XREF_PROBE_F_UNSEEN_EXIT) frame_flags |= XREF_FRAME_F_UNSEEN_EXIT;
  int full = record_part(values);
  struct xref_trace_event *event = reserve_event(window, tid, XREF_EVENT_ENTRY, full);
  if (depth < XREF_TRACE_MAX_DEPTH) {
    window->frames[depth & (XREF_TRACE_MAX_DEPTH - 1)].entry_sp = sp;
    window->frames[depth & (XREF_TRACE_MAX_DEPTH - 1)].function_id = probe->function_id;
    window->frames[depth & (XREF_TRACE_MAX_DEPTH - 1)].flags = frame_flags;
    window->frames[depth & (XREF_TRACE_MAX_DEPTH - 1)].return_address = return_address;
    window->depth = depth + 1;
    if (probe->flags & XREF_PROBE_F_STOP_RETURN && window->stop_sp == 0) window->stop_sp = sp;
  } else {
    flags |= XREF_EVENT_F_DEPTH_OVERFLOW;
  }
  if (!event) return 0;
  event->depth = (__u16)depth;
  event->probe_index = index;
  event->function_id = probe->function_id;
  event->sp = sp;
  event->flags = (__u8)flags;
  if (kind == XREF_PROBE_ENTRY) event->return_address = return_address;
  if (full) copy_fetched(event, values);
  if (full == RECORD_STRINGS) copy_strings(event, values);
  submit(event);
  return 0;
}

/* An entry at the innermost frame, which a tail jump handed over: the
 * frame is not new, its function changes to probe `index`'s. */
__noinline int tail_entry(__u32 tid, __u32 index, __u64 sp) {
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  __u32 zero = 0;
  const struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!window || !probe || !values) return 0;
  __u32 depth = window->depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return 0;
  window->frames[(depth - 1) & (XREF_TRACE_MAX_DEPTH - 1)].function_id = probe->function_id;
  int full = record_part(values);
  struct xref_trace_event *event = reserve_event(window, tid, XREF_EVENT_ENTRY, full);
  if (!event) return 0;
  event->depth = (__u16)(depth - 1);
  event->probe_index = index;
  event->function_id = probe->function_id;
  event->sp = sp;
  event->flags = XREF_EVENT_F_TAIL;
  if (full) copy_fetched(event, values);
  if (full == RECORD_STRINGS) copy_strings(event, values);
  submit(event);
  return 0;
}

/* The entry sp of the frame a start probe sits in (see xref_probe.frame_base). */
static __always_inline __u64 start_frame_sp(struct pt_regs *ctx, const struct xref_probe *probe) {
  /* Both registers are read first: a context field picked by a computed
   * offset is something the verifier refuses. */
  __u64 sp = PT_REGS_SP(ctx);
  __u64 bp = PT_REGS_FP(ctx);
  asm volatile("" : "+r"(sp), "+r"(bp));
  return (probe->frame_base == XREF_FRAME_BASE_BP ? bp : sp) + (__s64)probe->frame_offset;
}

static __always_inline void open_window(struct pt_regs *ctx, __u32 tid, __u32 index, const struct xref_probe *probe,
                                        struct xref_thread_window *old, __u64 frame_sp) {
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  struct xref_thread_window *fresh = bpf_map_lookup_elem(&zero_window, &zero);
  if (!values || !fresh) return;
  /* A start while a window is open, at or above its start frame: that
   * frame is over. A frame handed to unprobed code by a tail jump, or left
   * by a jump no probe sees, ended unobserved (complete, inferred); any
   * other start call never came back through a probed ret, so its window
   * is truncated. */
  if (old) {
    struct xref_frame *start = &old->frames[0];
    __u32 start_flags = start->flags;
    if (old->depth > 0 && (start_flags & XREF_FRAME_F_ENDS_UNSEEN)) {
      int tailed = (start_flags & XREF_FRAME_F_TAILED) != 0;
      if (!tailed || (start_flags & XREF_FRAME_F_NAMED)) {
        emit_event(old, tid, XREF_EVENT_RETURN, 0, 0xffffffff, start->function_id, start->entry_sp,
                   XREF_EVENT_F_INFERRED, 0);
      }
      close_window(old, tid, XREF_WINDOW_COMPLETE, tailed ? start->function_id : XREF_FUNCTION_NONE,
                   XREF_EVENT_F_INFERRED);
    } else {
      close_window(old, tid, XREF_WINDOW_TRUNCATED, XREF_FUNCTION_NONE, 0);
    }
  }
  if (stopped) return;
  if (max_windows && windows_opened >= max_windows) return;
  run_fetches(ctx, index);
  if (!filter_accepts(values)) {
    __sync_fetch_and_add(&starts_filtered, 1);
    return;
  }
  __u64 window_id = __sync_fetch_and_add(&windows_opened, 1) + 1;
  if (max_windows && window_id > max_windows) {
    /* Not a window: the count goes back, so it ends at the windows opened. */
    __sync_fetch_and_add(&windows_opened, -1);
    return;
  }
  if (bpf_map_update_elem(&threads, &tid, fresh, BPF_ANY) != 0) {
    /* Not a window either: counted apart, the count goes back. */
    __sync_fetch_and_add(&windows_opened, -1);
    __sync_fetch_and_add(&starts_refused, 1);
    return;
  }
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  if (!window) return;
  window->window_id = window_id;
  window->start_sp = frame_sp;
  window->start_ns = bpf_ktime_get_ns();
  push_entry(tid, index, XREF_EVENT_F_WINDOW_BEGIN, frame_sp, XREF_FRAME_F_BY_RET);
}

/* A return seen at a ret (sp = the frame's entry sp), at a uretprobe (sp -
 * 8), or a tail exit (the frame lives on as the jump's target). Returns 1
 * when the window closed. */
__noinline int handle_return(struct pt_regs *ctx, __u32 tid, __u32 index, __u64 sp) {
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!values || !window || !probe) return 0;
  __u8 kind = probe->kind;
  if (kind == XREF_PROBE_URETPROBE) sp -= 8;
  if (pop_frames(tid, sp, 0)) return 1;
  struct xref_frame *top = top_frame(window);
  if (!top) return 0;
  __u32 depth = window->depth;
  /* Not this frame: a ret of a call that began before the window. A frame
   * handed over by a tail jump may be ended by whatever it was handed to. */
  int tailed = (top->flags & XREF_FRAME_F_TAILED) != 0;
  if (top->entry_sp != sp || (top->function_id != probe->function_id && !tailed)) return 0;
  int continuation = (probe->flags & XREF_PROBE_F_CONTINUATION) != 0;
  if (continuation && !tailed) return 0;
  if (kind == XREF_PROBE_TAIL_EXIT) {
    /* The frame is not over: the jump's target runs in it. Through
     * continuation code it keeps the name it was last shown under. */
    if (continuation) {
      top->flags |= XREF_FRAME_F_TAILED | XREF_FRAME_F_TAIL_CHANGED;
      return 0;
    }
    top->function_id = probe->tail_target_id;
    top->flags = XREF_FRAME_F_TAILED | XREF_FRAME_F_TAIL_CHANGED;
    run_fetches(ctx, index);
    emit_event(window, tid, XREF_EVENT_TAIL_EXIT, depth - 1, index, probe->function_id, sp, 0, values);
    return 0;
  }
  window->depth = depth - 1;
  if (continuation) {
    /* A frame whose current function's entry was shown ([tail] at a
     * tail-call site) shows its return too. */
    if (top->flags & XREF_FRAME_F_NAMED) {
      emit_event(window, tid, XREF_EVENT_RETURN, depth - 1, index, top->function_id, sp, 0, 0);
    }
    /* The start frame's real end; inner continued frames end silently. */
    if (depth - 1 == 0) {
      close_window(window, tid, XREF_WINDOW_COMPLETE, probe->function_id, 0);
      return 1;
    }
    return 0;
  }
  run_fetches(ctx, index);
  emit_event(window, tid, XREF_EVENT_RETURN, depth - 1, index, probe->function_id, sp, 0, values);
  /* The start call (or the --stop-return frame) came back. */
  if (depth - 1 == 0 || (window->stop_sp == sp && (probe->flags & XREF_PROBE_F_STOP_RETURN))) {
    close_window(window, tid, XREF_WINDOW_COMPLETE, XREF_FUNCTION_NONE, 0);
    return 1;
  }
  return 0;
}

/* The return of a call, seen at its return site: sp - 8 is the callee's
 * entry sp. The frame is named by the function running in it now (the
 * callee, or what it tail-jumped to). Returns 1 when the window closed. */
__noinline int handle_return_site(struct pt_regs *ctx, __u32 tid, __u32 index, __u32 callee, __u64 sp) {
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!window || !probe) return 0;
  sp -= 8;
  if (pop_frames(tid, sp, 0)) return 1;
  struct xref_frame *top = top_frame(window);
  /* Not the frame of this call: a second return of setjmp after a
   * longjmp, or a landing pad's path back, at the same sp. */
  if (!top || top->entry_sp != sp) return 0;
  if (top->function_id != callee && !(top->flags & XREF_FRAME_F_TAIL_CHANGED)) return 0;
  __u32 depth = window->depth;
  window->depth = depth - 1;
  /* A return site's own fetches (--fetch-ret of the callee); not those of
   * a role that only shares its address. */
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!values) return 0;
  values->count = 0;
  values->failed = 0;
  if (probe->kind == XREF_PROBE_RETURN_SITE) run_fetches(ctx, index);
  emit_event(window, tid, XREF_EVENT_RETURN, depth - 1, index, top->function_id, sp, 0, values);
  if (depth - 1 == 0) {
    close_window(window, tid, XREF_WINDOW_COMPLETE, XREF_FUNCTION_NONE, 0);
    return 1;
  }
  return 0;
}

/* An entry (at a function's first instruction: sp; at a call: sp - 8). A
 * frame a tail jump handed over at this very sp now runs this function,
 * unless the word at sp says another call made it (pop_stale). `lowest`
 * is the lowest address of live stack at the hit (the probe's sp).
 * Returns 1 when the window closed. */
__noinline int handle_entry(struct pt_regs *ctx, __u32 tid, __u32 index, __u64 sp, __u64 lowest) {
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!values || !window || !probe) return 0;
  if (pop_frames(tid, sp, 0)) return 1;
  if (pop_stale(tid, lowest)) return 1;
  struct xref_frame *top = top_frame(window);
  if (top && top->entry_sp == sp && (top->flags & XREF_FRAME_F_TAILED) && probe->kind == XREF_PROBE_ENTRY) {
    /* Its returns are probed from here on. A tail-call site already named
     * this function: nothing new to say. */
    __u32 named = top->flags & XREF_FRAME_F_NAMED;
    top->flags = XREF_FRAME_F_BY_RET | ((probe->flags & XREF_PROBE_F_UNSEEN_EXIT) ? XREF_FRAME_F_UNSEEN_EXIT : 0);
    if (named && top->function_id == probe->function_id) return 0;
    run_fetches(ctx, index);
    tail_entry(tid, index, sp);
    return 0;
  }
  if (pop_frames(tid, sp, POP_INCLUSIVE)) return 1;
  run_fetches(ctx, index);
  __u32 frame_flags = probe->kind == XREF_PROBE_ENTRY ? XREF_FRAME_F_BY_RET : 0;
  if (probe->flags & XREF_PROBE_F_UNSEEN_RETURN) frame_flags = XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED;
  push_entry(tid, index, 0, sp, frame_flags);
  return 0;
}

/* A tail jmp in a traced caller. When the jumping function's frame is the
 * innermost one, it becomes the target's (the frame's own return, if it was
 * to be seen at its function's rets, now is not: tailed). When the jumping
 * function was entered unseen (from untraced code), the target runs in a
 * frame of its own above the innermost: pushed, with an end that is never
 * observed. */
__noinline int handle_tail_site(struct pt_regs *ctx, __u32 tid, __u32 index, __u64 sp) {
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!values || !window || !probe) return 0;
  if (pop_frames(tid, sp, 0)) return 1;
  if (pop_stale(tid, sp)) return 1;
  run_fetches(ctx, index);
  struct xref_frame *top = top_frame(window);
  if (top && top->entry_sp == sp) {
    top->flags = (top->flags & (XREF_FRAME_F_BY_RET | XREF_FRAME_F_TAILED))
                     ? XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED | XREF_FRAME_F_TAIL_CHANGED
                     : XREF_FRAME_F_TAIL_CHANGED;
    tail_entry(tid, index, sp);
    return 0;
  }
  push_entry(tid, index, XREF_EVENT_F_TAIL, sp, XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED);
  return 0;
}

/* One role of the probe hit (see XREF_PROBE_MAX_ROLES). A global function:
 * the verifier checks it once, not once per role of the loop that calls it.
 * Returns the next role's index, or XREF_PROBE_NO_NEXT. */
__noinline int run_role(struct pt_regs *ctx, __u32 tid, __u32 index) {
  const struct xref_probe *probe = bpf_map_lookup_elem(&probes, &index);
  if (!probe) return XREF_PROBE_NO_NEXT;
  int next = (int)probe->next;
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  if (probe->flags & XREF_PROBE_F_START) {
    if (!armed) return next;
    /* Recursion into the start function inside its own window is an
     * ordinary entry, not a new window; unless the window's frames ended
     * unseen (pop_stale), and this is a new call. */
    __u64 frame_sp = start_frame_sp(ctx, probe);
    if (window && frame_sp < window->start_sp && pop_stale(tid, PT_REGS_SP(ctx))) window = 0;
    if (!window || frame_sp >= window->start_sp) {
      open_window(ctx, tid, index, probe, window, frame_sp);
      return next;
    }
  }
  if (!window) return next;

  __u64 sp = PT_REGS_SP(ctx);
  __u32 zero = 0;
  struct fetched *values = bpf_map_lookup_elem(&scratch_fetched, &zero);
  if (!values) return next;
  values->count = 0;
  values->failed = 0;

  if (probe->flags & XREF_PROBE_F_RETURN_SITE) {
    if (handle_return_site(ctx, tid, index, probe->return_function_id, sp)) return next;
  }

  switch (probe->kind) {
    case XREF_PROBE_ENTRY:
      handle_entry(ctx, tid, index, sp, sp);
      return next;
    case XREF_PROBE_CALL_SITE:
      handle_entry(ctx, tid, index, sp - 8, sp);
      return next;
    case XREF_PROBE_TAIL_SITE:
      handle_tail_site(ctx, tid, index, sp);
      return next;
    case XREF_PROBE_RET:
    case XREF_PROBE_TAIL_EXIT:
    case XREF_PROBE_URETPROBE:
      handle_return(ctx, tid, index, sp);
      return next;
    case XREF_PROBE_RETURN_SITE:
      handle_return_site(ctx, tid, index, probe->function_id, sp);
      return next;
    case XREF_PROBE_UNWIND_CHECK: {
      /* Frames below the handler's call are over. One at the call's own sp
       * is too, unless a call-site probe just pushed it for this very call. */
      if (pop_frames(tid, sp, POP_UNWINDING)) return next;
      struct xref_frame *top = top_frame(window);
      if (top && top->entry_sp == sp && (top->flags & (XREF_FRAME_F_BY_RET | XREF_FRAME_F_TAILED))) {
        pop_frames(tid, sp, POP_INCLUSIVE | POP_UNWINDING);
      }
      return next;
    }
    case XREF_PROBE_RESUME:
      pop_frames(tid, sp, 0);
      return next;
    case XREF_PROBE_STOP: {
      if (pop_frames(tid, sp, 0)) return next;
      run_fetches(ctx, index);
      emit_event(window, tid, XREF_EVENT_STOP, window->depth, index, 0, sp, 0, values);
      close_window(window, tid, XREF_WINDOW_COMPLETE, XREF_FUNCTION_NONE, 0);
      return next;
    }
  }
  return next;
}

SEC("uprobe")
int trace_probe(struct pt_regs *ctx) {
  if (stopped || detaching) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  if ((__u32)(id >> 32) != target_tgid) return 0;
  __u32 tid = (__u32)id;
  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct xref_thread_window *window = bpf_map_lookup_elem(&threads, &tid);
  if (!window && !(cookie & XREF_COOKIE_START)) return 0; /* the untraced-thread fast path */

  __u32 index = (__u32)(cookie & XREF_COOKIE_INDEX_MASK);
  for (int role = 0; role < XREF_PROBE_MAX_ROLES; role++) {
    __u32 next = (__u32)run_role(ctx, tid, index);
    if (next == XREF_PROBE_NO_NEXT || stopped) return 0;
    index = next;
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
