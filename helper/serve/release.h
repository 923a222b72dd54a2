// Where a session's uprobes are, as live addresses: what a front end
// compares with its debugger's breakpoint locations before it asks for
// session.release (docs/protocol.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "probe/plan.h"
#include "process/target.h"
#include "trace/plan.h"

namespace xref::serve {

// Each site's live address, in the plan's order (0 where the module is not mapped).
std::vector<uint64_t> probe_site_lives(const Target& target, const ProbePlan& plan);
// Every attached trace probe's live address (one per address: roles share it).
std::vector<uint64_t> trace_probe_lives(const Target& target, const TracePlan& plan);
// The start answer's `probe_sites`: the distinct ones, as hex strings.
nlohmann::json probe_sites_json(const std::vector<uint64_t>& lives);

}  // namespace xref::serve
