#include "trace/planning/state.h"

#include <algorithm>

namespace xref {

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

Result<ModuleFunction> PlanState::resolve(const std::string& text, const std::string& what) {
  auto function = resolve_function_name(modules, text, what);
  if (!function) return function;
  if (!function->implementation.empty()) {
    std::string note = ifunc_warning(text, *function, "tracing");
    if (std::find(plan.warnings.begin(), plan.warnings.end(), note) == plan.warnings.end()) {
      plan.warnings.push_back(std::move(note));
    }
  }
  return function;
}

TracedFunction* PlanState::function_at(uint64_t key) {
  const auto found = function_ids.find(key);
  return found == function_ids.end() ? nullptr : &plan.functions[found->second];
}

Result<void> PlanState::add_function(const ModuleFunction& symbol) {
  const uint64_t key = function_key(symbol);
  if (function_ids.count(key)) return {};
  if (symbol.source == SymbolSource::plt) {
    return make_error(ErrorCode::invalid_argument, symbol.name + " is a PLT stub",
                      "trace the library function itself (module:symbol arrives with shared-library support)");
  }
  TracedFunction function;
  function.id = static_cast<uint32_t>(plan.functions.size());
  function.symbol = symbol;
  function.module_index = symbol.module_index;
  function.implementation = symbol.implementation;
  plan.functions.push_back(function);
  function_ids[key] = function.id;
  return {};
}

}  // namespace xref
