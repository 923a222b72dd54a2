#include "probe/session.h"

#include <chrono>

#include "attach/run_loop.h"
#include "attach/stop_signals.h"
#include "monotonic_clock.h"
#include "process/thread_states.h"

namespace xref {
namespace {

// The backend's warnings in place of those it gave before: they are read
// again at the end (tracefs: the records lost by then).
void put_backend_warnings(ProbePlan& plan, size_t first, const ProbeEngine& engine) {
  plan.warnings.resize(first);
  const std::vector<std::string> warnings = engine.warnings();
  plan.warnings.insert(plan.warnings.end(), warnings.begin(), warnings.end());
}

}  // namespace

Result<ProbeRun> run_probe(const Target& target, ProbePlan& plan, const ProbeRequest& request,
                           const ProbeCallbacks& callbacks) {
  std::optional<StopSignals> signals;
  if (callbacks.cancel_fd < 0) signals.emplace();
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  ProbeRun run;
  ProbeEngineOptions options;
  options.pid = target.process.pid();
  options.tracefs_fallback = callbacks.tracefs_fallback;
  auto engine = start_probe_engine(plan, request, options,
                                   [&run](ProbeRecord&& record) { run.records.push_back(std::move(record)); });
  if (!engine) {
    // A target that exits during the attach: say that.
    if (auto alive = target.process.recheck(); !alive) return alive.error();
    return engine.error();
  }
  // Attached after the identity check: the PID must not have changed hands.
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  const size_t plan_warnings = plan.warnings.size();
  put_backend_warnings(plan, plan_warnings, **engine);
  run.backend = (*engine)->backend();
  if (auto armed = (*engine)->arm(); !armed) return armed.error();
  if (callbacks.attached) callbacks.attached(run.backend, plan.sites.size());

  // One clock for heartbeats, drains and the result: their rates are
  // differences of these times.
  const auto started = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  };
  RunLoopStops stops;
  stops.process = &target.process;
  stops.stop_fd = callbacks.cancel_fd >= 0 ? callbacks.cancel_fd : signals->fd();
  stops.stop_name = callbacks.cancel_fd >= 0 ? callbacks.cancel_reason : "interrupted";
  stops.duration_ms = request.duration_ms;
  stops.output_closed = callbacks.output_closed;
  stops.drain_fd = callbacks.drain_fd;
  RunLoopHooks hooks;
  // A release the engine cannot do ends the run: every site's counts kept.
  bool release_ends = false;
  auto release = [&](const ProbeReleaseAsk& ask) {
    ProbeReleaseDone done;
    const uint64_t at_ms = elapsed_ms();
    const bool stopped_before = every_thread_stopped(target.process.pid());
    const uint64_t out_ns = monotonic_ns();
    if (ask.sites.empty()) {
      // Nothing of this run is there (or it is out already).
    } else if (auto out = (*engine)->release(ask.sites); !out) {
      done.error = out.error();
      release_ends = true;
    }
    done.gap_us = (monotonic_ns() - out_ns) / 1000;
    done.process_stopped = stopped_before && every_thread_stopped(target.process.pid());
    // Read after: a released site counts nothing more.
    const std::vector<xref_probe_counts> counts = (*engine)->site_counts();
    for (uint32_t site : ask.sites) {
      ReleasedSite released{site, at_ms, ask.reason, site < counts.size() ? counts[site] : xref_probe_counts{}};
      done.sites.push_back(released);
      if (!done.error) run.released.push_back(std::move(released));
    }
    run.elapsed_ms = at_ms;
    run.counts = (*engine)->counts();
    if (callbacks.released) callbacks.released(run, done);
  };
  hooks.drain_requested = [&]() -> Result<void> {
    if (callbacks.take_releases) {
      for (const ProbeReleaseAsk& ask : callbacks.take_releases()) release(ask);
    }
    if (callbacks.drained && (!callbacks.drain_waiting || callbacks.drain_waiting())) {
      if (auto settled = (*engine)->settle(); !settled) return settled;
      run.elapsed_ms = elapsed_ms();
      run.counts = (*engine)->counts();
      run.samples_not_kept = (*engine)->samples_not_kept();
      run.stop = (*engine)->stop();
      put_backend_warnings(plan, plan_warnings, **engine);
      callbacks.drained(run, (*engine)->until_hits_reached());
    }
    return {};
  };
  hooks.drain = [&]() -> Result<bool> { return (*engine)->drain(); };
  hooks.bound = [&]() -> std::optional<std::string> {
    if ((*engine)->until_hits_reached()) return std::string("until_hits");
    if (release_ends) return std::string("released");
    return std::nullopt;
  };
  Every heartbeats(callbacks.heartbeat ? callbacks.heartbeat_ms : 0);
  Every status(callbacks.status ? callbacks.status_ms : 0);
  hooks.tick = [&] {
    const uint64_t now = elapsed_ms();
    const bool heartbeat_due = heartbeats.due(now), status_due = status.due(now);
    if (!heartbeat_due && !status_due) return;
    const std::vector<xref_probe_counts> counts = (*engine)->site_counts();
    if (heartbeat_due) callbacks.heartbeat(now, counts);
    if (status_due) callbacks.status(now, counts);
  };
  auto ended = run_loop(stops, hooks);
  const uint64_t loop_ended_ns = monotonic_ns();
  (*engine)->detach();
  run.elapsed_ms = elapsed_ms();
  if (!ended) return ended.error();
  run.stop_reason = ended->stop_reason;
  run.target_exited = ended->target_exited;
  run.target_changed = ended->target_changed;
  // What was recorded before the detach.
  if (auto drained = (*engine)->drain(); !drained) return drained.error();
  // A bound reached before the loop stopped came first, as it does when
  // the engine sets it at the hit: the run ended there.
  if (auto reached = (*engine)->until_hits_reached_at(); reached && *reached <= loop_ended_ns) {
    run.stop_reason = "until_hits";
    run.target_exited = false;
    run.target_changed.reset();
  }
  run.counts = (*engine)->counts();
  run.samples_not_kept = (*engine)->samples_not_kept();
  run.stop = (*engine)->stop();
  put_backend_warnings(plan, plan_warnings, **engine);
  return run;
}

}  // namespace xref
