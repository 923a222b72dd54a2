// A start function that ends in a tail jump hands its frame to the jump's
// target; when that target is not traced, the window stays open until the
// target returns. Its rets (and, through its own tail jumps, theirs) get
// continuation probes that see that moment; a target that cannot be
// followed leaves the end to be inferred from the thread's next event above
// the frame.
#include "sites/function_names.h"
#include "sites/function_sites.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"

namespace xref {
namespace {

constexpr size_t kMaxContinuations = 32;

// Where a tail jump goes: a module index and a static VA in it.
using TailTarget = std::pair<uint32_t, uint64_t>;

// The targets of the unconditional direct tail jumps out of `parts`.
void push_tail_targets(const std::vector<FunctionCode>& parts, uint32_t module_index,
                       std::vector<TailTarget>& pending) {
  for (const FunctionCode& part : parts) {
    for (const ExitJump& exit : part.exits) {
      if (exit.kind == ExitKind::tail_call && !exit.conditional && !in_parts(parts, exit.target.va)) {
        pending.emplace_back(module_index, exit.target.va);
      }
    }
  }
}

// The traced function `target` continues a frame in: the one the plan has,
// else a new continuation (only its rets and tail jumps are probed).
uint32_t continuation_id(PlanState& state, const ModuleFunction& target) {
  if (const TracedFunction* existing = state.function_at(function_key(target))) return existing->id;
  TracedFunction function;
  function.id = static_cast<uint32_t>(state.plan.functions.size());
  function.symbol = target;
  function.module_index = target.module_index;
  function.continuation = true;
  state.plan.functions.push_back(function);
  state.function_ids[function_key(target)] = function.id;
  return function.id;
}

// The continuation probes of `function`: its rets and its tail jumps, whose
// targets continue the frame in turn.
Result<void> add_continuation_probes(PlanState& state, const TracedFunction& function, const FunctionCode& code,
                                     std::vector<TailTarget>& pending) {
  const std::vector<FunctionCode> parts =
      state.split_parts.code_parts(function.module_index, state.image_of(function.module_index), code);
  for (const FunctionCode& part : parts) {
    for (uint64_t ret : part.rets) {
      if (auto probe = add_role(state, part, function, ret, XREF_PROBE_RET, XREF_PROBE_F_CONTINUATION, false, {});
          !probe) {
        return probe;
      }
    }
    for (const ExitJump& exit : part.exits) {
      if (exit.kind != ExitKind::tail_call || exit.conditional || in_parts(parts, exit.target.va)) continue;
      if (auto probe = add_role(state, part, function, exit.va, XREF_PROBE_TAIL_EXIT, XREF_PROBE_F_CONTINUATION,
                                false, {});
          !probe) {
        return probe;
      }
      set_tail_target(state, function, exit.va, exit.target.va);
      pending.emplace_back(function.module_index, exit.target.va);
    }
  }
  return {};
}

}  // namespace

Result<void> add_continuations(PlanState& state) {
  std::vector<TailTarget> pending;
  const size_t traced = state.plan.functions.size();
  for (size_t i = 0; i < traced; ++i) {
    const TracedFunction& function = state.plan.functions[i];
    if (function.indirect || !state.is_start_function(function_key(function.module_index, function.symbol.start))) {
      continue;
    }
    const ElfImage& image = state.image_of(function.module_index);
    auto code = disassemble(image, function.symbol);
    if (!code) continue;
    push_tail_targets(state.split_parts.code_parts(function.module_index, image, *code), function.module_index,
                      pending);
  }
  std::set<uint64_t> seen;
  size_t added = 0;
  while (!pending.empty()) {
    auto [module_index, va] = pending.back();
    pending.pop_back();
    const FunctionSymbol* symbol = state.image_of(module_index).function_at(va);
    if (symbol == nullptr) continue;
    ModuleFunction target;
    static_cast<FunctionSymbol&>(target) = *symbol;
    target.module_index = module_index;
    if (symbol->source == SymbolSource::plt) {
      auto resolved = plt_target(state.modules, module_index, *symbol);
      if (!resolved) {
        state.plan.warnings.push_back("a start function tail-jumps to " + symbol->demangled +
                                      ", which no loaded module defines: its window's end is inferred");
        continue;
      }
      target = *resolved;
    }
    const uint64_t key = function_key(target);
    if (state.ret_traced.count(key) || !seen.insert(key).second) continue;
    if (added++ == kMaxContinuations) {
      state.plan.warnings.push_back("more than " + std::to_string(kMaxContinuations) +
                                    " functions continue a start frame through tail jumps: the rest end windows by "
                                    "inference");
      break;
    }
    auto code = disassemble(state.image_of(target.module_index), target);
    if (!code || !code->complete()) {
      state.plan.warnings.push_back(target.demangled + " (reached by a start function's tail jump) did not "
                                    "disassemble cleanly: windows handed to it end by inference");
      continue;
    }
    const TracedFunction function = state.plan.functions[continuation_id(state, target)];
    if (auto probes = add_continuation_probes(state, function, *code, pending); !probes) return probes;
  }
  return {};
}

void name_tail_targets(PlanState& state) {
  for (PlannedProbe& probe : state.plan.probes) {
    if (probe.kind != XREF_PROBE_TAIL_EXIT || probe.tail_target_va == 0) continue;
    if (const TracedFunction* target = state.function_at(function_key(probe.module_index, probe.tail_target_va))) {
      probe.tail_target_id = target->id;
    }
  }
}

}  // namespace xref
