#include "trace/session.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "attach/run_loop.h"
#include "attach/stop_signals.h"
#include "trace/bpf_engine.h"
#include "trace/tracefs/engine.h"

namespace xref {
namespace {

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
  RunLoopStops stops;
  stops.process = &target.process;
  stops.stop_fd = stop_fd;
  stops.stop_name = stop_name;
  stops.drain_fd = callbacks.drain_fd;
  stops.duration_ms = request.duration_ms;
  stops.output_closed = callbacks.output_closed;
  RunLoopHooks hooks;
  hooks.drain = [&] { return (*engine)->drain(); };
  // Frames a debugger stop shows to be over (left by longjmp, or by a jump
  // no probe follows) end after a front end's drain.
  hooks.drain_requested = [&]() -> Result<void> {
    (*engine)->settle_stopped_threads();
    if (callbacks.drained) callbacks.drained((*engine)->counters().stopped);
    return {};
  };
  hooks.bound = [&]() -> std::optional<std::string> {
    const TraceCounters counters = (*engine)->counters();
    if (!counters.stopped) return std::nullopt;
    return counters.stop_reason == XREF_STOP_MAX_EVENTS ? "max_events" : "max_windows";
  };
  // Heartbeats and the status line: each on its own period, from one look
  // at the counts when either is due.
  Every heartbeats(callbacks.heartbeat ? callbacks.heartbeat_ms : 0);
  Every status(callbacks.status ? callbacks.status_ms : 0);
  hooks.tick = [&] {
    const auto now = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
    const bool heartbeat_due = heartbeats.due(now), status_due = status.due(now);
    if (!heartbeat_due && !status_due) return;
    const TraceCounters counters = (*engine)->counters();
    if (heartbeat_due) callbacks.heartbeat(now, counters);
    if (status_due) callbacks.status(now, counters);
  };
  auto ended = run_loop(stops, hooks);
  if (!ended) return ended.error();
  run.stop_reason = ended->stop_reason;
  run.target_exited = ended->target_exited;
  run.target_changed = ended->target_changed;
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
