// Windows whose frames a debugger stop shows to be over. A frame left by
// longjmp, or by a tail-jump chain that ends in an indirect jump, passes no
// probe: BPF learns of it only at the thread's next event, which may never
// come. When the thread is stopped by a debugger (ptrace), its stack
// pointer is known without it running, and every frame whose entry sp is
// below it is over.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "trace_abi.h"

namespace xref {

// The stack pointer of a thread in a ptrace stop (state 't' in
// /proc/PID/task/TID/stat; /proc/PID/task/TID/syscall then gives its sp);
// nullopt for a thread that runs, sleeps outside ptrace, or is gone.
std::optional<uint64_t> stopped_thread_sp(pid_t pid, uint32_t tid);

// What settle_frames did to one window.
struct SettledFrames {
  std::vector<xref_trace_event> records;  // in order, with the window's next sequence numbers
  bool closed = false;                     // the start frame was over: the last record is its WINDOW_END
};

// Pops the frames of `window` whose entry sp is below `sp`, as the BPF
// program's pop_frames does at an event: a frame handed to unprobed code by
// a tail jump ends without an observed return (an inferred return when its
// function's entry was shown; the start frame: complete, its end inferred),
// any other is [unwound]. `window` is updated (depth, seq).
SettledFrames settle_frames(xref_thread_window& window, uint32_t tid, uint64_t sp, uint64_t now_ns);

}  // namespace xref
