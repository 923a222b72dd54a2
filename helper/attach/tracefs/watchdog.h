// The kernel keeps uprobe events, ftrace instances and the int3 they put
// into the target after the process that made them is gone. So a tracefs
// trace starts a watchdog: a forked process of its own (its own session,
// deaf to the terminal's and the helper's signals, never the OOM killer's
// choice) that waits for the helper. If the helper dies before it has
// removed its instance and events (SIGKILL, a crash), the watchdog removes
// exactly those and exits; once the helper has removed them itself, it
// releases the watchdog, which exits without touching anything.
//
// After fork() the child runs nothing but system calls on buffers made
// before it (the helper has other threads; their locks are not its), and
// closes every descriptor it inherited first, so it never keeps a BPF link,
// a reader of the instance or a pipe of the helper alive.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "result.h"

namespace xref {

struct TracefsWatchdogPlan {
  std::string instance_directory;            // absolute: .../instances/xref-4242-81234
  std::string uprobe_events;                 // absolute: .../uprobe_events
  std::vector<std::string> event_removals;   // "-:xref_4242_81234/p0\n", one per event
};

class TracefsWatchdog {
 public:
  // Forks the watchdog for `plan`; internal when fork or its pipes fail.
  static Result<TracefsWatchdog> start(TracefsWatchdogPlan plan);

  TracefsWatchdog(TracefsWatchdog&& other) noexcept;
  TracefsWatchdog& operator=(TracefsWatchdog&&) = delete;
  TracefsWatchdog(const TracefsWatchdog&) = delete;
  TracefsWatchdog& operator=(const TracefsWatchdog&) = delete;
  // Without release(): the watchdog removes them now.
  ~TracefsWatchdog();

  pid_t pid() const { return pid_; }
  // Everything is removed: the watchdog exits without touching anything.
  void release();

 private:
  TracefsWatchdog(pid_t pid, int release_fd) : pid_(pid), release_fd_(release_fd) {}
  // Closes our end of the pipe; waits a moment for the watchdog to exit,
  // so that it is reaped.
  void let_go();

  pid_t pid_ = -1;
  int release_fd_ = -1;  // the write end of the pipe the watchdog waits on
};

}  // namespace xref
