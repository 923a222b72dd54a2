// The perf breakpoint events of a hw watch: one per watched range per
// thread (perf_event_open(PERF_TYPE_BREAKPOINT), pid = the thread, any
// CPU), each with the watch program attached through a BPF perf link whose
// cookie is the range + 1.
//
// Threads created later: every event is opened with attr.inherit (and
// inherit_thread), so a thread created by a thread that holds the event
// gets a copy of it in the kernel (perf_event_init_task), with the same
// program, from its first instruction; PERF_EVENT_IOC_ENABLE, _DISABLE and
// _MODIFY_ATTRIBUTES on the opened event reach its copies too. The copy
// has no descriptor and no cookie (the program finds its range by address).
// remove_on_exec: an exec'd target keeps no breakpoint.
//
// Every event dies with its descriptor: when the helper exits, however it
// exits (SIGKILL included), the kernel closes the descriptors and removes
// the breakpoints and their inherited copies; nothing is left in the target.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "result.h"

struct bpf_link;
struct bpf_program;

namespace xref {

struct HwBreakpointSpec {
  uint64_t address = 0;
  uint32_t length = 0;  // HW_BREAKPOINT_LEN_*
  uint32_t type = 0;    // HW_BREAKPOINT_W or _RW
};

class HwBreakpoints {
 public:
  HwBreakpoints() = default;
  ~HwBreakpoints() { close_all(); }
  HwBreakpoints(const HwBreakpoints&) = delete;
  HwBreakpoints& operator=(const HwBreakpoints&) = delete;

  // Opens range `range`'s breakpoint on thread `tid`, disabled, and attaches
  // `program`. A thread that exited meanwhile (ESRCH) is not an error: false.
  Result<bool> open(uint32_t tid, uint32_t range, const HwBreakpointSpec& spec, const bpf_program* program);
  // Every event on (after arm) or off.
  void enable_all();
  void disable_range(uint32_t range);
  // Range `range`'s breakpoints now watch `address` (same length and type);
  // enabled afterwards. Fails on the first event the kernel refuses.
  Result<void> move(uint32_t range, uint64_t address);
  void close_all();

  size_t size() const { return events_.size(); }
  // Events opened per range (the threads it covers by descriptor).
  size_t events_of(uint32_t range) const;

 private:
  struct Event {
    uint32_t tid = 0;
    uint32_t range = 0;
    int fd = -1;
    bpf_link* link = nullptr;
    HwBreakpointSpec spec;
  };
  std::vector<Event> events_;
};

}  // namespace xref
