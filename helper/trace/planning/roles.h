// The roles of trace's probes (trace_abi.h, XREF_PROBE_*). One address can
// play several roles - a thunk's first instruction is its entry and its
// tail jump; the return site of one call is the call site of the next; a
// tail jump of a start function is also a tail-call site in call-site mode -
// and the BPF program acts on them in one order: they are merged into one
// chain (PlannedProbe::head/next), never refused. How they merge is the
// trace program's own semantics (a return site before a --stop before an
// entry; a stop never where windows open), so it stays with trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "disassembly.h"
#include "fetch_spec.h"
#include "trace/plan.h"
#include "trace/planning/state.h"

namespace xref {

// Adds one role of `function` at `va` in `code` (checked: an instruction
// start, not int3), merged into the chain of any role already there;
// state.last_role is then the role added or merged into. An instruction the
// kernel will not probe moves a return site one instruction on, and leaves
// any other role out with a warning (a start role is an error).
Result<void> add_role(PlanState& state, const FunctionCode& code, const TracedFunction& function, uint64_t va,
                      uint8_t kind, uint8_t flags, bool start, const std::vector<FetchItem>& fetches);

// The head of the roles at `va` in the module, if any (uretprobes are never
// heads of a chain).
std::optional<size_t> head_at(const TracePlan& plan, uint32_t module_index, uint64_t va);

// The TAIL_EXIT role add_role just placed for `function` at `va` jumps to
// `target_va` (a role merged into a tail-call site, or left out because the
// kernel refuses the instruction, has no tail target to keep).
void set_tail_target(PlanState& state, const TracedFunction& function, uint64_t va, uint64_t target_va);

// "entry of", "call site of": what a role is, for messages.
const char* role_label(uint8_t kind);

}  // namespace xref
