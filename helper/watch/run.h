// What `xref watch` does between attach and detach: the engine drained in
// bounded rounds (attach/run_loop.h), every write kept in the order seen;
// the last known bytes of each range kept from the records, and re-read at
// each drain, so a change no record explains (the kernel, code outside
// --in) becomes an unobserved_change; a --follow slot's new pointer moves
// its dependent range (a rearm record).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "process/target.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

// Per range, what the unobserved-change check could do.
struct WatchRangeState {
  uint64_t unobserved = 0;     // unobserved changes reported
  uint64_t rearms = 0;
  uint64_t unwatched_ns_longest = 0;
  uint64_t resyncs = 0;        // the check took the bytes as they are, without a report (records were sampled or lost)
  bool parked = false;         // a --follow target whose slot held 0 at the end
  uint64_t address = 0;        // where it was at the end
  uint32_t generation = 0;
  std::vector<uint64_t> addresses;  // where it was at each generation ([0]: at arm; 0: parked)
};

// A front end asks for store sites to be taken out (xref serve's
// session.release: a debugger's breakpoint goes there).
struct WatchReleaseAsk {
  std::vector<uint32_t> sites;  // into WatchPlan::sites
  std::string reason;
};

// What one release did; `error` when the engine cannot take sites out (the
// run then ends, "released").
struct WatchReleaseDone {
  std::vector<uint32_t> sites;
  uint64_t at_ms = 0;           // since arming
  uint64_t gap_us = 0;          // the sites left were out this long (a link is replaced whole)
  bool process_stopped = false; // every thread was stopped meanwhile: no write was missed
  std::optional<Error> error;
};

struct WatchRun {
  std::string backend;
  std::string backend_reason;
  std::string stop_reason;     // until_hits, max_events, duration, interrupted, target_exited, target_changed, output_closed
  bool target_exited = false;
  std::optional<Error> target_changed;
  uint64_t elapsed_ms = 0;
  uint64_t armed_ns = 0;       // CLOCK_MONOTONIC at arm
  std::vector<WatchRecord> records;  // writes, unobserved changes and rearms, in the order seen
  std::vector<WatchRangeCounts> counts;
  std::vector<WatchStackCount> stacks;  // --callers: per writer site
  std::vector<WatchRangeState> ranges;
  bool unobserved_exact = true;  // every write was recorded: the check compares exactly
  std::vector<std::string> warnings;
  std::optional<WatchStop> stop;   // --stop-when, once it fired
  std::vector<WatchReleaseDone> released;  // sites a debugger's breakpoint took over, in order
  std::vector<std::string> released_reasons;
};

struct WatchCallbacks {
  int cancel_fd = -1;
  std::string cancel_reason = "interrupted";
  std::function<void(const std::string& backend, size_t sites)> attached;
  // Readable (an eventfd): a front end asks for the writes so far (xref
  // serve, at a debugger stop). The ring buffer is drained whole, then
  // `drained` gets the run so far; `ending` when --until-hits is reached.
  int drain_fd = -1;
  std::function<void(const WatchRun& so_far, bool ending)> drained;
  // At the same eventfd: releases (each answered by `released` once the
  // uprobes are out), and whether a drain waits too (unset: yes).
  std::function<std::vector<WatchReleaseAsk>()> take_releases;
  std::function<void(const WatchRun& so_far, const WatchReleaseDone& done)> released;
  std::function<bool()> drain_waiting;
  std::function<bool()> output_closed;
  // --jsonl: each record as it is kept, with the run so far (where moved ranges were)
  std::function<void(const WatchRecord& record, const WatchRun& run)> streamed;
};

Result<WatchRun> run_watch(const Target& target, WatchPlan& plan, const WatchRequest& request,
                           const WatchBackendChoice& choice, const WatchCallbacks& callbacks);

}  // namespace xref
