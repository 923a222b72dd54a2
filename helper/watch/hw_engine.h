// The `hw` engine's seam (worker `hw` writes it: a perf breakpoint per
// range per thread, a BPF program on each). Until it lands here these are
// stubs (hw_engine.cpp): no debug registers, and --backend hw refused.
#pragma once

#include <memory>
#include <string>

#include "process/target.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

// Whether x86 debug registers fire on this host (the live self-test, run
// once per helper); `words` says what it counted ("doctor's self-test
// counted 0 of 100 writes").
bool hardware_breakpoints_fire(std::string& words);

// Whether the plan fits the debug registers (lengths 1/2/4/8 aligned, no
// more than the free slots, the access): the error names what does not.
Result<void> hw_request_fits(const WatchPlan& plan, const WatchRequest& request);

Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine(const Target& target, const WatchPlan& plan,
                                                           const WatchRequest& request, WatchRecordSink sink);

}  // namespace xref
