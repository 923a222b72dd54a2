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

#include "process/target.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

// Whether x86 debug registers fire on this host: the live self-test
// (attach/breakpoint_self_test), run once per helper; `words` says what it
// counted ("doctor's self-test counted 0 of 100 writes").
bool hardware_breakpoints_fire(std::string& words);

// Whether the plan fits the debug registers (watch/hw_rules.h: lengths
// 1/2/4/8 aligned, the access, the free slots): debug_register_rule or
// debug_registers_exhausted naming what does not.
Result<void> hw_request_fits(const WatchPlan& plan, const WatchRequest& request);

// --backend hw on a host where the registers do not fire: the refusal
// (debug_registers_do_not_fire) naming the self-test's count. Ok where they
// fire.
Result<void> hw_registers_fire();

// --backend hw (and `auto` where they fire and the ranges fit): the x86
// rules, the self-test, then every thread's breakpoints, recording from
// arm().
Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine(const Target& target, const WatchPlan& plan,
                                                           const WatchRequest& request, WatchRecordSink sink);

// The same without asking the self-test (the x86 rules still hold), for the
// tests that count breakpoints, their inherited copies and their removal on
// a host where they do not fire. xref watch never calls it.
Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine_untested(const WatchPlan& plan,
                                                                    const WatchRequest& request,
                                                                    WatchRecordSink sink);

}  // namespace xref
