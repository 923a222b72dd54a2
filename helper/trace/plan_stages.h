// The stages of trace planning, in the order plan.cpp runs them, each over
// the shared PlanState (plan_state.h). Each adds to state.plan: functions,
// probes (through plan_roles.h) and warnings.
#pragma once

#include <string>
#include <vector>

#include "attach/function_names.h"
#include "disassembly.h"
#include "result.h"
#include "trace/plan_state.h"

namespace xref {

// plan_starts.cpp: where windows open. --start FN, --start bp:N (a
// debugger breakpoint's locations) or --here (the debugger's stopped
// frame); returns the (first) start function.
Result<ModuleFunction> resolve_start(PlanState& state);

// plan_starts.cpp: the start probes inside `function` (breakpoint
// locations past its entry): the frame's entry sp comes from the .eh_frame
// CFA rule at each.
Result<void> add_mid_function_starts(PlanState& state, const FunctionCode& code, const TracedFunction& function);

// plan_starts.cpp: a --start bp:N location of the function `key` is at `va`.
bool start_site_at(const PlanState& state, uint64_t key, uint64_t va);

// plan_fetches.cpp: --fetch and --start-filter, compiled.
Result<void> parse_start_fetches(PlanState& state);

// plan_fetches.cpp: --fetch-at and --fetch-ret, onto the traced functions
// (which they may add) or, in call-site mode, onto the call sites of a
// callee that is not traced itself.
Result<void> apply_fetch_options(PlanState& state);

// plan_functions.cpp: --functions: lists of names split at top-level commas.
std::vector<std::string> split_function_list(const std::string& list);

// plan_functions.cpp: every traced function's entry, rets and tail exits.
Result<void> add_function_probes(PlanState& state);

// plan_call_sites.cpp: --callees-of FN --depth N / --all-calls-in FN.
Result<void> add_call_site_probes(PlanState& state);

// plan_ends.cpp: --stop ADDR.
Result<void> add_stop_probe(PlanState& state);

// plan_continuations.cpp: the functions a start function's tail jumps hand
// its frame to.
Result<void> add_continuations(PlanState& state);

// plan_ends.cpp: where the runtime catches or passes on a C++ exception.
void add_unwind_checks(PlanState& state);

// plan_continuations.cpp: each tail exit names the function its frame
// continues in, when the plan has it.
void name_tail_targets(PlanState& state);

}  // namespace xref
