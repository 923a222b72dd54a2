// The loop every live command runs between attach and detach: drain the
// engine in bounded rounds on a short timer (back to back while records
// wait), and between rounds look at what ends the run - the engine's own
// bound, the target's exit, a stop (SIGINT/SIGTERM, or a front end's
// session.stop), the reader gone, the deadline, an exec. Nothing here
// knows what the engine records; trace and probe hand it their hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "process_identity.h"
#include "result.h"

namespace xref {

struct RunLoopStops {
  const ProcessHandle* process = nullptr;  // its pidfd ends the run at exit; rechecked for an exec
  int stop_fd = -1;                        // readable: stop; one pending stop is read from it
  std::string stop_name = "interrupted";
  int drain_fd = -1;                       // readable (an eventfd): a front end asks for a whole drain now
  int wake_fd = -1;                        // readable: records wait that must be taken now, not at the timer
  uint64_t duration_ms = 0;                // 0: no deadline
  // How long the loop sleeps when nothing wakes it (every descriptor above
  // wakes it at once): the engine's drain timer, for records that wake no one.
  uint64_t drain_interval_ms = 20;
  std::function<bool()> output_closed;     // true once the output's reader went away
};

struct RunLoopHooks {
  std::function<Result<bool>()> drain;                // one bounded round; true when records remain
  std::function<Result<void>()> drain_requested;      // after drain_fd: the rest is drained, then this
  std::function<std::optional<std::string>()> bound;  // the engine's own bound, reached: its stop reason
  std::function<void()> tick;                         // after each round (heartbeats)
  std::function<void()> woken;                        // wake_fd was readable: take its readiness out
};

struct RunLoopEnd {
  // the bound's reason, "target_exited", the stop name, "output_closed",
  // "duration" or "target_changed"
  std::string stop_reason;
  bool target_exited = false;
  std::optional<Error> target_changed;  // process_changed: the target called exec
};

Result<RunLoopEnd> run_loop(const RunLoopStops& stops, const RunLoopHooks& hooks);

// A period on a run's clock (heartbeats, a status line): due once per
// period, at its multiples, however late the look. Period 0: never.
class Every {
 public:
  explicit Every(uint64_t period_ms) : period_ms_(period_ms), next_ms_(period_ms) {}
  bool due(uint64_t now_ms) {
    if (period_ms_ == 0 || now_ms < next_ms_) return false;
    next_ms_ = (now_ms / period_ms_ + 1) * period_ms_;
    return true;
  }

 private:
  uint64_t period_ms_;
  uint64_t next_ms_;
};

}  // namespace xref
