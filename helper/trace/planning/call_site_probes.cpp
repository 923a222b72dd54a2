// Call-site mode: --callees-of FN --depth N / --all-calls-in FN. The
// callers are the expanded functions of the static callee tree; each of
// their call sites is probed at the call (the callee's entry) and at the
// return site (its return), so every event carries its exact call site and
// no return address on the stack is ever touched.
#include <optional>
#include <string>
#include <vector>

#include "sites/call_sites.h"
#include "sites/call_target_fetch.h"
#include "callee_tree.h"
#include "hex.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"

namespace xref {
namespace {

// The traced function a call site enters: the one the plan has at that
// address, else a new one (each indirect call site has its own callee,
// named at run time).
uint32_t callee_id(PlanState& state, uint32_t module_index, const CalleeEdge& edge) {
  const uint64_t key = function_key(module_index, edge.target.va);
  if (const TracedFunction* existing = state.function_at(key); edge.kind != EdgeKind::indirect_call && existing) {
    return existing->id;
  }
  TracedFunction function;
  function.id = static_cast<uint32_t>(state.plan.functions.size());
  function.module_index = module_index;
  if (edge.kind == EdgeKind::indirect_call) {
    function.indirect = true;
    function.symbol.name = "indirect@" + to_hex(edge.site_va);
    function.symbol.demangled = "indirect call " + edge.target.operand;
    function.symbol.start = 0;
  } else if (const FunctionSymbol* symbol = state.image_of(module_index).function_at(edge.target.va)) {
    function.symbol = *symbol;
  } else {
    function.symbol.name = function.symbol.demangled = to_hex(edge.target.va);
    function.symbol.start = edge.target.va;
  }
  state.plan.functions.push_back(function);
  if (edge.kind != EdgeKind::indirect_call) state.function_ids[key] = function.id;
  return function.id;
}

// What to fetch at an indirect call to learn its target.
std::vector<FetchItem> indirect_target_fetch(PlanState& state, const CalleeEdge& edge) {
  const CallTargetFetch fetch = call_target_fetch(edge.target, edge.site_va);
  const std::string site = "indirect call at " + to_hex(edge.site_va) + " (" + edge.target.operand + ")";
  if (fetch.indexed && state.request.backend == "tracefs") {
    state.plan.warnings.push_back(site + ": an indexed target cannot be fetched with --backend tracefs and stays "
                                         "unnamed");
    return {};
  }
  if (!fetch.understood) {
    state.plan.warnings.push_back(site + ": its target cannot be fetched and stays unnamed");
    return {};
  }
  if (!fetch.item) return {};
  return {*fetch.item};
}

// --fetch-at/--fetch-ret of a callee, read at its call and return sites.
// There the stack pointer is 8 above its value at the callee's entry and
// ret (the return address is not pushed yet, or already popped), so
// sp-relative reads move down by 8.
std::vector<FetchItem> at_call_site(std::vector<FetchItem> items) {
  for (FetchItem& item : items) {
    if (item.base == Register::sp && !item.deref_offsets.empty()) item.deref_offsets.front() -= 8;
  }
  return items;
}

// Calls that never come back (to exit, abort, __stack_chk_fail): no
// return probe. Said in one warning, however many a tree holds.
struct NoReturnCalls {
  std::vector<std::string> sites;  // "0x173e in main"

