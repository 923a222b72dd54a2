// The stages of trace planning, in the order plan.cpp runs them, each over
// the shared PlanState (planning/state.h). Each adds to state.plan: functions,
// probes (through planning/roles.h) and warnings.
#pragma once

#include <string>
#include <vector>

#include "sites/function_names.h"
#include "disassembly.h"
#include "result.h"
#include "trace/planning/state.h"

namespace xref {

// starts.cpp: where windows open. --start FN, --start bp:N (a
// debugger breakpoint's locations) or --here (the debugger's stopped
// frame); returns the (first) start function.
Result<ModuleFunction> resolve_start(PlanState& state);

// starts.cpp: the start probes inside `function` (breakpoint
// locations past its entry): the frame's entry sp comes from the .eh_frame
// CFA rule at each.
Result<void> add_mid_function_starts(PlanState& state, const FunctionCode& code, const TracedFunction& function);

// starts.cpp: a --start bp:N location of the function `key` is at `va`.
bool start_site_at(const PlanState& state, uint64_t key, uint64_t va);

// fetches.cpp: --fetch and --start-filter, compiled.
Result<void> parse_start_fetches(PlanState& state);

// fetches.cpp: --fetch-at and --fetch-ret, onto the traced functions
// (which they may add) or, in call-site mode, onto the call sites of a
// callee that is not traced itself.
Result<void> apply_fetch_options(PlanState& state);

// function_probes.cpp: --functions: lists of names split at top-level commas.
std::vector<std::string> split_function_list(const std::string& list);

// function_probes.cpp: every traced function's entry, rets and tail exits.
Result<void> add_function_probes(PlanState& state);

// call_site_probes.cpp: --callees-of FN --depth N / --all-calls-in FN.
Result<void> add_call_site_probes(PlanState& state);

// ends.cpp: --stop ADDR.
Result<void> add_stop_probe(PlanState& state);

// continuations.cpp: the functions a start function's tail jumps hand
// its frame to.
Result<void> add_continuations(PlanState& state);

// ends.cpp: where the runtime catches or passes on a C++ exception.
void add_unwind_checks(PlanState& state);

// ends.cpp: where the callers of a function that can leave through a
// pointer run again after its call (XREF_PROBE_RESUME).
void add_resume_sites(PlanState& state);
// continuations.cpp: each tail exit names the function its frame
// continues in, when the plan has it.
void name_tail_targets(PlanState& state);

}  // namespace xref
