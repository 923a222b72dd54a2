#include "trace/window_machine.h"

#include <algorithm>
#include <cstring>

namespace xref {

WindowMachine::WindowMachine(const TracePlan& plan, const WindowMachineOptions& options)
    : start_filter_(plan.start_filter), options_(options) {
  probes_.reserve(plan.probes.size());
  for (const PlannedProbe& planned : plan.probes) {
    Probe probe;
    probe.kind = planned.kind;
    probe.flags = planned.flags;
    probe.start = planned.start;
    probe.fetch_count = static_cast<uint8_t>(std::min<size_t>(planned.fetches.size(), XREF_FETCH_MAX_ITEMS));
    probe.function_id = planned.function_id;
    probe.return_function_id = planned.return_function_id;
    probe.tail_target_id = planned.tail_target_id;
    probe.next = planned.next < 0 ? XREF_PROBE_NO_NEXT : static_cast<uint32_t>(planned.next);
    const std::vector<int> slots = fetch_string_slots(planned.fetches);
    for (size_t i = 0; i < probe.fetch_count; ++i) probe.string_slots[i] = static_cast<int8_t>(slots[i]);
    probes_.push_back(probe);
  }
  // Each role's values follow those of the roles before it at its address.
  for (size_t head = 0; head < plan.probes.size(); ++head) {
    if (!plan.probes[head].head) continue;
    size_t offset = 0;
    for (uint32_t index = static_cast<uint32_t>(head); index != XREF_PROBE_NO_NEXT; index = probes_[index].next) {
      probes_[index].fetch_offset = static_cast<uint8_t>(std::min<size_t>(offset, XREF_FETCH_MAX_ITEMS));
      offset += probes_[index].fetch_count;
    }
  }
}

TraceCounters WindowMachine::counters() const {
  TraceCounters counters;
  counters.events_emitted = events_emitted_;
  counters.windows_opened = windows_opened_;
  counters.windows_closed = windows_closed_;
  counters.starts_filtered = starts_filtered_;
  counters.starts_refused = starts_refused_;
  counters.stopped = stopped_;
  counters.stop_reason = stop_reason_;
  return counters;
}

// run_fetches: the kernel read the values at the hit already.
WindowMachine::Fetched WindowMachine::fetched(const ProbeHit& hit, const Probe& probe) {
  Fetched out;
  out.count = probe.fetch_count;
  if (out.count == 0) return out;
  for (size_t i = 0; i < out.count; ++i) {
    const size_t at = probe.fetch_offset + i;
    const bool present = at < hit.fetch_count && at < XREF_FETCH_MAX_ITEMS;
    const bool failed = present ? ((hit.fetch_failed >> at) & 1u) != 0 : true;
    out.values[i] = failed ? 0 : hit.values[at];
    out.errors[i] = failed ? (present ? hit.fetch_error[at] : int16_t{-14}) : int16_t{0};
    const int slot = probe.string_slots[i];
    if (!failed && slot >= 0 && slot < XREF_FETCH_MAX_STRINGS) out.strings[slot] = hit.strings[at];
    if (failed) out.failed = static_cast<uint16_t>(out.failed | (1u << i));
  }
  return out;
}

// filter_accepts. BPF rejects a start whose filter reaches a slot that could
// not be read; here a failed slot the program reads at all rejects (the
// tracefs backend never reports a failed read, so this does not arise there).
bool WindowMachine::filter_accepts(const Fetched& values) const {
  if (!start_filter_ || start_filter_->instructions.empty()) return true;
  if (values.failed != 0) {
    for (const xref_filter_insn& insn : start_filter_->instructions) {
      if (insn.lhs_slot < XREF_FETCH_MAX_ITEMS && ((values.failed >> insn.lhs_slot) & 1u)) return false;
      if (insn.rhs_slot != XREF_FILTER_CONSTANT_SLOT && insn.rhs_slot < XREF_FETCH_MAX_ITEMS &&
          ((values.failed >> insn.rhs_slot) & 1u)) {
        return false;
      }
    }
  }
  return evaluate_program(*start_filter_, values.values, values.strings);
}

void WindowMachine::stop_emitting(uint32_t reason) {
  if (!stopped_) {
    stop_reason_ = reason;
    stopped_ = true;
  }
}

// reserve_event: every attempt consumes a sequence number. Nothing here can
// refuse a record the way a full BPF ring buffer does; loss in the kernel's
// buffers happens before the machine and is reported per CPU instead.
std::optional<xref_trace_event> WindowMachine::reserve_event(const Current& current, xref_thread_window& window,
                                                             uint8_t type) {
  const uint64_t seq = window.seq;
  window.seq = seq + 1;
  // --max-events counts the events a user sees, not the end records.
  if (options_.max_events && type != XREF_EVENT_WINDOW_END && events_emitted_++ >= options_.max_events) {
    stop_emitting(XREF_STOP_MAX_EVENTS);
    return std::nullopt;
  }
  xref_trace_event event;
  std::memset(&event, 0, sizeof event);
  event.window_id = window.window_id;
  event.seq = seq;
  event.timestamp_ns = current.hit.timestamp_ns;
  event.tid = current.hit.tid;
  event.type = type;
  event.probe_index = 0xffffffff;
  return event;
}

// copy_fetched and copy_strings: the string slots filled as the BPF program
// fills them (the bytes, zero after them; the record is zeroed already).
void WindowMachine::copy_fetched(xref_trace_event& event, const Fetched& values) {
  event.fetch_count = values.count;
  event.fetch_failed = values.failed;
  for (size_t i = 0; i < XREF_FETCH_MAX_ITEMS; ++i) {
    event.values[i] = values.values[i];
    event.fetch_error[i] = values.errors[i];
  }
  for (size_t slot = 0; slot < XREF_FETCH_MAX_STRINGS; ++slot) {
    const std::string& bytes = values.strings[slot];
    std::memcpy(event.strings[slot], bytes.data(), std::min<size_t>(bytes.size(), XREF_STRING_MAX_BYTES));
  }
}

// emit_event: of the role being run, or (`of_probe` false) a frame's end
// no probe saw; with the values it fetched (none when `values` is null).
void WindowMachine::emit_event(const Current& current, xref_thread_window& window, uint8_t type, uint32_t depth,
                               bool of_probe, uint32_t function_id, uint64_t sp, uint8_t flags,
                               const Fetched* values) {
  auto event = reserve_event(current, window, type);
  if (!event) return;
  event->depth = static_cast<uint16_t>(depth);
  if (of_probe) event->probe_index = current.index;
  event->function_id = function_id;
  event->sp = sp;
  event->flags = flags;
  if (values != nullptr) copy_fetched(*event, *values);
  current.emit(*event);
}

// close_window. The thread's state is gone afterwards: `window` must not be
// used again.
void WindowMachine::close_window(const Current& current, xref_thread_window& window, uint8_t status,
                                 uint32_t function_id, uint8_t flags) {
  if (auto result = results_.find(window.window_id); result != results_.end()) result->second.status = status;
  if (auto event = reserve_event(current, window, XREF_EVENT_WINDOW_END)) {
    event->status = status;
    event->lost = window.lost;
    event->function_id = function_id;
    event->flags = flags;
    current.emit(*event);
    results_.erase(window.window_id);  // the end record says all the result did: open windows stay
  }
  threads_.erase(current.hit.tid);
  const uint64_t closed = ++windows_closed_;
  if (options_.max_windows && closed >= options_.max_windows) stop_emitting(XREF_STOP_MAX_WINDOWS);
}

// pop_frames (pop_step): frames whose entry sp is below `sp` (at or below
// with kPopInclusive). A frame that can end unseen (handed to unprobed code
// by a tail jump, or whose function may leave by a jump no probe sees)
// returned unseen: [inferred] if its function's entry was shown, the start
// frame's window complete with its end inferred. Any other frame, and every
// frame an exception handler's probe finds over (kPopUnwinding, a tailed one
// aside), was unwound. True when the start frame was popped and the window
// closed.
bool WindowMachine::pop_frames(const Current& current, xref_thread_window& window, uint64_t sp, int mode) {
  for (int i = 0; i < XREF_TRACE_MAX_DEPTH; ++i) {
    const uint32_t depth = window.depth;
    if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return false;
    const xref_frame top = window.frames[depth - 1];
    if ((mode & kPopInclusive) ? top.entry_sp > sp : top.entry_sp >= sp) return false;
    window.depth = depth - 1;
    const bool tailed = (top.flags & XREF_FRAME_F_TAILED) != 0;
    if (tailed || ((top.flags & XREF_FRAME_F_UNSEEN_EXIT) && !(mode & kPopUnwinding))) {
      if (!tailed || (top.flags & XREF_FRAME_F_NAMED)) {
        emit_event(current, window, XREF_EVENT_RETURN, depth - 1, false, top.function_id, top.entry_sp,
                   XREF_EVENT_F_INFERRED, nullptr);
      }
      if (depth - 1 == 0) {
        close_window(current, window, XREF_WINDOW_COMPLETE, tailed ? top.function_id : XREF_FUNCTION_NONE,
                     XREF_EVENT_F_INFERRED);
        return true;
      }
      continue;
    }
    emit_event(current, window, XREF_EVENT_UNWOUND, depth - 1, false, top.function_id, top.entry_sp, 0, nullptr);
    if (depth - 1 == 0) {
      close_window(current, window, XREF_WINDOW_UNWOUND);
      return true;
    }
  }
  return false;
}

std::optional<uint64_t> WindowMachine::word_at(const ProbeHit& hit, uint64_t address) const {
  if (stack_word_) return stack_word_(hit, address);
  if (address == hit.sp && hit.return_address != 0) return hit.return_address;
  return std::nullopt;
}

// pop_stale (stale_step): the innermost frames that can end unseen and are
// over, because the word at their entry sp (at or above `lowest`, the hit's
// sp) is no longer their return address. A word that cannot be known keeps
// the frame. True when the window closed.
bool WindowMachine::pop_stale(const Current& current, xref_thread_window& window, uint64_t lowest) {
  for (int i = 0; i < XREF_TRACE_MAX_DEPTH; ++i) {
    const uint32_t depth = window.depth;
    if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return false;
    const xref_frame top = window.frames[depth - 1];
    if (!(top.flags & XREF_FRAME_F_ENDS_UNSEEN) || top.return_address == 0 || top.entry_sp < lowest) return false;
    const std::optional<uint64_t> word = word_at(current.hit, top.entry_sp);
    if (!word || *word == top.return_address) return false;
    if (pop_frames(current, window, top.entry_sp, kPopInclusive)) return true;
  }
  return false;
}

// emit_entry
void WindowMachine::emit_entry(const Current& current, xref_thread_window& window, const Probe& probe,
                               const Fetched& values, uint8_t flags, uint64_t sp, uint32_t frame_flags) {
  const uint32_t depth = window.depth;
  uint64_t return_address = 0;
  if (probe.kind == XREF_PROBE_ENTRY || probe.kind == XREF_PROBE_TAIL_SITE) {
    return_address = word_at(current.hit, sp).value_or(0);
  }
  if (probe.flags & XREF_PROBE_F_UNSEEN_EXIT) frame_flags |= XREF_FRAME_F_UNSEEN_EXIT;
  auto event = reserve_event(current, window, XREF_EVENT_ENTRY);
  if (depth < XREF_TRACE_MAX_DEPTH) {
    window.frames[depth].entry_sp = sp;
    window.frames[depth].function_id = probe.function_id;
    window.frames[depth].flags = frame_flags;
    window.frames[depth].return_address = return_address;
    window.depth = depth + 1;
    if ((probe.flags & XREF_PROBE_F_STOP_RETURN) && window.stop_sp == 0) window.stop_sp = sp;
  } else {
    flags = static_cast<uint8_t>(flags | XREF_EVENT_F_DEPTH_OVERFLOW);
  }
  if (!event) return;
  event->depth = static_cast<uint16_t>(depth);
  event->probe_index = current.index;
  event->function_id = probe.function_id;
  event->sp = sp;
  event->flags = flags;
  if (probe.kind == XREF_PROBE_ENTRY) event->return_address = return_address;
  copy_fetched(*event, values);
  current.emit(*event);
}

// emit_tail_entry
void WindowMachine::emit_tail_entry(const Current& current, xref_thread_window& window, const Probe& probe,
                                    const Fetched& values, xref_frame& frame, uint64_t sp) {
  const uint32_t depth = window.depth;
  frame.function_id = probe.function_id;
  auto event = reserve_event(current, window, XREF_EVENT_ENTRY);
  if (!event) return;
  event->depth = static_cast<uint16_t>(depth > 0 ? depth - 1 : 0);
  event->probe_index = current.index;
  event->function_id = probe.function_id;
  event->sp = sp;
  event->flags = XREF_EVENT_F_TAIL;
  copy_fetched(*event, values);
  current.emit(*event);
}

// open_window
void WindowMachine::open_window(const Current& current, const Probe& probe, xref_thread_window* old) {
  // A start at or above an open window's start frame: that frame is over.
  if (old != nullptr) {
    const xref_frame start = old->frames[0];
    if (old->depth > 0 && (start.flags & XREF_FRAME_F_ENDS_UNSEEN)) {
      const bool tailed = (start.flags & XREF_FRAME_F_TAILED) != 0;
      if (!tailed || (start.flags & XREF_FRAME_F_NAMED)) {
        emit_event(current, *old, XREF_EVENT_RETURN, 0, false, start.function_id, start.entry_sp,
                   XREF_EVENT_F_INFERRED, nullptr);
      }
      close_window(current, *old, XREF_WINDOW_COMPLETE, tailed ? start.function_id : XREF_FUNCTION_NONE,
                   XREF_EVENT_F_INFERRED);
    } else {
      close_window(current, *old, XREF_WINDOW_TRUNCATED);
    }
  }
  if (stopped_) return;
  if (options_.max_windows && windows_opened_ >= options_.max_windows) return;
  const Fetched values = fetched(current.hit, probe);
  if (!filter_accepts(values)) {
    ++starts_filtered_;
    return;
  }
  if (threads_.size() >= XREF_TRACE_MAX_THREADS) {  // the BPF map would be full
    ++starts_refused_;
    return;
  }
  const uint64_t window_id = ++windows_opened_;
  if (options_.max_windows && window_id > options_.max_windows) return;
  xref_thread_window& window = threads_[current.hit.tid];
  std::memset(&window, 0, sizeof window);
  window.window_id = window_id;
  window.start_sp = current.hit.sp;
  xref_window_result result{};
  result.tid = current.hit.tid;
  results_[window_id] = result;
  window.start_ns = current.hit.timestamp_ns;
  emit_entry(current, window, probe, values, XREF_EVENT_F_WINDOW_BEGIN, current.hit.sp, XREF_FRAME_F_BY_RET);
}

// handle_return: a ret, a uretprobe or a tail exit. True when the window
// closed.
bool WindowMachine::handle_return(const Current& current, xref_thread_window& window, const Probe& probe,
                                  uint64_t sp) {
  if (probe.kind == XREF_PROBE_URETPROBE) sp -= 8;
  if (pop_frames(current, window, sp, 0)) return true;
  const uint32_t depth = window.depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return false;
  xref_frame& top = window.frames[depth - 1];
  const bool tailed = (top.flags & XREF_FRAME_F_TAILED) != 0;
  if (top.entry_sp != sp || (top.function_id != probe.function_id && !tailed)) return false;
  const bool continuation = (probe.flags & XREF_PROBE_F_CONTINUATION) != 0;
  if (continuation && !tailed) return false;
  if (probe.kind == XREF_PROBE_TAIL_EXIT) {
    // Through continuation code the frame keeps the name it was last shown under.
    if (continuation) {
      top.flags |= XREF_FRAME_F_TAILED | XREF_FRAME_F_TAIL_CHANGED;
      return false;
    }
    top.function_id = probe.tail_target_id;
    top.flags = XREF_FRAME_F_TAILED | XREF_FRAME_F_TAIL_CHANGED;
    const Fetched values = fetched(current.hit, probe);
    emit_event(current, window, XREF_EVENT_TAIL_EXIT, depth - 1, true, probe.function_id, sp, 0, &values);
    return false;
  }
  window.depth = depth - 1;
  if (continuation) {
    // A frame whose current function's entry was shown shows its return.
    if (top.flags & XREF_FRAME_F_NAMED) {
      emit_event(current, window, XREF_EVENT_RETURN, depth - 1, true, top.function_id, sp, 0, nullptr);
    }
    if (depth - 1 == 0) {
      close_window(current, window, XREF_WINDOW_COMPLETE, probe.function_id);
      return true;
    }
    return false;
  }
  const Fetched values = fetched(current.hit, probe);
  emit_event(current, window, XREF_EVENT_RETURN, depth - 1, true, probe.function_id, sp, 0, &values);
  // The start call (or the --stop-return frame) came back.
  if (depth - 1 == 0 || (window.stop_sp == sp && (probe.flags & XREF_PROBE_F_STOP_RETURN))) {
    close_window(current, window, XREF_WINDOW_COMPLETE);
    return true;
  }
  return false;
}

// handle_return_site
bool WindowMachine::handle_return_site(const Current& current, xref_thread_window& window, const Probe& probe,
                                       uint32_t callee, uint64_t sp) {
  sp -= 8;
  if (pop_frames(current, window, sp, 0)) return true;
  const uint32_t depth = window.depth;
  if (depth == 0 || depth > XREF_TRACE_MAX_DEPTH) return false;
  const xref_frame top = window.frames[depth - 1];
  // Not the frame of this call: setjmp's second return, a landing pad's path.
  if (top.entry_sp != sp) return false;
  if (top.function_id != callee && !(top.flags & XREF_FRAME_F_TAIL_CHANGED)) return false;
  window.depth = depth - 1;
  // A return site's own fetches; not those of a role sharing its address.
  const Fetched values = probe.kind == XREF_PROBE_RETURN_SITE ? fetched(current.hit, probe) : Fetched{};
  emit_event(current, window, XREF_EVENT_RETURN, depth - 1, true, top.function_id, sp, 0, &values);
  if (depth - 1 == 0) {
    close_window(current, window, XREF_WINDOW_COMPLETE);
    return true;
  }
  return false;
}

// handle_entry
bool WindowMachine::handle_entry(const Current& current, xref_thread_window& window, const Probe& probe,
                                 uint64_t sp, uint64_t lowest) {
  if (pop_frames(current, window, sp, 0)) return true;
  if (pop_stale(current, window, lowest)) return true;
  const uint32_t depth = window.depth;
  if (depth > 0 && depth <= XREF_TRACE_MAX_DEPTH && probe.kind == XREF_PROBE_ENTRY) {
    xref_frame& top = window.frames[depth - 1];
    if (top.entry_sp == sp && (top.flags & XREF_FRAME_F_TAILED)) {
      const bool named = (top.flags & XREF_FRAME_F_NAMED) != 0;
      top.flags = XREF_FRAME_F_BY_RET | ((probe.flags & XREF_PROBE_F_UNSEEN_EXIT) ? XREF_FRAME_F_UNSEEN_EXIT : 0);
      if (named && top.function_id == probe.function_id) return false;
      emit_tail_entry(current, window, probe, fetched(current.hit, probe), top, sp);
      return false;
    }
  }
  if (pop_frames(current, window, sp, kPopInclusive)) return true;
  uint32_t frame_flags = probe.kind == XREF_PROBE_ENTRY ? XREF_FRAME_F_BY_RET : 0;
  if (probe.flags & XREF_PROBE_F_UNSEEN_RETURN) frame_flags = XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED;
  emit_entry(current, window, probe, fetched(current.hit, probe), 0, sp, frame_flags);
  return false;
}

// handle_tail_site
void WindowMachine::handle_tail_site(const Current& current, xref_thread_window& window, const Probe& probe,
                                     uint64_t sp) {
  if (pop_frames(current, window, sp, 0)) return;
  if (pop_stale(current, window, sp)) return;
  const Fetched values = fetched(current.hit, probe);
  const uint32_t depth = window.depth;
  if (depth > 0 && depth <= XREF_TRACE_MAX_DEPTH && window.frames[depth - 1].entry_sp == sp) {
    xref_frame& top = window.frames[depth - 1];
    top.flags = (top.flags & (XREF_FRAME_F_BY_RET | XREF_FRAME_F_TAILED))
                    ? XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED | XREF_FRAME_F_TAIL_CHANGED
                    : XREF_FRAME_F_TAIL_CHANGED;
    emit_tail_entry(current, window, probe, values, top, sp);
    return;
  }
  emit_entry(current, window, probe, values, XREF_EVENT_F_TAIL, sp, XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED);
}

// run_role
void WindowMachine::run_role(const Current& current, const Probe& probe) {
  auto found = threads_.find(current.hit.tid);
  xref_thread_window* window = found == threads_.end() ? nullptr : &found->second;
  if (probe.start) {
    // Recursion into the start function inside its own window is an
    // ordinary entry, not a new window; unless the window's frames ended
    // unseen (pop_stale), and this is a new call.
    if (window != nullptr && current.hit.sp < window->start_sp && pop_stale(current, *window, current.hit.sp)) {
      window = nullptr;
    }
    if (window == nullptr || current.hit.sp >= window->start_sp) {
      open_window(current, probe, window);
      return;
    }
  }
  if (window == nullptr) return;
  const uint64_t sp = current.hit.sp;
  if (probe.flags & XREF_PROBE_F_RETURN_SITE) {
    if (handle_return_site(current, *window, probe, probe.return_function_id, sp)) return;
  }
  switch (probe.kind) {
    case XREF_PROBE_ENTRY:
      handle_entry(current, *window, probe, sp, sp);
      return;
    case XREF_PROBE_CALL_SITE:
      handle_entry(current, *window, probe, sp - 8, sp);
      return;
    case XREF_PROBE_TAIL_SITE:
      handle_tail_site(current, *window, probe, sp);
      return;
    case XREF_PROBE_RET:
    case XREF_PROBE_TAIL_EXIT:
    case XREF_PROBE_URETPROBE:
      handle_return(current, *window, probe, sp);
      return;
    case XREF_PROBE_RETURN_SITE:
      handle_return_site(current, *window, probe, probe.function_id, sp);
      return;
    case XREF_PROBE_UNWIND_CHECK: {
      // Frames below the handler's call are over; one at the call's own sp
      // too, unless a call-site probe just pushed it for this very call.
      if (pop_frames(current, *window, sp, kPopUnwinding)) return;
      const uint32_t depth = window->depth;
      if (depth > 0 && depth <= XREF_TRACE_MAX_DEPTH && window->frames[depth - 1].entry_sp == sp &&
          (window->frames[depth - 1].flags & (XREF_FRAME_F_BY_RET | XREF_FRAME_F_TAILED))) {
        pop_frames(current, *window, sp, kPopInclusive | kPopUnwinding);
      }
      return;
    }
    case XREF_PROBE_RESUME:
      pop_frames(current, *window, sp, 0);
      return;
    case XREF_PROBE_STOP: {
      if (pop_frames(current, *window, sp, 0)) return;
      const Fetched values = fetched(current.hit, probe);
      emit_event(current, *window, XREF_EVENT_STOP, window->depth, true, 0, sp, 0, &values);
      close_window(current, *window, XREF_WINDOW_COMPLETE);
      return;
    }
  }
}

// trace_probe: every role of the hit address, in chain order.
void WindowMachine::hit(const ProbeHit& hit, const Emit& emit) {
  if (stopped_) return;
  if (hit.probe_index >= probes_.size()) return;
  uint32_t index = hit.probe_index;
  for (int role = 0; role < XREF_PROBE_MAX_ROLES && index < probes_.size(); ++role) {
    const Probe& probe = probes_[index];
    run_role(Current{hit, emit, index}, probe);
    if (probe.next == XREF_PROBE_NO_NEXT || stopped_) return;
    index = probe.next;
  }
}

}  // namespace xref
