// The target's threads as /proc/PID/task lists them now, each with the time
// it started (field 22 of /proc/PID/task/TID/stat, in clock ticks since
// boot: 10 ms here), so the hw engine can say how long a thread ran before
// its breakpoints were in.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace xref {

struct TargetThread {
  uint32_t tid = 0;
  uint64_t start_ns = 0;  // CLOCK_BOOTTIME; 0 when unreadable (the thread is gone)
};

std::vector<TargetThread> list_target_threads(pid_t pid);
uint64_t boottime_ns();

}  // namespace xref
