// The BPF backends (uprobe_multi, perf_uprobe) as a ProbeEngine: the probe
// program counts in its maps, its samples come through its ring buffer.
#pragma once

#include <memory>

#include "probe/bpf.h"
#include "probe/engine.h"

namespace xref {

Result<std::unique_ptr<ProbeEngine>> start_bpf_probe_engine(const ProbePlan& plan, const ProbeBpfOptions& options,
                                                            ProbeRecordSink sink);

}  // namespace xref
