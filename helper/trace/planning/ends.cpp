// Where windows and frames end other than at a traced function's return:
// --stop, and the places where the C++ runtime catches an exception or
// passes it on, past the frames it unwinds.
#include <map>
#include <set>

#include "sites/function_names.h"
#include "sites/function_sites.h"
#include "sites/probe_site_check.h"
#include "hex.h"
#include "number_parse.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"

namespace xref {

Result<void> add_stop_probe(PlanState& state) {
  const std::string& stop = state.request.stop;
  const ElfImage& image = *state.plan.image;
  auto va = parse_u64(stop, "--stop");
  uint64_t stop_va = 0;
  if (va) {
    stop_va = *va;
  } else {
    auto function = resolve_function(image, stop, "--stop");
    if (!function) return function.error();
    stop_va = function->start;
  }
  const FunctionSymbol* owner = image.function_containing(stop_va);
  if (owner == nullptr) {
    if (auto data = data_not_code(image, stop_va, "--stop")) return *data;
    return make_error(ErrorCode::address_unmapped, "--stop " + to_hex(stop_va) + " is in no known function");
  }
  auto code = disassemble(image, *owner);
  if (!code) return code.error();
  state.plan.stop_va = stop_va;
  TracedFunction none;
  none.id = 0xffffffff;
  return add_role(state, *code, none, stop_va, XREF_PROBE_STOP, 0, false, {});
}

// Where a C++ exception is caught (__cxa_begin_catch) or a cleanup passes
// it on (_Unwind_Resume), the stack pointer shows which traced frames it
// has left: they end then, [unwound], not at the thread's next start. Only
// the runtime's own libraries (or a static executable) are searched.
void add_unwind_checks(PlanState& state) {
  static const char* const kNames[] = {"__cxa_begin_catch", "_Unwind_Resume"};
  for (const Module& module : state.target.space.modules()) {
    const std::string name = module.name();
    const bool runtime = name.rfind("libstdc++", 0) == 0 || name.rfind("libgcc_s", 0) == 0 ||
                         name.rfind("libc++abi", 0) == 0 || name.rfind("libunwind", 0) == 0 ||
                         &module == state.plan.module;
    if (!runtime) continue;
    auto image = state.target.space.image(module);
    if (!image) continue;
    for (const char* wanted : kNames) {
      for (const FunctionSymbol* found : (*image)->find_functions(wanted)) {
        if (found->source == SymbolSource::plt || !found->has_name(wanted)) continue;
        auto code = disassemble(**image, *found);
        if (!code || !code->complete()) continue;
        TracedFunction none;
        none.id = XREF_FUNCTION_NONE;
        none.module_index = state.modules.index_of(&module, *image);
        const uint64_t va = entry_probe_va(*code);
        // A probe there already (the user traces it): leave it be.
        if (head_at(state.plan, none.module_index, va)) continue;
        if (auto probe = add_role(state, *code, none, va, XREF_PROBE_UNWIND_CHECK, 0, false, {}); probe) {
          state.plan.unwind_checks.push_back(name + ":" + wanted);
        }
        break;
      }
    }
  }
}

// A frame that can leave through a pointer ends where no probe sees it, and
// the word in its return-address slot can outlive it (code running later
// below that slot need not overwrite it: a large local array, Debian
// sqlite3's sqlite3Malloc returning after sqlite3_mutex_leave). Its caller
// running again after the call says it is over: each call to such a
// function in its own module (directly or through the module's PLT stub for
// it) gets a probe on its return site. Calls from other modules and tail
// jumps to it are not followed; there the slot's word decides (trace.md).
void add_resume_sites(PlanState& state) {
  std::map<uint32_t, std::vector<const TracedFunction*>> by_module;
  for (const TracedFunction& function : state.plan.functions) {
    if (state.unseen_exit.count(function_key(function.module_index, function.symbol.start))) {
      by_module[function.module_index].push_back(&function);
    }
  }
  size_t left_out = 0;
  for (const auto& [module_index, functions] : by_module) {
    const ElfImage& image = state.image_of(module_index);
    std::set<uint64_t> targets;
    std::set<std::string> stubs;
    for (const TracedFunction* function : functions) {
      targets.insert(function->symbol.start);
      stubs.insert(function->symbol.name + "@plt");
    }
    TracedFunction none;
    none.id = XREF_FUNCTION_NONE;
    none.module_index = module_index;
    uint64_t previous_start = ~uint64_t{0};
    for (const FunctionSymbol* caller : image.all_functions()) {
      if (caller->source == SymbolSource::plt || caller->start == previous_start) continue;
      previous_start = caller->start;
      auto code = disassemble(image, *caller);
      if (!code || !code->complete()) continue;
      for (const CallSite& call : code->calls) {
        if (call.target.indirect() || !call.return_in_function) continue;
        if (!targets.count(call.target.va) && !stubs.count(call.target.name)) continue;
        if (head_at(state.plan, module_index, call.return_va)) continue;  // any role there pops the frame too
        if (state.plan.probes.size() + 16 >= XREF_TRACE_MAX_PROBES) {
          ++left_out;
          continue;
        }
        (void)add_role(state, *code, none, call.return_va, XREF_PROBE_RESUME, 0, false, {});
      }
    }
  }
  if (left_out) {
    state.plan.warnings.push_back(std::to_string(left_out) +
                                  " return sites of calls to functions that may leave through a pointer are not "
                                  "probed (the probe table is full): frames of those calls end when their "
                                  "return-address slot changes");
  }
}

}  // namespace xref
