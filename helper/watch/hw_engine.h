// The `hw` engine of xref watch: x86 debug registers through perf
// breakpoint events (watch/hw_breakpoints.h), one per range per thread, and
// bpf/watch_hw.bpf.c on each, which reads the bytes after the write and
// keeps the previous ones per range, so every record is old -> new. The
// trap comes after the write: the writer is the instruction before the trap
// pc (sites/trap_writer.h).
//
// Only where the registers fire (attach/breakpoint_self_test, doctor's
// self-test) and where the ranges meet the x86 rules (watch/hw_rules.h).
#pragma once

#include <memory>
#include <string>

#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

// Whether `auto` may choose hw for this plan, and why (or why not) in the
// words the result prints: "debug registers fire here (doctor's self-test
// counted 100 of 100 writes) and 2 ranges fit 4 free" / "debug registers do
// not fire here: doctor's self-test counted 0 of 100 writes".
struct HwWatchFit {
  bool fits = false;
  std::string reason;
  Error refusal;  // when it does not fit: the error `--backend hw` gets
};

HwWatchFit hw_watch_fit(const WatchPlan& plan, const WatchRequest& request);

// --backend hw (and `auto` when hw_watch_fit says so): the x86 rules first
// (debug_register_rule, debug_registers_exhausted), then the self-test
// (debug_registers_do_not_fire), then every thread's breakpoints, disabled
// for recording until arm().
Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine(const WatchPlan& plan, const WatchRequest& request,
                                                           WatchRecordSink sink);

// The same without asking the self-test (the x86 rules still hold), for the
// tests that count breakpoints, their inherited copies and their removal on
// a host where they do not fire. xref watch never calls it.
Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine_untested(const WatchPlan& plan,
                                                                    const WatchRequest& request,
                                                                    WatchRecordSink sink);

}  // namespace xref
