// When a debugger held a process stopped at its prompt: the front end says
// when it saw the stop (drain's stopped_at_ns) and when it let the process
// go (resumed), on CLOCK_MONOTONIC, the clock of the BPF timestamps. A
// window's text shows the time it ran without them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

namespace xref::serve {

class StopClock {
 public:
  static constexpr size_t kKeptIntervals = 4096;  // per process, the latest
  static constexpr size_t kKeptProcesses = 64;
  static constexpr uint64_t kStillStopped = UINT64_MAX;

  struct Interval {
    uint64_t begin_ns = 0;
    uint64_t end_ns = kStillStopped;
  };

  // The process stopped at `at_ns` (a second stop before a resume is the same stop).
  void stopped(pid_t pid, uint64_t at_ns);
  // It runs again from `at_ns`; every process when pid is 0.
  void resumed(pid_t pid, uint64_t at_ns);
  // The stops that overlap [begin_ns, end_ns], clipped to it.
  std::vector<Interval> within(pid_t pid, uint64_t begin_ns, uint64_t end_ns) const;

 private:
  mutable std::mutex mutex_;
  std::map<pid_t, std::deque<Interval>> stops_;
};

// CLOCK_MONOTONIC now, in nanoseconds.
uint64_t monotonic_now_ns();

}  // namespace xref::serve
