// What the stages of trace planning share while they build one TracePlan
// (plan.cpp runs them in order; planning/stages.h lists them): the plan, the
// modules its probes go in, the traced functions by start, and what the
// start stage learned about where windows open.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sites/function_names.h"
#include "sites/function_sites.h"
#include "sites/probe_modules.h"
#include "fetch_spec.h"
#include "process/target.h"
#include "result.h"
#include "trace/plan.h"
#include "trace/request.h"

namespace xref {

// A traced function's key: module index in the top byte, static VA below.
inline uint64_t function_key(uint32_t module_index, uint64_t start) { return (uint64_t{module_index} << 56) | start; }
inline uint64_t function_key(const ModuleFunction& function) {
  return function_key(function.module_index, function.start);
}

// `error` with "context: " in front of its message.
Error with_context(Error error, const std::string& context);

// Where a debugger breakpoint opens windows: its function and address.
struct StartSite {
  ModuleFunction function;
  uint64_t static_va = 0;
  bool at_entry = false;
};

// Call-site mode: the --fetch-at/--fetch-ret of a callee that is not traced
// itself, read at its call and return sites.
struct CallSiteFetches {
  std::string name;
  std::vector<FetchItem> at_entry;
  std::vector<FetchItem> at_return;
  bool seen = false;  // a call site of it is probed
};

struct PlanState {
  PlanState(const Target& of, const TraceRequest& asked, ProbeModules in)
      : target(of), request(asked), modules(std::move(in)) {}
  PlanState(const PlanState&) = delete;
  PlanState& operator=(const PlanState&) = delete;

  const Target& target;
  TraceRequest request;  // a copy: --here fills in its default mode
  TracePlan plan;        // its modules are `modules` until the plan is done
  ProbeModules modules;
  SplitParts split_parts;
  std::map<uint64_t, uint32_t> function_ids;          // function key -> index into plan.functions
  std::set<uint64_t> start_entries;                   // function keys whose entry probe opens windows
  std::set<uint64_t> mid_start_functions;             // function keys with a window opening inside them
  std::vector<StartSite> start_sites;                 // --start bp:N locations
  std::map<uint64_t, CallSiteFetches> call_site_fetches;  // call-site mode: by the callee's function key
  std::set<uint64_t> ret_traced;                      // function keys whose rets are probed
  std::set<uint64_t> unseen_exit;                     // function keys that may leave through a jump no probe sees
  size_t last_role = 0;                               // the role the last add_role added or merged into

  const ElfImage& image_of(uint32_t module_index) const { return modules.image(module_index); }

  // "symbol", "0xVA", "module:symbol" or "module:0xVA"; a GNU IFUNC adds
  // its warning (once).
  Result<ModuleFunction> resolve(const std::string& text, const std::string& what);

  // The traced function with that key, or nullptr.
  TracedFunction* function_at(uint64_t key);
  // Traces `symbol` (once); a PLT stub is refused.
  Result<void> add_function(const ModuleFunction& symbol);

  bool is_start_function(uint64_t key) const { return start_entries.count(key) || mid_start_functions.count(key); }
  bool call_site_mode() const { return !request.callees_of.empty() || !request.all_calls_in.empty(); }
};

}  // namespace xref
