#include "probe/engine.h"

#include <unistd.h>

#include "probe/bpf_engine.h"
#include "probe/tracefs/engine.h"

namespace xref {
namespace {

ProbeTracefsOptions tracefs_options(const ProbeRequest& request, pid_t pid) {
  ProbeTracefsOptions options;
  options.pid = pid;
  options.helper_pid = getpid();
  options.ringbuf_bytes = request.ringbuf_bytes;
  options.tally.every = request.every;
  options.tally.first = request.first;
  options.tally.until_hits = request.until_hits;
  options.tally.max_records = request.max_events;
  return options;
}

// BPF refused for want of privilege or kernel support: what tracefs may
// do instead. Anything else (a target gone, a verifier bug, an address no
// uprobe may go at) would fail the same way or say more as it is.
bool bpf_unusable(const Error& error) {
  return error.code == ErrorCode::permission_denied || error.code == ErrorCode::unsupported;
}

}  // namespace

Result<std::unique_ptr<ProbeEngine>> start_probe_engine(const ProbePlan& plan, const ProbeRequest& request,
                                                        const ProbeEngineOptions& options, ProbeRecordSink sink) {
  if (request.backend == "tracefs") return start_tracefs_probe_engine(plan, tracefs_options(request, options.pid), sink);
  ProbeBpfOptions bpf;
  bpf.pid = options.pid;
  bpf.backend = request.backend;
  bpf.every = request.every;
  bpf.first = request.first;
  bpf.until_hits = request.until_hits;
  bpf.max_records = request.max_events;
  bpf.ringbuf_bytes = request.ringbuf_bytes;
  bpf.stop_signal = XREF_PROBE_STOP_SIGNAL;
  bpf.stop_skip = request.stop_skip;
  bpf.stack_depth = static_cast<uint32_t>(request.stacks);
  auto engine = start_bpf_probe_engine(plan, bpf, sink);
  if (engine || request.backend != "auto" || !bpf_unusable(engine.error()) || plan.stop_filter || request.stacks != 0 ||
      (options.tracefs_fallback && !options.tracefs_fallback())) {
    return engine;
  }
  ProbeTracefsOptions fallback = tracefs_options(request, options.pid);
  fallback.fallback_from = engine.error().message;
  auto tracefs = start_tracefs_probe_engine(plan, fallback, sink);
  if (tracefs) return tracefs;
  // Neither: BPF's error first, it is what auto means.
  Error error = engine.error();
  error.message += "; tracefs cannot be used either: " + tracefs.error().message;
  return error;
}

}  // namespace xref
