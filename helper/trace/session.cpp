#include "trace/session.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "attach/stop_signals.h"
#include "trace/bpf_engine.h"
#include "trace/tracefs/engine.h"

namespace xref {
namespace {

constexpr int kDrainIntervalMs = 20;
constexpr int kIdentityCheckMs = 250;  // how often the target is checked for an exec

// Takes one pending stop out of a signalfd or an eventfd.
void consume_one(int fd) {
  uint8_t buffer[128];
  (void)!read(fd, buffer, sizeof buffer);
}

Result<std::unique_ptr<TraceEngine>> start_engine(const Target& target, const TracePlan& plan,
                                                  const TraceRequest& request, EventSink& sink) {
  if (request.backend == "tracefs") {
    TracefsEngineOptions options;
    options.pid = target.process.pid();
    options.helper_pid = getpid();
    options.ringbuf_bytes = request.ringbuf_bytes;
    options.max_events = request.max_events;
    options.max_windows = request.max_windows;
    return start_tracefs_engine(plan, options, sink);
  }
  TraceBpfOptions options;
  options.pid = target.process.pid();
  for (const PlanModule& module : plan.modules) options.module_paths.push_back(module.module->open_path);
  options.max_events = request.max_events;
  // --here opens one window and ends when it closes, unless told otherwise.
  options.max_windows = plan.here && request.max_windows == 0 ? 1 : request.max_windows;
  options.ringbuf_bytes = request.ringbuf_bytes;
  options.backend = request.backend;
  return start_bpf_engine(plan, options, sink);
}

}  // namespace

Result<TraceRun> run_trace(const Target& target, const TracePlan& plan, const TraceRequest& request,
                           const TraceCallbacks& callbacks) {
  // The CLI stops on SIGINT/SIGTERM; under xref serve the caller's
  // descriptor does, and the process's signals are the server's business.
  std::optional<StopSignals> signals;
  if (callbacks.cancel_fd < 0) signals.emplace();
  const int stop_fd = callbacks.cancel_fd >= 0 ? callbacks.cancel_fd : signals->fd();
  const std::string stop_name = callbacks.cancel_fd >= 0 ? callbacks.cancel_reason : "interrupted";
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  TraceRun run;
  run.windows = std::make_unique<WindowCollector>(plan);
  EventSink sink(*run.windows, callbacks.window_closed);
  auto engine = start_engine(target, plan, request, sink);
  if (!engine) {
    // A target that exits during the attach makes /proc/PID/exe vanish;
    // say that, not whatever the kernel's path lookup reported.
    if (auto alive = target.process.recheck(); !alive) return alive.error();
    return engine.error();
  }
  run.backend = (*engine)->backend();
  // Attached after the identity check: make sure the PID did not change
  // hands in between, or the probes sit in a stranger's process.
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  TraceAttachInfo attached{run.backend, plan.probes.size(), 0};
  if (plan.here) {
    auto window = (*engine)->open_here(*plan.here);
    if (!window) {
      (*engine)->detach();
      return window.error();
    }
    attached.here_window = *window;
  }
  if (callbacks.attached) callbacks.attached(attached);

  const auto started = std::chrono::steady_clock::now();
  auto identity_checked = started;
  // poll ignores a negative descriptor: no drain requests from the CLI.
  pollfd watched[3] = {{target.process.pidfd(), POLLIN, 0}, {stop_fd, POLLIN, 0}, {callbacks.drain_fd, POLLIN, 0}};
  bool more = false;
  for (;;) {
    // With records still waiting (the target outruns the drain), only a
    // look at the descriptors between rounds: the deadline and the signals
    // are checked as often when the ring buffer never empties.
    const int ready = poll(watched, 3, more ? 0 : kDrainIntervalMs);
    auto drained = (*engine)->drain();
    if (!drained) return drained.error();
    more = *drained;
    if (ready > 0 && (watched[2].revents & POLLIN)) {
      uint64_t requests = 0;
      (void)!read(callbacks.drain_fd, &requests, sizeof requests);
      // A drain comes at a debugger's stop, when the threads are stopped:
      // what is left is finite. Frames the stop shows to be over (left by
      // longjmp, or by a jump no probe follows) end after it.
      while (more) {
        auto rest = (*engine)->drain();
        if (!rest) return rest.error();
        more = *rest;
      }
      (*engine)->settle_stopped_threads();
      if (callbacks.drained) callbacks.drained((*engine)->counters().stopped);
    }
    // A bound reached by the engine came first if it is already set.
    const TraceCounters counters = (*engine)->counters();
    if (counters.stopped) {
      run.stop_reason = counters.stop_reason == XREF_STOP_MAX_EVENTS ? "max_events" : "max_windows";
      break;
    }
    if (ready > 0 && (watched[0].revents & POLLIN)) {
      run.target_exited = true;
      run.stop_reason = "target_exited";
      break;
    }
    if (ready > 0 && (watched[1].revents & POLLIN)) {
      consume_one(stop_fd);  // a later one may stop what comes after the trace
      run.stop_reason = stop_name;
      break;
    }
    if (callbacks.output_closed && callbacks.output_closed()) {
      run.stop_reason = "output_closed";
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (request.duration_ms > 0 &&
        std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count() >=
            static_cast<long>(request.duration_ms)) {
      run.stop_reason = "duration";
      break;
    }
    // An exec keeps the PID but takes every probe away with the old image.
    if (now - identity_checked >= std::chrono::milliseconds(kIdentityCheckMs)) {
      identity_checked = now;
      if (auto same = target.process.recheck(); !same && same.error().code == ErrorCode::process_changed) {
        run.target_changed = same.error();
        run.stop_reason = "target_changed";
        break;
      }
    }
  }
  (*engine)->detach();
  // What was recorded before the detach.
  if (auto drained = (*engine)->drain(); !drained) return drained.error();
  run.counters = (*engine)->counters();
  run.windows->apply_results((*engine)->window_results());
  run.backend_details = (*engine)->details();
  run.elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  return run;
}

}  // namespace xref
