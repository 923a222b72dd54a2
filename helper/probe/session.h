// Runs one probe: attach (a BPF engine, or the tracefs engine: engine.h),
// drain in bounded rounds while the counts grow, stop at --until-hits, the
// deadline, Ctrl-C or the target's exit, then stop counting, detach, and
// read every count back.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probe/bpf.h"
#include "probe/engine.h"
#include "probe/plan.h"
#include "probe/request.h"
#include "process/target.h"
#include "result.h"

namespace xref {

// A site a debugger's breakpoint took over (xref serve's session.release):
// not observed since `at_ms`; its counts stop there.
struct ReleasedSite {
  uint32_t site = 0;            // into ProbePlan::sites
  uint64_t at_ms = 0;           // since arming, as ProbeRun::elapsed_ms
  std::string reason;           // "breakpoint 2"
  xref_probe_counts counts{};   // when it was taken out
};

// A front end asks for sites to be taken out.
struct ProbeReleaseAsk {
  std::vector<uint32_t> sites;  // into ProbePlan::sites
  std::string reason;
};

// What one release did. `error` when the engine cannot take single sites
// out: the run then ends ("released") with every site's counts.
struct ProbeReleaseDone {
  std::vector<ReleasedSite> sites;
  uint64_t gap_us = 0;          // the sites left were not observed for this long
  bool process_stopped = false; // every thread of the target was stopped meanwhile: no hit was missed
  std::optional<Error> error;
};

struct ProbeRun {
  std::string backend;
  std::string stop_reason;      // until_hits, duration, interrupted, target_exited, target_changed, output_closed
  bool target_exited = false;
  std::optional<Error> target_changed;
  uint64_t elapsed_ms = 0;      // from arming to the detach
  ProbeCounts counts;
  std::vector<ProbeRecord> records;
  uint64_t samples_not_kept = 0;  // sampled hits past --max-events
  std::optional<ProbeStop> stop;  // --stop-when, once it fired
  std::vector<ReleasedSite> released;  // sites a debugger's breakpoint took over, in order
};

struct ProbeCallbacks {
  std::function<void(const std::string& backend, size_t sites)> attached;
  int cancel_fd = -1;           // as TraceCallbacks: -1 means SIGINT/SIGTERM
  std::string cancel_reason = "stopped";
  std::function<bool()> output_closed;
  // Readable (an eventfd): a front end asks for the result so far (xref
  // serve's `drain`, sent when the process stops); `drained` gets it: every
  // count and aggregation map read now, the samples received, no stop
  // reason yet; `ending` when --until-hits is reached (the run ends at its
  // next look, without another hit counted).
  int drain_fd = -1;
  std::function<void(const ProbeRun& so_far, bool ending)> drained;
  // At the same eventfd: the releases asked for (take_releases), each
  // answered by `released` once its uprobes are out of the target; and
  // whether a drain waits too (unset: yes).
  std::function<std::vector<ProbeReleaseAsk>()> take_releases;
  std::function<void(const ProbeRun& so_far, const ProbeReleaseDone& done)> released;
  std::function<bool()> drain_waiting;
  // Every heartbeat_ms (0: never): the per-site counts so far. Times are
  // since the probes were armed, as ProbeRun::elapsed_ms.
  uint64_t heartbeat_ms = 0;
  std::function<void(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites)> heartbeat;
  // The same, every status_ms, for the CLI's status line on a terminal.
  uint64_t status_ms = 0;
  std::function<void(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites)> status;
  // --backend auto where BPF cannot be used: may it count with tracefs
  // (ProbeEngineOptions::tracefs_fallback)? Unset: yes.
  std::function<bool()> tracefs_fallback;
};

// What the backend must say about how it counted (with tracefs: from
// records, and how many were lost) joins plan.warnings, before `attached`
// and again at the end, so a renderer of `plan` shows it.
Result<ProbeRun> run_probe(const Target& target, ProbePlan& plan, const ProbeRequest& request,
                           const ProbeCallbacks& callbacks);

}  // namespace xref
