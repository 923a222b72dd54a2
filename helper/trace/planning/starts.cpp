// Where windows open: the start function's entry, a debugger breakpoint's
// locations (`--start bp:N`), or the debugger's stopped frame (`--here`).
#include <algorithm>

#include "sites/breakpoints.h"
#include "sites/typed_address.h"
#include "cfa_rule.h"
#include "hex.h"
#include "trace/planning/here_cfa.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"

namespace xref {
namespace {

StartSite start_site(PlanState& state, const CodeSite& site) {
  StartSite start;
  static_cast<FunctionSymbol&>(start.function) = site.function;
  start.function.module_index = state.modules.index_of(site.module, site.image);
  start.static_va = site.static_va;
  start.at_entry = site.at_entry;
  return start;
}

// --here: the window is open from the start, on the stopped frame, and
// closes when that frame returns; by default it follows the callees of the
// frame's function two levels down.
Result<ModuleFunction> resolve_here(PlanState& state) {
  TraceRequest& request = state.request;
  const HereFrame& frame = *request.debugger.here;
  auto site = place_code_address(state.target, frame.pc, "--here: the frame's pc");
  if (!site) return site.error();
  auto cfa = here_cfa(state.target, frame, *site);
  if (!cfa) return cfa.error();
  if (cfa->cfa < 8) return make_error(ErrorCode::invalid_argument, "--here: the frame's CFA is not a stack address");
  if (!cfa->warning.empty()) state.plan.warnings.push_back(cfa->warning);
  StartSite here = start_site(state, *site);
  state.mid_start_functions.insert(function_key(here.function));
  state.plan.here = HereWindow{frame.tid, cfa->cfa - 8, 0};
  if (request.functions.empty() && request.callees_of.empty() && request.all_calls_in.empty()) {
    request.callees_of = here.function.module_index == 0
                             ? to_hex(here.function.start)
                             : site->module->name() + ":" + to_hex(here.function.start);
    if (request.depth == 0) request.depth = 2;
  }
  return here.function;
}

}  // namespace

Result<ModuleFunction> resolve_start(PlanState& state) {
  if (state.request.here) return resolve_here(state);
  if (auto breakpoint = breakpoint_reference(state.request.start)) {
    auto sites = breakpoint_sites(state.target, state.request.debugger, *breakpoint, "--start");
    if (!sites) return sites.error();
    for (const CodeSite& site : *sites) {
      StartSite start = start_site(state, site);
      if (start.at_entry) {
        state.start_entries.insert(function_key(start.function));
      } else {
        state.mid_start_functions.insert(function_key(start.function));
      }
      state.start_sites.push_back(start);
    }
    state.plan.breakpoints_to_disable.push_back(*breakpoint);
    return state.start_sites.front().function;
  }
  // NAME+OFF, or from a debugger a live address: the window opens at that
  // instruction, as at a breakpoint's location inside a function.
  if (names_instruction_address(state.request.start, state.request.debugger.present)) {
    auto placed = place_typed_address(state.modules, state.request.start, "--start", state.request.debugger.present);
    if (!placed) return placed.error();
    if (placed->at_entry) {
      state.start_entries.insert(function_key(placed->function));
      return placed->function;
    }
    StartSite start;
    start.function = placed->function;
    start.static_va = placed->static_va;
    start.at_entry = false;
    state.mid_start_functions.insert(function_key(start.function));
    state.start_sites.push_back(start);
    return start.function;
  }
  auto start = state.resolve(state.request.start, "--start");
  if (!start) return start.error();
  state.start_entries.insert(function_key(*start));
  return start;
}

namespace {

// The breakpoints with a location at `live_va`, enabled or not: the front
// end has already turned off the one the thread stopped at when it sends
// the context (it cannot know yet whether the plan probes there).
std::vector<uint32_t> breakpoints_at(const DebuggerContext& debugger, uint64_t live_va) {
  std::vector<uint32_t> ids;
  for (const DebuggerBreakpoint& breakpoint : debugger.breakpoints) {
    if (std::any_of(breakpoint.locations.begin(), breakpoint.locations.end(),
                    [&](const DebuggerBreakpointLocation& location) { return location.address == live_va; })) {
      ids.push_back(breakpoint.id);
    }
  }
  return ids;
}

}  // namespace

// The front end turns the breakpoint off before the probes go in (a uprobe
// beside it would swallow it, and the debugger's int3 written back over the
// uprobe's would hide the probe) and on again when the session ends, as
// --start bp:N's. The stopped thread, resumed, is no longer on a breakpoint:
// it runs into the probe, so the window sees the instruction it stopped at.
void hand_over_here_breakpoint(PlanState& state, const std::vector<uint64_t>& probed_live_vas) {
  const std::optional<HereFrame>& here = state.request.debugger.here;
  if (!state.plan.here || !here ||
      std::find(probed_live_vas.begin(), probed_live_vas.end(), here->pc) == probed_live_vas.end()) {
    return;
  }
  for (uint32_t id : breakpoints_at(state.request.debugger, here->pc)) {
    std::vector<uint32_t>& off = state.plan.breakpoints_to_disable;
    if (std::find(off.begin(), off.end(), id) == off.end()) off.push_back(id);
  }
}

bool start_site_at(const PlanState& state, uint64_t key, uint64_t va) {
  return std::any_of(state.start_sites.begin(), state.start_sites.end(), [&](const StartSite& site) {
    return function_key(site.function) == key && site.static_va == va;
  });
}

Result<void> add_mid_function_starts(PlanState& state, const FunctionCode& code, const TracedFunction& function) {
  const uint64_t key = function_key(function.module_index, function.symbol.start);
  for (const StartSite& site : state.start_sites) {
    if (function_key(site.function) != key || site.at_entry ||
        (code.entry_nop_va && site.static_va == *code.entry_nop_va)) {
      continue;
    }
    const std::string where = function.symbol.demangled + "+" + to_hex(site.static_va - function.symbol.start);
    auto rule = cfa_rule_at(state.image_of(function.module_index), site.static_va);
    if (!rule) return with_context(rule.error(), "a window cannot open at " + where + " (its frame cannot be found there)");
    if (rule->reg != CfaRule::Register::rsp && rule->reg != CfaRule::Register::rbp) {
      return make_error(ErrorCode::unsupported,
                        "the frame at " + where + " is based on DWARF register " +
                            std::to_string(rule->dwarf_register) + ", not rsp or rbp",
                        "put the breakpoint at the function's entry");
    }
    if (auto probe = add_role(state, code, function, site.static_va, XREF_PROBE_ENTRY, 0, true,
                              state.plan.start_fetches);
        !probe) {
      return probe;
    }
    PlannedProbe& probe = state.plan.probes[state.last_role];
    probe.frame_base = rule->reg == CfaRule::Register::rbp ? XREF_FRAME_BASE_BP : XREF_FRAME_BASE_SP;
    probe.frame_offset = static_cast<int32_t>(rule->offset - 8);
  }
  return {};
}

}  // namespace xref