  std::optional<std::string> warning() const {
    if (sites.empty()) return std::nullopt;
    if (sites.size() == 1) {
      return "call at " + sites.front() + " does not return into the function (noreturn callee): no return probe";
    }
    constexpr size_t kNamed = 3;
    std::string text = std::to_string(sites.size()) + " calls do not return into their function (noreturn callees), "
                       "so they have no return probe: at ";
    for (size_t i = 0; i < sites.size() && i < kNamed; ++i) text += (i == 0 ? "" : ", ") + sites[i];
    if (sites.size() > kNamed) text += " and " + std::to_string(sites.size() - kNamed) + " more";
    return text;
  }
};

Result<void> add_site(PlanState& state, uint32_t module_index, const FunctionCode& code, const NodeCallSite& site,
                      NoReturnCalls& no_return) {
  const CalleeEdge& edge = site.edge;
  switch (edge.kind) {
    case EdgeKind::call:
    case EdgeKind::indirect_call: {
      const uint32_t id = callee_id(state, module_index, edge);
      const TracedFunction callee = state.plan.functions[id];
      std::vector<FetchItem> fetches =
          edge.kind == EdgeKind::indirect_call ? indirect_target_fetch(state, edge) : std::vector<FetchItem>{};
      std::vector<FetchItem> return_fetches;
      if (auto asked = state.call_site_fetches.find(function_key(module_index, edge.target.va));
          edge.kind == EdgeKind::call && asked != state.call_site_fetches.end()) {
        asked->second.seen = true;
        fetches = at_call_site(asked->second.at_entry);
        return_fetches = at_call_site(asked->second.at_return);
      }
      if (auto probe = add_role(state, code, callee, edge.site_va, XREF_PROBE_CALL_SITE, 0, false, fetches); !probe) {
        return probe;
      }
      state.plan.probes[state.last_role].indirect = edge.kind == EdgeKind::indirect_call;
      if (!edge.return_in_function) {
        no_return.sites.push_back(to_hex(edge.site_va) + " in " + site.caller);
        return {};
      }
      return add_role(state, code, callee, edge.return_va, XREF_PROBE_RETURN_SITE, 0, false, return_fetches);
    }
    case EdgeKind::tail_jump: {
      const uint32_t id = callee_id(state, module_index, edge);
      if (id < state.plan.functions.size() && state.plan.functions[id].symbol.start == site.caller_va) {
        state.plan.warnings.push_back("recursion through a tail call: " + site.caller + " jumps to itself");
      }
      const TracedFunction callee = state.plan.functions[id];
      return add_role(state, code, callee, edge.site_va, XREF_PROBE_TAIL_SITE, 0, false, {});
    }
    case EdgeKind::jump:
    case EdgeKind::indirect_jump:
      return {};
  }
  return {};
}

}  // namespace

Result<void> add_call_site_probes(PlanState& state) {
  const TraceRequest& request = state.request;
  const bool all_calls = !request.all_calls_in.empty();
  state.plan.mode = all_calls ? "all_calls_in" : "callees_of";
  state.plan.return_mode = "call_site_exact";
  const std::string& root_text = all_calls ? request.all_calls_in : request.callees_of;
  const char* flag = all_calls ? "--all-calls-in" : "--callees-of";
  auto root = state.resolve(root_text, flag);
  if (!root) return root.error();
  // The tree is followed inside the root's module (the executable, a
  // library, a plugin); calls into other modules end at their PLT stubs.
  const uint32_t module_index = root->module_index;
  const ElfImage& image = state.image_of(module_index);
  const int depth = all_calls ? 1 : (request.depth == 0 ? 1 : request.depth);
  if (depth < 1 || depth > 16) {
    return make_error(ErrorCode::invalid_argument, "--depth must be between 1 and 16, got " + std::to_string(depth));
  }
  auto tree = callee_tree(image, root->start, depth, 20000);
  if (!tree) return tree.error();
  std::set<uint64_t> listed;  // callers whose sites are probed, split-off parts included
  NoReturnCalls no_return;
  size_t sites = 0;
  for (const CalleeNode& node : tree->nodes) {
    if (node.state == NodeState::recursive && node.function) {
      state.plan.warnings.push_back("recursion: " + node.function->demangled + " is reached again from itself");
    }
    if (node.state != NodeState::expanded || !node.function || !listed.insert(node.va).second) continue;
    if (!node.complete) {
      return make_error(ErrorCode::not_an_instruction, node.function->demangled + " did not disassemble cleanly",
                        "xref will not guess instruction boundaries; trace a smaller tree");
    }
    auto node_sites = node_call_sites(state.split_parts, module_index, image, *tree, node, listed);
    if (!node_sites) return node_sites.error();
    for (const NodeCallSite& site : node_sites->sites) {
      const FunctionCode& code = node_sites->codes[site.code];
      const EdgeKind kind = site.edge.kind;
      if (site.in_split_part) {
        // The compiler's split-off ".cold" part runs as part of this call
        // (an exception handler, an unlikely branch): its call sites are the
        // function's too.
        if (auto added = add_site(state, module_index, code, site, no_return); !added) return added;
        continue;
      }
      if (site.into_split_part) {
        // Not a tail call: the jump enters this function's own split part.
      } else if (site.conditional) {
        state.plan.warnings.push_back(site.caller + " may tail-jump conditionally at " + to_hex(site.edge.site_va) +
                                      "; that jump is not followed");
      } else if (auto added = add_site(state, module_index, code, site, no_return); !added) {
        return added;
      }
      if (kind == EdgeKind::call || kind == EdgeKind::indirect_call || kind == EdgeKind::tail_jump) ++sites;
    }
  }
  if (auto warning = no_return.warning()) state.plan.warnings.push_back(std::move(*warning));
  if (sites == 0) {
    state.plan.warnings.push_back(root->demangled + " has no call sites: its callees were inlined (or it calls nothing)");
  }
  for (const auto& [key, fetches] : state.call_site_fetches) {
    if (!fetches.seen) {
      state.plan.warnings.push_back(fetches.name + " is not called directly in the traced tree: its "
                                    "--fetch-at/--fetch-ret values are never read");
    }
  }
  return {};
}

}  // namespace xref
