// The trace window state machine of bpf/trace.bpf.c, ported to C++ for the
// backends that only deliver raw probe hits (tracefs): windows per thread,
// frames identified by their entry stack pointer, frames left by unwinding
// noticed by a later event's stack pointer, the start filter, the bounds,
// and one sequence number per event. It produces the very records the BPF
// program writes to its ring buffer, so window assembly and output are
// shared. Keep it in step with trace.bpf.c: every rule below names the BPF
// function it mirrors.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "filter_program.h"
#include "trace/counters.h"
#include "trace/plan.h"
#include "trace_abi.h"

namespace xref {

// One probe hit, with what the kernel read at it.
struct ProbeHit {
  uint32_t tid = 0;
  uint32_t probe_index = 0;      // index into TracePlan::probes: the head of the address's roles
  uint64_t timestamp_ns = 0;     // CLOCK_MONOTONIC
  uint64_t sp = 0;               // the stack pointer at the probed instruction
  uint64_t return_address = 0;   // ENTRY and TAIL_SITE probes: the word at sp (0 when unread)
  uint8_t fetch_count = 0;
  uint16_t fetch_failed = 0;     // bit i: fetch i could not be read
  std::array<int16_t, XREF_FETCH_MAX_ITEMS> fetch_error{};
  // Extended to 64 bits; the fetches of every role of the address, in
  // chain order (tracefs_fetch_layout).
  std::array<uint64_t, XREF_FETCH_MAX_ITEMS> values{};
  // A :string fetch's bytes (at most its bound), at its index in values,
  // whose value is its length | XREF_STRING_CUT.
  std::array<std::string, XREF_FETCH_MAX_ITEMS> strings{};
};

struct WindowMachineOptions {
  uint64_t max_events = 0;   // 0: unbounded
  uint64_t max_windows = 0;  // 0: unbounded
};

class WindowMachine {
 public:
  using Emit = std::function<void(const xref_trace_event&)>;
  // The word at an address of the thread's stack at the moment of the hit,
  // when it can be known then (BPF reads it in the probe). Without one, only
  // the word at the hit's own sp is known (ProbeHit::return_address).
  using StackWord = std::function<std::optional<uint64_t>(const ProbeHit&, uint64_t address)>;

  WindowMachine(const TracePlan& plan, const WindowMachineOptions& options);
  void set_stack_word(StackWord stack_word) { stack_word_ = std::move(stack_word); }

  // Runs one hit (trace_probe in BPF). Hits of one thread must come in the
  // thread's program order; every record produced goes to `emit`, in order.
  void hit(const ProbeHit& hit, const Emit& emit);

  TraceCounters counters() const;
  // The windows whose end record has not gone out (open ones), with their
  // loss, as the BPF window_results map holds them.
  const std::map<uint64_t, xref_window_result>& window_results() const { return results_; }
  bool stopped() const { return stopped_; }
  size_t open_windows() const { return threads_.size(); }

 private:
  struct Probe {
    uint8_t kind = 0;
    uint8_t flags = 0;
    bool start = false;
    uint8_t fetch_count = 0;
    uint32_t function_id = 0;
    uint32_t return_function_id = 0;
    uint32_t tail_target_id = XREF_FUNCTION_NONE;
    uint32_t next = XREF_PROBE_NO_NEXT;
    uint8_t fetch_offset = 0;  // where this role's values start in ProbeHit::values
    std::array<int8_t, XREF_FETCH_MAX_ITEMS> string_slots{};  // per fetch of the role: its string slot, -1 for a number
  };
  struct Fetched {
    std::array<uint64_t, XREF_FETCH_MAX_ITEMS> values{};
    std::array<int16_t, XREF_FETCH_MAX_ITEMS> errors{};
    uint16_t failed = 0;
    uint8_t count = 0;
    std::array<std::string, XREF_FETCH_MAX_STRINGS> strings{};  // by string slot, as trace.bpf.c reads them
  };
  struct Current {
    const ProbeHit& hit;
    const Emit& emit;
    uint32_t index = 0;  // the role being run
  };

  static Fetched fetched(const ProbeHit& hit, const Probe& probe);
  static void copy_fetched(xref_trace_event& event, const Fetched& values);
  bool filter_accepts(const Fetched& values) const;
  void stop_emitting(uint32_t reason);
  std::optional<xref_trace_event> reserve_event(const Current& current, xref_thread_window& window, uint8_t type);
  void emit_event(const Current& current, xref_thread_window& window, uint8_t type, uint32_t depth, bool of_probe,
                  uint32_t function_id, uint64_t sp, uint8_t flags, const Fetched* values);
  void close_window(const Current& current, xref_thread_window& window, uint8_t status,
                    uint32_t function_id = XREF_FUNCTION_NONE, uint8_t flags = 0);
  enum PopMode : int { kPopInclusive = 1, kPopUnwinding = 2 };  // POP_* of trace.bpf.c
  std::optional<uint64_t> word_at(const ProbeHit& hit, uint64_t address) const;
  bool pop_frames(const Current& current, xref_thread_window& window, uint64_t sp, int mode);
  bool pop_stale(const Current& current, xref_thread_window& window, uint64_t lowest);
  void emit_entry(const Current& current, xref_thread_window& window, const Probe& probe, const Fetched& values,
                  uint8_t flags, uint64_t sp, uint32_t frame_flags);
  void emit_tail_entry(const Current& current, xref_thread_window& window, const Probe& probe,
                       const Fetched& values, xref_frame& frame, uint64_t sp);
  void open_window(const Current& current, const Probe& probe, xref_thread_window* old);
  bool handle_return(const Current& current, xref_thread_window& window, const Probe& probe, uint64_t sp);
  bool handle_return_site(const Current& current, xref_thread_window& window, const Probe& probe, uint32_t callee,
                          uint64_t sp);
  bool handle_entry(const Current& current, xref_thread_window& window, const Probe& probe, uint64_t sp,
                    uint64_t lowest);
  void handle_tail_site(const Current& current, xref_thread_window& window, const Probe& probe, uint64_t sp);
  void run_role(const Current& current, const Probe& probe);

  std::vector<Probe> probes_;
  std::optional<FilterProgram> start_filter_;
  StackWord stack_word_;
  WindowMachineOptions options_;
  std::unordered_map<uint32_t, xref_thread_window> threads_;
  std::map<uint64_t, xref_window_result> results_;
  uint64_t events_emitted_ = 0;
  uint64_t windows_opened_ = 0;
  uint64_t windows_closed_ = 0;
  uint64_t starts_filtered_ = 0;
  uint64_t starts_refused_ = 0;
  bool stopped_ = false;
  uint32_t stop_reason_ = XREF_STOP_NONE;
};

}  // namespace xref
