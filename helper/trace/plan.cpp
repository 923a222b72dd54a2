// plan_trace: the stages of planning/stages.h in order, then the checks on the
// whole probe set (no probe on a debugger's breakpoint, the probe limit).
#include "trace/plan.h"

#include "sites/function_glob.h"

#include "sites/breakpoints.h"
#include "sites/probe_site_check.h"
#include "sites/typed_address.h"
#include "hex.h"
#include "trace/planning/here_cfa.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"
#include "trace/planning/state.h"

namespace xref {
namespace {

// Every probe's live address and role, for the breakpoint-collision guard.
std::vector<LiveProbe> probe_addresses(const PlanState& state) {
  const TracePlan& plan = state.plan;
  std::vector<LiveProbe> addresses;
  for (const PlannedProbe& probe : plan.probes) {
    auto live = state.target.space.live_from_static(*state.modules[probe.module_index].module, probe.static_va);
    if (!live) continue;
    std::string function = probe.function_id < plan.functions.size()
                               ? plan.functions[probe.function_id].symbol.demangled
                               : std::string(probe.kind == XREF_PROBE_STOP ? "--stop" : "");
    addresses.push_back({*live, role_label(probe.kind) + std::string(" ") + function});
  }
  return addresses;
}

// A name of --functions; from a debugger a bare 0xVA is a live address,
// which must be a function's first byte.
Result<ModuleFunction> resolve_listed_function(PlanState& state, const std::string& name) {
  if (!names_instruction_address(name, state.request.debugger.present) || split_symbol_offset(name)) {
    return state.resolve(name, "--functions");
  }
  auto placed = place_typed_address(state.modules, name, "--functions", true);
  if (!placed) return placed.error();
  if (!placed->at_entry) {
    const uint64_t slide = *placed->live - placed->static_va;
    return make_error(ErrorCode::invalid_argument,
                      "--functions " + name + " is inside " + placed->function.demangled + " (starts at " +
                          to_hex(placed->function.start + slide) + "), not at a function start",
                      "give the function's start address or its name");
  }
  return placed->function;
}

// The functions traced for themselves: the start function(s), the
// --stop-return function, and --functions.
Result<ModuleFunction> add_named_functions(PlanState& state, const ModuleFunction& start) {
  const TraceRequest& request = state.request;
  auto stop_return = request.stop_return.empty() ? Result<ModuleFunction>(start)
                                                 : state.resolve(request.stop_return, "--stop-return");
  if (!stop_return) return stop_return.error();
  state.plan.stop_return_va = stop_return->start;

  if (auto added = state.add_function(start); !added) return added.error();
  for (const StartSite& site : state.start_sites) {
    if (auto added = state.add_function(site.function); !added) return added.error();
  }
  if (auto added = state.add_function(*stop_return); !added) return added.error();
  for (const std::string& list : request.functions) {
    for (const std::string& name : split_function_list(list)) {
      if (is_function_glob(name)) {
        auto expansion = expand_function_glob(state.modules, name, "--functions", request.max_functions,
                                              "--max-functions");
        if (!expansion) return expansion.error();
        state.plan.globs.push_back({name, expansion->functions.size()});
        if (const std::string skipped = glob_skipped_warning(*expansion); !skipped.empty()) {
          state.plan.warnings.push_back(skipped);
        }
        for (const ModuleFunction& function : expansion->functions) {
          if (auto added = state.add_function(function); !added) return added.error();
        }
        continue;
      }
      auto function = resolve_listed_function(state, name);
      if (!function) return function.error();
      if (auto added = state.add_function(*function); !added) return added.error();
    }
  }
  return stop_return;
}

Result<void> plan_probes(PlanState& state) {
  TracePlan& plan = state.plan;
  const TraceRequest& request = state.request;
  if (request.start.empty() && !request.here) {
    return make_error(ErrorCode::invalid_argument, "--start is required", "name the function that opens a window");
  }
  if (request.uretprobes) {
    plan.return_mode = "mixed_uretprobe_best_effort";
    plan.warnings.push_back("uretprobe_returns_are_best_effort_under_unwind");
  }
  auto start = resolve_start(state);
  if (!start) return start.error();
  plan.start_va = start->start;
  plan.start_module_index = start->module_index;
  if (auto fetches = parse_start_fetches(state); !fetches) return fetches;

  auto stop_return = add_named_functions(state, *start);
  if (!stop_return) return stop_return.error();
  if (auto fetches = apply_fetch_options(state); !fetches) return fetches;
  state.function_at(function_key(*stop_return))->stop_return = true;
  if (auto probes = add_function_probes(state); !probes) return probes;
  if (state.call_site_mode()) {
    if (auto sites = add_call_site_probes(state); !sites) return sites;
  }
  if (!request.stop.empty()) {
    if (auto stop = add_stop_probe(state); !stop) return stop;
  }
  if (auto continued = add_continuations(state); !continued) return continued;
  add_unwind_checks(state);
  add_resume_sites(state);
  name_tail_targets(state);
  if (plan.here) plan.here->function_id = state.function_at(function_key(*start))->id;
  if (request.debugger.present) {
    const std::vector<LiveProbe> probed = probe_addresses(state);
    std::vector<uint64_t> probed_vas;
    for (const LiveProbe& probe : probed) probed_vas.push_back(probe.live_va);
    hand_over_here_breakpoint(state, probed_vas);
    if (!request.allow_breakpoint_collision) {
      if (auto clear = check_breakpoint_collisions(probed, request.debugger, plan.breakpoints_to_disable); !clear) {
        return clear;
      }
    }
  }
  for (const PlannedProbe& probe : plan.probes) {
    if (probe.head && on_five_byte_nop(state.image_of(probe.module_index), probe.static_va)) {
      plan.entry_nop_probes.push_back(probe.static_va);
    }
  }
  if (plan.probes.size() > XREF_TRACE_MAX_PROBES) {
    return make_error(ErrorCode::invalid_argument,
                      std::to_string(plan.probes.size()) + " probes needed; the limit is " +
                          std::to_string(XREF_TRACE_MAX_PROBES),
                      "trace fewer functions");
  }
  return {};
}

}  // namespace

Result<TracePlan> plan_trace(const Target& target, const TraceRequest& request) {
  auto modules = ProbeModules::of_process(target);
  if (!modules) return modules.error();
  PlanState state(target, request, std::move(*modules));
  state.plan.module = state.modules[0].module;
  state.plan.image = state.modules[0].image;
  if (auto planned = plan_probes(state); !planned) return planned.error();
  state.plan.modules = state.modules.all();
  return std::move(state.plan);
}

}  // namespace xref
