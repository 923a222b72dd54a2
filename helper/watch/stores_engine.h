// The `stores` engine: bpf/watch_stores.bpf.c on every planned store site
// (one uprobe_multi link per module, or perf uprobes), the ranges in a map
// that --follow rewrites, the records through a ring buffer.
#pragma once

#include <memory>

#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

Result<std::unique_ptr<WatchEngine>> start_stores_watch_engine(const WatchPlan& plan, const WatchRequest& request,
                                                               WatchRecordSink sink);

}  // namespace xref
