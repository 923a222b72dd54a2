// What the probes read: --fetch at the start probe (and --start-filter over
// it), --fetch-at/--fetch-ret at a function's entry and returns.
#include "filter_expr.h"
#include "trace/planning/stages.h"

namespace xref {

Result<void> parse_start_fetches(PlanState& state) {
  const TraceRequest& request = state.request;
  auto start_fetches = parse_fetch_spec(request.fetch);
  if (!request.fetch.empty() && !start_fetches) return with_context(start_fetches.error(), "--fetch");
  if (start_fetches) state.plan.start_fetches = *start_fetches;
  if (!request.start_filter.empty()) {
    const auto variables = filter_variables(state.plan.start_fetches);
    auto filter = parse_filter(request.start_filter, variables);
    if (!filter) return with_context(filter.error(), "--start-filter");
    auto lowered = lower_filter(*filter);
    if (!lowered) return with_context(lowered.error(), "--start-filter");
    state.plan.start_filter = *lowered;
  }
  return {};
}

Result<void> apply_fetch_options(PlanState& state) {
  auto apply = [&](const std::vector<std::pair<std::string, std::string>>& options, const char* flag,
                   bool at_return) -> Result<void> {
    for (const auto& [where, spec] : options) {
      auto function = state.resolve(where, flag);
      if (!function) return function.error();
      const uint64_t key = function_key(*function);
      auto items = parse_fetch_spec(spec);
      if (!items) return with_context(items.error(), std::string(flag) + " " + where);
      // In call-site mode a callee is seen at its call sites, not at its
      // own entry: a probe there too would report each call twice.
      if (state.call_site_mode() && state.function_at(key) == nullptr) {
        CallSiteFetches& fetches = state.call_site_fetches[key];
        fetches.name = function->demangled;
        (at_return ? fetches.at_return : fetches.at_entry) = *items;
        continue;
      }
      if (auto added = state.add_function(*function); !added) return added.error();
      TracedFunction* traced = state.function_at(key);
      (at_return ? traced->return_fetches : traced->entry_fetches) = *items;
    }
    return {};
  };
  if (auto done = apply(state.request.fetch_at, "--fetch-at", false); !done) return done;
  return apply(state.request.fetch_ret, "--fetch-ret", true);
}

}  // namespace xref
