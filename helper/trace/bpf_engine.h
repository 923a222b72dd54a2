// The BPF backends (uprobe_multi, perf_uprobe) as a TraceEngine: the trace
// program and its ring buffer, drained into the sink.
#pragma once

#include <memory>

#include "trace/bpf.h"
#include "trace/engine.h"

namespace xref {

Result<std::unique_ptr<TraceEngine>> start_bpf_engine(const TracePlan& plan, const TraceBpfOptions& options,
                                                      EventSink& sink);

}  // namespace xref
