#include "attach/run_loop.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace xref {
namespace {

constexpr int kIdentityCheckMs = 250;  // how often the target is checked for an exec

// Takes one pending stop out of a signalfd or an eventfd.
void consume_one(int fd) {
  uint8_t buffer[128];
  (void)!read(fd, buffer, sizeof buffer);
}

}  // namespace

Result<RunLoopEnd> run_loop(const RunLoopStops& stops, const RunLoopHooks& hooks) {
  RunLoopEnd end;
  const auto started = std::chrono::steady_clock::now();
  auto identity_checked = started;
  // poll ignores a negative descriptor: no drain requests from the CLI.
  pollfd watched[4] = {{stops.process->pidfd(), POLLIN, 0},
                       {stops.stop_fd, POLLIN, 0},
                       {stops.drain_fd, POLLIN, 0},
                       {stops.wake_fd, POLLIN, 0}};
  bool more = false;
  for (;;) {
    // With records still waiting (the target outruns the drain), only a
    // look at the descriptors between rounds: the deadline and the signals
    // are checked as often when the ring buffer never empties.
    int timeout_ms = static_cast<int>(stops.drain_interval_ms);
    if (stops.duration_ms > 0) {  // the deadline is not overslept
      const auto so_far = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
      const uint64_t left = stops.duration_ms - std::min<uint64_t>(stops.duration_ms, static_cast<uint64_t>(so_far.count()));
      timeout_ms = static_cast<int>(std::min<uint64_t>(stops.drain_interval_ms, left));
    }
    const int ready = poll(watched, 4, more ? 0 : timeout_ms);
    if (ready > 0 && (watched[3].revents & POLLIN) && hooks.woken) hooks.woken();
    auto drained = hooks.drain();
    if (!drained) return drained.error();
    more = *drained;
    if (ready > 0 && (watched[2].revents & POLLIN)) {
      uint64_t requests = 0;
      (void)!read(stops.drain_fd, &requests, sizeof requests);
      // A drain comes at a debugger's stop, when the threads are stopped:
      // what is left is finite.
      while (more) {
        auto rest = hooks.drain();
        if (!rest) return rest.error();
        more = *rest;
      }
      if (hooks.drain_requested) {
        if (auto done = hooks.drain_requested(); !done) return done.error();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count());
    if (hooks.tick) hooks.tick();
    // A bound reached by the engine came first if it is already set.
    if (hooks.bound) {
      if (auto reason = hooks.bound()) {
        end.stop_reason = *reason;
        break;
      }
    }
    if (ready > 0 && (watched[0].revents & POLLIN)) {
      end.target_exited = true;
      end.stop_reason = "target_exited";
      break;
    }
    if (ready > 0 && (watched[1].revents & POLLIN)) {
      consume_one(stops.stop_fd);  // a later one may stop what comes after the run
      end.stop_reason = stops.stop_name;
      break;
    }
    if (stops.output_closed && stops.output_closed()) {
      end.stop_reason = "output_closed";
      break;
    }
    if (stops.duration_ms > 0 && elapsed_ms >= stops.duration_ms) {
      end.stop_reason = "duration";
      break;
    }
    // An exec keeps the PID but takes every probe away with the old image.
    if (now - identity_checked >= std::chrono::milliseconds(kIdentityCheckMs)) {
      identity_checked = now;
      if (auto same = stops.process->recheck(); !same && same.error().code == ErrorCode::process_changed) {
        end.target_changed = same.error();
        end.stop_reason = "target_changed";
        break;
      }
    }
  }
  return end;
}

}  // namespace xref
