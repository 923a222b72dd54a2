// What run_probe drives: a backend that puts the plan's sites into the
// target, counts their hits and keeps samples. The BPF engine
// (bpf_engine.h) counts in the kernel and reads the samples from its ring
// buffer; the tracefs engine (tracefs/engine.h) gets every hit as a record
// of the kernel's uprobe events and counts in the helper, the same way.
// start_probe_engine chooses between them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attach/fetched_value.h"
#include "probe/bpf.h"
#include "probe/plan.h"
#include "probe/request.h"
#include "result.h"

namespace xref {

// One sample (a detail record), decoded.
struct ProbeRecord {
  uint32_t site = 0;
  uint32_t tid = 0;
  uint64_t hit = 0;
  uint64_t timestamp_ns = 0;
  uint64_t return_address = 0;  // live; 0 when not read
  std::vector<FetchedValue> fetches;
  std::vector<uint64_t> regs;   // pt_regs order, with --regs
};

// --stop-when: the hit that stopped its thread.
struct ProbeStop {
  uint32_t site = 0;
  uint32_t tid = 0;
  uint64_t hit = 0;             // its passing-hit number at its site
  uint64_t match = 0;           // the stop filter's passes, this one included (--skip + 1)
  uint64_t timestamp_ns = 0;
  uint64_t return_address = 0;  // live; 0 when not read
  int32_t signal_result = 0;    // 0: sent; else -errno
  std::vector<FetchedValue> fetches;
};

// Where an engine's samples go, in the order it takes them.
using ProbeRecordSink = std::function<void(ProbeRecord&& record)>;

class ProbeEngine {
 public:
  virtual ~ProbeEngine() = default;
  // "uprobe_multi", "perf_uprobe", "tracefs"
  virtual const std::string& backend() const = 0;
  // Every site is in: counting starts, for all of them at once.
  virtual Result<void> arm() = 0;
  // One bounded round of samples to the sink (and, for tracefs, of hits
  // counted): true when it stopped with more ready. After detach(),
  // everything, and false.
  virtual Result<bool> drain() = 0;
  // A front end's drain at a debugger stop, after drain() found nothing
  // more: whatever the kernel holds is counted now (the target's threads
  // are stopped, nothing comes after it).
  virtual Result<void> settle() { return {}; }
  virtual bool until_hits_reached() const = 0;
  // When the hit that reached --until-hits ran (CLOCK_MONOTONIC), for an
  // engine whose counts lag the hits (tracefs): the run loop may have seen
  // a stop first that came after it. Nothing from an engine whose bound is
  // set at the hit itself (BPF), or before the bound is reached.
  virtual std::optional<uint64_t> until_hits_reached_at() const { return std::nullopt; }
  // Stops counting, then takes the probes out: probes fire while they are
  // removed, and those hits would not cover every site.
  virtual void detach() = 0;
  // Takes the uprobes of `sites` (indexes into ProbePlan::sites) out of the
  // target for good while the others stay (a debugger's breakpoint goes
  // where they were); their counts so far stay. An engine that cannot (the
  // tracefs engine) says unsupported: the run then ends.
  virtual Result<void> release(const std::vector<uint32_t>& sites) {
    (void)sites;
    return make_error(ErrorCode::unsupported, "this backend cannot take single sites out");
  }
  virtual ProbeCounts counts() const = 0;
  // Only the per-site counts: cheap enough for heartbeats.
  virtual std::vector<xref_probe_counts> site_counts() const = 0;
  // Sampled hits past --max-events, kept by no record.
  virtual uint64_t samples_not_kept() const = 0;
  // --stop-when: the hit that stopped its thread, once it did.
  virtual std::optional<ProbeStop> stop() const { return std::nullopt; }
  // What the result must say about how this backend counted, as the
  // plan's warnings do ("tracefs_counts: ...").
  virtual std::vector<std::string> warnings() const { return {}; }
};

struct ProbeEngineOptions {
  pid_t pid = 0;
  // --backend auto when BPF cannot be used (permission, kernel): may it
  // count with tracefs instead? Unset: yes. `xref serve` says no while
  // another session of the helper uses tracefs (their names are the
  // helper's).
  std::function<bool()> tracefs_fallback;
};

// The request's backend; auto is BPF (uprobe_multi, else perf uprobes),
// and tracefs where BPF cannot be used and the request needs nothing only
// BPF does (--stop-when, --stacks).
Result<std::unique_ptr<ProbeEngine>> start_probe_engine(const ProbePlan& plan, const ProbeRequest& request,
                                                        const ProbeEngineOptions& options, ProbeRecordSink sink);

}  // namespace xref
