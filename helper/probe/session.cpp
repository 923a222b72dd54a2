#include "probe/session.h"

#include <chrono>
#include <cstring>

#include "attach/ring_drain.h"
#include "attach/run_loop.h"
#include "attach/stop_signals.h"

namespace xref {
namespace {

ProbeRecord decode(const xref_probe_record& raw, const ProbePlan& plan) {
  ProbeRecord record;
  record.site = raw.site;
  record.tid = raw.tid;
  record.hit = raw.hit;
  record.timestamp_ns = raw.timestamp_ns;
  record.return_address = raw.return_address;
  record.fetches = fetched_values(plan.fetches, raw.fetch_count, raw.failed, raw.values, raw.errors);
  if (raw.has_regs) record.regs.assign(raw.regs, raw.regs + XREF_PROBE_REG_WORDS);
  return record;
}

std::optional<ProbeStop> decode_stop(const std::optional<xref_probe_stop>& raw, const ProbePlan& plan) {
  if (!raw) return std::nullopt;
  ProbeStop stop;
  stop.site = raw->site;
  stop.tid = raw->tid;
  stop.hit = raw->hit;
  stop.match = raw->match;
  stop.timestamp_ns = raw->timestamp_ns;
  stop.return_address = raw->return_address;
  stop.signal_result = raw->signal_result;
  stop.fetches = fetched_values(plan.fetches, raw->fetch_count, raw->failed, raw->values, raw->errors);
  return stop;
}

}  // namespace

Result<ProbeRun> run_probe(const Target& target, const ProbePlan& plan, const ProbeRequest& request,
                           const ProbeCallbacks& callbacks) {
  std::optional<StopSignals> signals;
  if (callbacks.cancel_fd < 0) signals.emplace();
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  ProbeBpfOptions options;
  options.pid = target.process.pid();
  options.backend = request.backend;
  options.every = request.every;
  options.first = request.first;
  options.until_hits = request.until_hits;
  options.max_records = request.max_events;
  options.ringbuf_bytes = request.ringbuf_bytes;
  options.stop_signal = XREF_PROBE_STOP_SIGNAL;
  options.stop_skip = request.stop_skip;
  auto bpf = ProbeBpf::start(plan, options);
  if (!bpf) {
    // A target that exits during the attach: say that.
    if (auto alive = target.process.recheck(); !alive) return alive.error();
    return bpf.error();
  }
  // Attached after the identity check: the PID must not have changed hands.
  if (auto alive = target.process.recheck(); !alive) return alive.error();

  ProbeRun run;
  run.backend = (*bpf)->backend();
  auto ring = RingDrain::open((*bpf)->ringbuf_fd(), [&](const void* data, size_t size) {
    if (size < sizeof(xref_probe_record)) return;
    xref_probe_record raw;
    std::memcpy(&raw, data, sizeof raw);
    run.records.push_back(decode(raw, plan));
  });
  if (!ring) return ring.error();
  (*bpf)->arm();
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
  hooks.drain_requested = [&]() -> Result<void> {
    if (callbacks.drained) {
      run.elapsed_ms = elapsed_ms();
      run.counts = (*bpf)->counts(plan.sites.size());
      run.samples_not_kept = (*bpf)->samples_over_limit();
      run.stop = decode_stop((*bpf)->stop(), plan);
      callbacks.drained(run, (*bpf)->until_hits_reached());
    }
    return {};
  };
  hooks.drain = [&]() -> Result<bool> { return (*ring)->round(); };
  hooks.bound = [&]() -> std::optional<std::string> {
    if ((*bpf)->until_hits_reached()) return std::string("until_hits");
    return std::nullopt;
  };
  uint64_t next_heartbeat = callbacks.heartbeat_ms;
  if (callbacks.heartbeat_ms > 0 && callbacks.heartbeat) {
    hooks.tick = [&] {
      const uint64_t now = elapsed_ms();
      if (now < next_heartbeat) return;
      next_heartbeat = (now / callbacks.heartbeat_ms + 1) * callbacks.heartbeat_ms;
      callbacks.heartbeat(now, (*bpf)->site_counts(plan.sites.size()));
    };
  }
  auto ended = run_loop(stops, hooks);
  (*bpf)->detach();
  run.elapsed_ms = elapsed_ms();
  if (!ended) return ended.error();
  run.stop_reason = ended->stop_reason;
  run.target_exited = ended->target_exited;
  run.target_changed = ended->target_changed;
  // What was recorded before the detach.
  (*ring)->unbound();
  (*ring)->round();
  run.counts = (*bpf)->counts(plan.sites.size());
  run.samples_not_kept = (*bpf)->samples_over_limit();
  run.stop = decode_stop((*bpf)->stop(), plan);
  return run;
}

}  // namespace xref
