#include "trace/plan.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "attach/breakpoints.h"
#include "attach/function_names.h"
#include "attach/probe_site_check.h"
#include "callee_tree.h"
#include "cfa_rule.h"
#include "disassembly.h"
#include "filter_expr.h"
#include "hex.h"
#include "number_parse.h"
#include "trace/here_cfa.h"

namespace xref {
namespace {

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

// Where a debugger breakpoint opens windows: its function and address.
struct StartSite {
  ModuleFunction function;
  uint64_t static_va = 0;
  bool at_entry = false;
};

// functions_by_start_ keys: module index in the top byte, static VA below.
uint64_t function_key(uint32_t module_index, uint64_t start) { return (uint64_t{module_index} << 56) | start; }

class Planner {
 public:
  Planner(const Target& target, const TraceRequest& request) : target_(target), request_(request) {}

  Result<TracePlan> run() {
    auto modules = ProbeModules::of_process(target_);
    if (!modules) return modules.error();
    modules_.emplace(std::move(*modules));
    plan_.module = (*modules_)[0].module;
    plan_.image = (*modules_)[0].image;

    if (request_.start.empty() && !request_.here) {
      return make_error(ErrorCode::invalid_argument, "--start is required", "name the function that opens a window");
    }
    if (request_.uretprobes) {
      plan_.return_mode = "mixed_uretprobe_best_effort";
      plan_.warnings.push_back("uretprobe_returns_are_best_effort_under_unwind");
    }
    auto start = resolve_start();
    if (!start) return start.error();
    plan_.start_va = start->start;
    plan_.start_module_index = start->module_index;
    auto start_fetches = parse_fetch_spec(request_.fetch);
    if (!request_.fetch.empty() && !start_fetches) return with_context(start_fetches.error(), "--fetch");
    if (start_fetches) plan_.start_fetches = *start_fetches;
    if (!request_.start_filter.empty()) {
      const auto variables = filter_variables(plan_.start_fetches);
      auto filter = parse_filter(request_.start_filter, variables);
      if (!filter) return with_context(filter.error(), "--start-filter");
      auto lowered = lower_filter(*filter);
      if (!lowered) return with_context(lowered.error(), "--start-filter");
      plan_.start_filter = *lowered;
    }

    auto stop_return = request_.stop_return.empty() ? start : resolve(request_.stop_return, "--stop-return");
    if (!stop_return) return stop_return.error();
    plan_.stop_return_va = stop_return->start;

    if (auto added = add_function(*start); !added) return added.error();
    for (const StartSite& site : start_sites_) {
      if (auto added = add_function(site.function); !added) return added.error();
    }
    if (auto added = add_function(*stop_return); !added) return added.error();
    for (const std::string& list : request_.functions) {
      for (const std::string& name : split(list)) {
        auto function = resolve(name, "--functions");
        if (!function) return function.error();
        if (auto added = add_function(*function); !added) return added.error();
      }
    }
    if (auto fetches = apply_fetch_options(); !fetches) return fetches.error();
    functions_by_start_[function_key(stop_return->module_index, plan_.stop_return_va)]->stop_return = true;
    if (auto probes = build_probes(); !probes) return probes.error();
    if (!request_.callees_of.empty() || !request_.all_calls_in.empty()) {
      if (auto sites = build_call_site_probes(); !sites) return sites.error();
    }
    if (!request_.stop.empty()) {
      if (auto stop = add_stop_probe(); !stop) return stop.error();
    }
    if (auto continued = add_continuations(); !continued) return continued.error();
    add_unwind_checks();
    name_tail_targets();
    if (plan_.here) plan_.here->function_id = functions_by_start_.at(key_of(*start))->id;
    if (request_.debugger.present && !request_.allow_breakpoint_collision) {
      if (auto clear = check_breakpoint_collisions(probe_addresses(), request_.debugger, plan_.breakpoints_to_disable);
          !clear) {
        return clear.error();
      }
    }
    for (const PlannedProbe& probe : plan_.probes) {
      if (probe.head && on_five_byte_nop(image_of(probe.module_index), probe.static_va)) {
        plan_.entry_nop_probes.push_back(probe.static_va);
      }
    }
    if (plan_.probes.size() > XREF_TRACE_MAX_PROBES) {
      return make_error(ErrorCode::invalid_argument,
                        std::to_string(plan_.probes.size()) + " probes needed; the limit is " +
                            std::to_string(XREF_TRACE_MAX_PROBES),
                        "trace fewer functions");
    }
    plan_.modules = modules_->all();
    return std::move(plan_);
  }

 private:
  // At top-level commas only: "std::_Function_handler<int (int), f(int)::{lambda(int)#1}>::_M_invoke"
  // is one name.
  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> parts;
    std::string part;
    int depth = 0;
    auto finish = [&] {
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (!part.empty()) parts.push_back(part);
      part.clear();
    };
    for (size_t i = 0; i < list.size(); ++i) {
      const char c = list[i];
      const bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(list[i - 1])) || list[i - 1] == '_');
      if (word_start && list.compare(i, 8, "operator") == 0) {
        // "operator<", "operator->", "operator,": their characters open nothing and split nothing.
        size_t end = i + 8;
        while (end < list.size() && std::string_view("<>=-!,").find(list[end]) != std::string_view::npos) ++end;
        part += list.substr(i, end - i);
        i = end - 1;
        continue;
      }
      if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0) --depth;
      if (c == ',' && depth == 0) {
        finish();
        continue;
      }
      part += c;
    }
    finish();
    return parts;
  }

  // "symbol", "0xVA", "module:symbol" or "module:0xVA"; a GNU IFUNC adds
  // its warning (once).
  Result<ModuleFunction> resolve(const std::string& text, const std::string& what) {
    auto function = resolve_function_name(*modules_, text, what);
    if (!function) return function;
    if (!function->implementation.empty()) {
      std::string note = ifunc_warning(text, *function, "tracing");
      if (std::find(plan_.warnings.begin(), plan_.warnings.end(), note) == plan_.warnings.end()) {
        plan_.warnings.push_back(std::move(note));
      }
    }
    return function;
  }

  const ElfImage& image_of(uint32_t module_index) const { return modules_->image(module_index); }

  static uint64_t key_of(const ModuleFunction& function) { return function_key(function.module_index, function.start); }

  // The plan module index of a process module, added on first use.
  uint32_t module_index_of(const Module* module, std::shared_ptr<const ElfImage> image) {
    return modules_->index_of(module, std::move(image));
  }

  StartSite start_site(const CodeSite& site) {
    StartSite start;
    static_cast<FunctionSymbol&>(start.function) = site.function;
    start.function.module_index = module_index_of(site.module, site.image);
    start.static_va = site.static_va;
    start.at_entry = site.at_entry;
    return start;
  }

  // --start FN, --start bp:N (a debugger breakpoint's locations) or --here
  // (the debugger's stopped frame). Returns the (first) start function.
  Result<ModuleFunction> resolve_start() {
    if (request_.here) return resolve_here();
    if (auto breakpoint = breakpoint_reference(request_.start)) {
      auto sites = breakpoint_sites(target_, request_.debugger, *breakpoint, "--start");
      if (!sites) return sites.error();
      for (const CodeSite& site : *sites) {
        StartSite start = start_site(site);
        if (start.at_entry) {
          start_entries_.insert(key_of(start.function));
        } else {
          mid_start_functions_.insert(key_of(start.function));
        }
        start_sites_.push_back(start);
      }
      plan_.breakpoints_to_disable.push_back(*breakpoint);
      return start_sites_.front().function;
    }
    auto start = resolve(request_.start, "--start");
    if (!start) return start.error();
    start_entries_.insert(key_of(*start));
    return start;
  }

  // --here: the window is open from the start, on the stopped frame, and
  // closes when that frame returns; by default it follows the callees of the
  // frame's function two levels down.
  Result<ModuleFunction> resolve_here() {
    const HereFrame& frame = *request_.debugger.here;
    auto site = place_code_address(target_, frame.pc, "--here: the frame's pc");
    if (!site) return site.error();
    auto cfa = here_cfa(target_, frame, *site);
    if (!cfa) return cfa.error();
    if (cfa->cfa < 8) return make_error(ErrorCode::invalid_argument, "--here: the frame's CFA is not a stack address");
    if (!cfa->warning.empty()) plan_.warnings.push_back(cfa->warning);
    StartSite here = start_site(*site);
    mid_start_functions_.insert(key_of(here.function));
    plan_.here = HereWindow{frame.tid, cfa->cfa - 8, 0};
    if (request_.functions.empty() && request_.callees_of.empty() && request_.all_calls_in.empty()) {
      request_.callees_of = here.function.module_index == 0
                                ? to_hex(here.function.start)
                                : site->module->name() + ":" + to_hex(here.function.start);
      if (request_.depth == 0) request_.depth = 2;
    }
    return here.function;
  }

  bool start_sites_at(uint64_t function_key_value, uint64_t va) const {
    return std::any_of(start_sites_.begin(), start_sites_.end(), [&](const StartSite& site) {
      return key_of(site.function) == function_key_value && site.static_va == va;
    });
  }

  // Start probes inside a function: the frame's entry sp comes from the
  // .eh_frame CFA rule at that instruction.
  Result<void> add_mid_function_starts(const FunctionCode& code, const TracedFunction& function, uint64_t key) {
    for (const StartSite& site : start_sites_) {
      if (key_of(site.function) != key || site.at_entry || (code.entry_nop_va && site.static_va == *code.entry_nop_va)) {
        continue;
      }
      auto rule = cfa_rule_at(image_of(function.module_index), site.static_va);
      if (!rule) {
        return with_context(rule.error(), "a window cannot open at " + function.symbol.demangled + "+" +
                                              to_hex(site.static_va - function.symbol.start) +
                                              " (its frame cannot be found there)");
      }
      if (rule->reg != CfaRule::Register::rsp && rule->reg != CfaRule::Register::rbp) {
        return make_error(ErrorCode::unsupported,
                          "the frame at " + function.symbol.demangled + "+" +
                              to_hex(site.static_va - function.symbol.start) +
                              " is based on DWARF register " + std::to_string(rule->dwarf_register) +
                              ", not rsp or rbp",
                          "put the breakpoint at the function's entry");
      }
      if (auto probe = add_probe(code, function, site.static_va, XREF_PROBE_ENTRY, 0, true, plan_.start_fetches);
          !probe) {
        return probe;
      }
      PlannedProbe& probe = plan_.probes[last_role_];
      probe.frame_base = rule->reg == CfaRule::Register::rbp ? XREF_FRAME_BASE_BP : XREF_FRAME_BASE_SP;
      probe.frame_offset = static_cast<int32_t>(rule->offset - 8);
    }
    return {};
  }

  std::vector<ProbeAddress> probe_addresses() const {
    std::vector<ProbeAddress> addresses;
    for (const PlannedProbe& probe : plan_.probes) {
      auto live = target_.space.live_from_static(*(*modules_)[probe.module_index].module, probe.static_va);
      if (!live) continue;
      std::string function = probe.function_id < plan_.functions.size()
                                 ? plan_.functions[probe.function_id].symbol.demangled
                                 : std::string(probe.kind == XREF_PROBE_STOP ? "--stop" : "");
      addresses.push_back({*live, probe_kind_label(probe.kind) + std::string(" ") + function});
    }
    return addresses;
  }

  static const char* probe_kind_label(uint8_t kind) {
    switch (kind) {
      case XREF_PROBE_ENTRY: return "entry of";
      case XREF_PROBE_RET: return "ret of";
      case XREF_PROBE_TAIL_EXIT: return "tail exit of";
      case XREF_PROBE_STOP: return "stop";
      case XREF_PROBE_URETPROBE: return "uretprobe of";
      case XREF_PROBE_CALL_SITE: return "call site of";
      case XREF_PROBE_RETURN_SITE: return "return site of";
      case XREF_PROBE_TAIL_SITE: return "tail-call site of";
      case XREF_PROBE_UNWIND_CHECK: return "unwind check";
    }
    return "probe";
  }

  Result<void> add_function(const ModuleFunction& symbol) {
    if (functions_by_start_.count(function_key(symbol.module_index, symbol.start))) return {};
    if (symbol.source == SymbolSource::plt) {
      return make_error(ErrorCode::invalid_argument, symbol.name + " is a PLT stub",
                        "trace the library function itself (module:symbol arrives with shared-library support)");
    }
    TracedFunction function;
    function.id = static_cast<uint32_t>(plan_.functions.size());
    function.symbol = symbol;
    function.module_index = symbol.module_index;
    function.implementation = symbol.implementation;
    plan_.functions.push_back(function);
    functions_by_start_[function_key(symbol.module_index, symbol.start)] = nullptr;  // pointers fixed by index_functions
    return {};
  }

  void index_functions() {
    for (auto& function : plan_.functions) {
      functions_by_start_[function_key(function.module_index, function.symbol.start)] = &function;
    }
  }

  Result<void> apply_fetch_options() {
    index_functions();
    auto apply = [&](const std::vector<std::pair<std::string, std::string>>& options, const char* flag,
                     bool at_return) -> Result<void> {
      for (const auto& [where, spec] : options) {
        auto function = resolve(where, flag);
        if (!function) return function.error();
        const uint64_t key = function_key(function->module_index, function->start);
        auto items = parse_fetch_spec(spec);
        if (!items) return with_context(items.error(), std::string(flag) + " " + where);
        // In call-site mode a callee is seen at its call sites, not at its
        // own entry: a probe there too would report each call twice.
        if (call_site_mode() && !functions_by_start_.count(key)) {
          CallSiteFetches& fetches = call_site_fetches_[key];
          fetches.name = function->demangled;
          (at_return ? fetches.at_return : fetches.at_entry) = *items;
          continue;
        }
        if (!functions_by_start_.count(key)) {
          if (auto added = add_function(*function); !added) return added.error();
          index_functions();
        }
        TracedFunction* traced = functions_by_start_[key];
        (at_return ? traced->return_fetches : traced->entry_fetches) = *items;
      }
      return {};
    };
    if (auto done = apply(request_.fetch_at, "--fetch-at", false); !done) return done;
    return apply(request_.fetch_ret, "--fetch-ret", true);
  }

  bool is_split_part(uint32_t module_index, const FunctionCode& caller, uint64_t target_va) {
    const auto key = std::make_pair(function_key(module_index, caller.start), target_va);
    auto cached = split_parts_.find(key);
    if (cached != split_parts_.end()) return cached->second;
    const bool split = xref::is_split_part(image_of(module_index), caller, target_va);
    split_parts_[key] = split;
    return split;
  }

  // A function's code and that of its split-off parts (".cold", or stripped
  // FDE ranges recognised by is_split_part), reached by direct jumps.
  std::vector<FunctionCode> code_parts(uint32_t module_index, const FunctionCode& code) {
    std::vector<FunctionCode> parts{code};
    const ElfImage& image = image_of(module_index);
    for (const ExitJump& exit : code.exits) {
      if (exit.target.indirect() || in_parts(parts, exit.target.va)) continue;
      if (exit.kind != ExitKind::cold_part && !is_split_part(module_index, code, exit.target.va)) continue;
      const FunctionSymbol* part = image.function_at(exit.target.va);
      if (part == nullptr) continue;
      auto part_code = disassemble(image, *part);
      if (part_code && part_code->complete()) parts.push_back(std::move(*part_code));
    }
    return parts;
  }

  static bool in_parts(const std::vector<FunctionCode>& parts, uint64_t va) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const FunctionCode& part) { return va >= part.start && va < part.end; });
  }

  Result<void> build_probes() {
    index_functions();
    for (TracedFunction& function : plan_.functions) {
      auto code = disassemble(image_of(function.module_index), function.symbol);
      if (!code) return with_context(code.error(), "disassembling " + function.symbol.demangled);
      if (!code->complete()) {
        return make_error(ErrorCode::not_an_instruction,
                          function.symbol.demangled + " did not disassemble cleanly (undecodable bytes or branches "
                                                      "into instructions)",
                          "xref will not guess instruction boundaries for return probes; trace another function");
      }
      const uint64_t key = function_key(function.module_index, function.symbol.start);
      ret_traced_.insert(key);
      const bool is_start = start_entries_.count(key) || (code->entry_nop_va && start_sites_at(key, *code->entry_nop_va));
      const uint8_t flags = function.stop_return ? XREF_PROBE_F_STOP_RETURN : 0;
      std::vector<FetchItem> entry_fetches = function.entry_fetches;
      if (is_start && entry_fetches.empty()) entry_fetches = plan_.start_fetches;
      if (is_start && !function.entry_fetches.empty() && !plan_.start_fetches.empty()) {
        return make_error(ErrorCode::invalid_argument, "both --fetch and --fetch-at name the start function",
                          "use one of them for the start probe");
      }
      if (is_start) plan_.start_fetches = entry_fetches;
      // After a leading endbr64, a 5-byte nop is the better entry probe: the
      // kernel turns a uprobe there into a call (~10x cheaper than int3), and
      // the stack pointer is the same as at the first byte.
      const uint64_t entry_va = code->entry_nop_va ? *code->entry_nop_va : function.symbol.start;
      // A window that opens inside its function (--here, a breakpoint
      // location past the entry) needs no entry probe there: the frame is
      // already known.
      if (is_start || !mid_start_functions_.count(key)) {
        if (auto probe = add_probe(*code, function, entry_va, XREF_PROBE_ENTRY, flags, is_start, entry_fetches);
            !probe) {
          return probe;
        }
      }
      if (auto mid = add_mid_function_starts(*code, function, key); !mid) return mid;
      if (request_.uretprobes) {
        // One return probe at the entry; the kernel swaps the return address.
        if (auto probe = add_probe(*code, function, function.symbol.start, XREF_PROBE_URETPROBE, flags, false,
                                   function.return_fetches);
            !probe) {
          return probe;
        }
        continue;
      }
      // The function's rets and tail jumps, in its own code and in its
      // split-off parts (a .cold part's catch block can end in a tail jump).
      const std::vector<FunctionCode> parts = code_parts(function.module_index, *code);
      for (const FunctionCode& part : parts) {
        for (uint64_t ret : part.rets) {
          if (auto probe = add_probe(part, function, ret, XREF_PROBE_RET, flags, false, function.return_fetches);
              !probe) {
            return probe;
          }
        }
        for (const ExitJump& exit : part.exits) {
          if (exit.kind == ExitKind::cold_part || in_parts(parts, exit.target.va) ||
              is_split_part(function.module_index, *code, exit.target.va)) {
            continue;
          }
          if (exit.conditional) {
            // A probe on a jcc fires whether or not the jump is taken.
            plan_.warnings.push_back(function.symbol.demangled + " may tail-jump conditionally at " + to_hex(exit.va) +
                                     "; that exit is seen at the next event");
            continue;
          }
          if (exit.kind == ExitKind::indirect && exit.jump_table) continue;  // a switch: stays in the function
          if (exit.kind == ExitKind::indirect) {
            plan_.warnings.push_back(function.symbol.demangled + " may tail-call through a pointer at " +
                                     to_hex(exit.va) + " (" + exit.target.operand +
                                     "); such an exit is seen at the next event");
            continue;
          }
          if (exit.kind == ExitKind::outside_jump) {
            plan_.warnings.push_back(function.symbol.demangled + " jumps out of its code to " +
                                     to_hex(exit.target.va) + ", which starts no known function, at " +
                                     to_hex(exit.va) + "; that exit is seen at the next event");
            continue;
          }
          if (auto probe = add_probe(part, function, exit.va, XREF_PROBE_TAIL_EXIT, flags, false, {}); !probe) {
            return probe;
          }
          set_tail_target(function, exit.va, exit.target.va);
        }
      }
      if (code->rets.empty() && code->exits.empty()) {
        plan_.warnings.push_back(function.symbol.demangled + " has no ret instruction: its returns cannot be seen");
      }
    }
    return {};
  }

  // --callees-of FN --depth N / --all-calls-in FN: the callers are the
  // expanded functions of the static callee tree; each of their call sites
  // is probed at the call (the callee's entry) and at the return site (its
  // return), so every event carries its exact call site and no return
  // address on the stack is ever touched.
  Result<void> build_call_site_probes() {
    const bool all_calls = !request_.all_calls_in.empty();
    plan_.mode = all_calls ? "all_calls_in" : "callees_of";
    plan_.return_mode = "call_site_exact";
    const std::string& root_text = all_calls ? request_.all_calls_in : request_.callees_of;
    const char* flag = all_calls ? "--all-calls-in" : "--callees-of";
    auto root = resolve(root_text, flag);
    if (!root) return root.error();
    // The tree is followed inside the root's module (the executable, a
    // library, a plugin); calls into other modules end at their PLT stubs.
    tree_module_ = root->module_index;
    const ElfImage& image = image_of(tree_module_);
    const int depth = all_calls ? 1 : (request_.depth == 0 ? 1 : request_.depth);
    if (depth < 1 || depth > 16) {
      return make_error(ErrorCode::invalid_argument, "--depth must be between 1 and 16, got " + std::to_string(depth));
    }
    auto tree = callee_tree(image, root->start, depth, 20000);
    if (!tree) return tree.error();
    std::set<uint64_t> probed_callers;
    size_t sites = 0;
    for (const CalleeNode& node : tree->nodes) {
      if (node.state == NodeState::recursive && node.function) {
        plan_.warnings.push_back("recursion: " + node.function->demangled + " is reached again from itself");
      }
      if (node.state != NodeState::expanded || !node.function || !probed_callers.insert(node.va).second) continue;
      if (!node.complete) {
        return make_error(ErrorCode::not_an_instruction,
                          node.function->demangled + " did not disassemble cleanly",
                          "xref will not guess instruction boundaries; trace a smaller tree");
      }
      auto code = disassemble(image, *node.function);
      if (!code) return code.error();
      for (const CalleeEdge& edge : node.edges) {
        if (edge.kind == EdgeKind::tail_jump && is_split_part(tree_module_, *code, edge.target.va)) {
          // Not a tail call: the jump enters this function's own split part (handled below).
        } else if (edge.kind == EdgeKind::tail_jump && is_conditional(*code, edge.site_va)) {
          plan_.warnings.push_back(caller_label(node) + " may tail-jump conditionally at " + to_hex(edge.site_va) +
                                   "; that jump is not followed");
        } else if (auto added = add_edge(*code, node, edge); !added) {
          return added;
        }
        if (edge.kind == EdgeKind::call || edge.kind == EdgeKind::indirect_call || edge.kind == EdgeKind::tail_jump) {
          ++sites;
        }
        // The compiler's split-off ".cold" part runs as part of this call
        // (an exception handler, an unlikely branch): its call sites are
        // the function's too.
        if ((edge.kind == EdgeKind::jump || edge.kind == EdgeKind::tail_jump) && edge.child >= 0) {
          const CalleeNode& part = tree->nodes[static_cast<size_t>(edge.child)];
          if (!part.function || !is_split_part(tree_module_, *code, part.va) ||
              !probed_callers.insert(part.va).second) {
            continue;
          }
          auto cold_tree = callee_tree(image, part.va, 1, 1000);
          auto cold_code = disassemble(image, *part.function);
          if (!cold_tree || !cold_code) continue;
          for (const CalleeEdge& cold_edge : cold_tree->nodes[0].edges) {
            if (auto added = add_edge(*cold_code, cold_tree->nodes[0], cold_edge); !added) return added;
          }
        }
      }
    }
    if (sites == 0) {
      plan_.warnings.push_back(root->demangled + " has no call sites: its callees were inlined (or it calls nothing)");
    }
    for (const auto& [key, fetches] : call_site_fetches_) {
      if (!fetches.seen) {
        plan_.warnings.push_back(fetches.name + " is not called directly in the traced tree: its --fetch-at/--fetch-ret "
                                 "values are never read");
      }
    }
    return {};
  }

  static bool is_conditional(const FunctionCode& code, uint64_t va) {
    for (const ExitJump& exit : code.exits) {
      if (exit.va == va) return exit.conditional;
    }
    return false;
  }

  static std::string caller_label(const CalleeNode& node) {
    return node.function ? node.function->demangled : to_hex(node.va);
  }

  uint32_t callee_id(const CalleeEdge& edge) {
    if (auto existing = functions_by_start_.find(function_key(tree_module_, edge.target.va));
        edge.kind != EdgeKind::indirect_call && existing != functions_by_start_.end()) {
      return existing->second->id;
    }
    TracedFunction function;
    function.id = static_cast<uint32_t>(plan_.functions.size());
    function.module_index = tree_module_;
    if (edge.kind == EdgeKind::indirect_call) {
      function.indirect = true;
      function.symbol.name = "indirect@" + to_hex(edge.site_va);
      function.symbol.demangled = "indirect call " + edge.target.operand;
      function.symbol.start = 0;
    } else if (const FunctionSymbol* symbol = image_of(tree_module_).function_at(edge.target.va)) {
      function.symbol = *symbol;
    } else {
      function.symbol.name = function.symbol.demangled = to_hex(edge.target.va);
      function.symbol.start = edge.target.va;
    }
    plan_.functions.push_back(function);
    index_functions();
    if (edge.kind == EdgeKind::indirect_call) return function.id;
    functions_by_start_[function_key(tree_module_, edge.target.va)] = &plan_.functions.back();
    return function.id;
  }

  // What to fetch at an indirect call to learn its target.
  std::vector<FetchItem> indirect_target_fetch(const CalleeEdge& edge) {
    FetchItem item;
    item.name = "target";
    if (edge.target.kind == OperandKind::register_) {
      auto reg = register_from_name(edge.target.operand);
      if (!reg) return {};
      item.base = *reg;
      return {item};
    }
    if (edge.target.kind == OperandKind::rip_memory) {
      // At the probe, ip is the call instruction's address.
      item.base = Register::ip;
      item.deref_offsets = {static_cast<int32_t>(edge.target.va - edge.site_va)};
      return {item};
    }
    // [base], [base +- disp], [base + index*scale +- disp], [index*scale +- disp]
    // (a table of pointers). The index is BPF-only (no kernel fetch syntax).
    static const std::regex memory(
        R"(qword ptr \[(?:(\w+)(?: \+ (\w+)\*([1248]))?|(\w+)\*([1248]))(?: ([+-]) (0x[0-9a-f]+|\d+))?\])");
    std::smatch match;
    if (std::regex_match(edge.target.operand, match, memory)) {
      const bool indexed = match[2].matched || match[4].matched;
      if (indexed && request_.backend == "tracefs") {
        plan_.warnings.push_back("indirect call at " + to_hex(edge.site_va) + " (" + edge.target.operand +
                                 "): an indexed target cannot be fetched with --backend tracefs and stays unnamed");
        return {};
      }
      if (match[1].matched) {
        auto base = register_from_name(match[1].str());
        if (!base) return {};
        item.base = *base;
        if (match[2].matched) {
          auto index = register_from_name(match[2].str());
          if (!index) return {};
          item.index = *index;
          item.scale = static_cast<uint8_t>(std::stoi(match[3].str()));
        }
      } else {
        // index*scale alone: the index is also the base, so scale - 1 more of it.
        auto index = register_from_name(match[4].str());
        if (!index) return {};
        item.base = *index;
        const int scale = std::stoi(match[5].str());
        if (scale > 1) {
          item.index = *index;
          item.scale = static_cast<uint8_t>(scale - 1);
        }
      }
      int64_t offset = match[7].matched ? std::stoll(match[7].str(), nullptr, 0) : 0;
      if (match[6].str() == "-") offset = -offset;
      item.deref_offsets = {static_cast<int32_t>(offset)};
      return {item};
    }
    plan_.warnings.push_back("indirect call at " + to_hex(edge.site_va) + " (" + edge.target.operand +
                             "): its target cannot be fetched and stays unnamed");
    return {};
  }

  bool call_site_mode() const { return !request_.callees_of.empty() || !request_.all_calls_in.empty(); }

  // --fetch-at/--fetch-ret of a callee, read at its call and return sites.
  // There the stack pointer is 8 above its value at the callee's entry and
  // ret (the return address is not pushed yet, or already popped), so
  // sp-relative reads move down by 8.
  static std::vector<FetchItem> at_call_site(std::vector<FetchItem> items) {
    for (FetchItem& item : items) {
      if (item.base == Register::sp && !item.deref_offsets.empty()) item.deref_offsets.front() -= 8;
    }
    return items;
  }

  Result<void> add_edge(const FunctionCode& code, const CalleeNode& caller, const CalleeEdge& edge) {
    const std::string caller_name = caller.function->demangled;
    switch (edge.kind) {
      case EdgeKind::call:
      case EdgeKind::indirect_call: {
        const uint32_t id = callee_id(edge);
        TracedFunction callee = plan_.functions[id];
        std::vector<FetchItem> fetches =
            edge.kind == EdgeKind::indirect_call ? indirect_target_fetch(edge) : std::vector<FetchItem>{};
        std::vector<FetchItem> return_fetches;
        if (auto asked = call_site_fetches_.find(function_key(tree_module_, edge.target.va));
            edge.kind == EdgeKind::call && asked != call_site_fetches_.end()) {
          asked->second.seen = true;
          fetches = at_call_site(asked->second.at_entry);
          return_fetches = at_call_site(asked->second.at_return);
        }
        if (auto probe = add_probe(code, callee, edge.site_va, XREF_PROBE_CALL_SITE, 0, false, fetches); !probe) {
          return probe;
        }
        plan_.probes[last_role_].indirect = edge.kind == EdgeKind::indirect_call;
        if (!edge.return_in_function) {
          plan_.warnings.push_back("call at " + to_hex(edge.site_va) + " in " + caller_name +
                                   " does not return into the function (noreturn callee): no return probe");
          return {};
        }
        return add_probe(code, callee, edge.return_va, XREF_PROBE_RETURN_SITE, 0, false, return_fetches);
      }
      case EdgeKind::tail_jump: {
        const uint32_t id = callee_id(edge);
        if (id < plan_.functions.size() && plan_.functions[id].symbol.start == caller.va) {
          plan_.warnings.push_back("recursion through a tail call: " + caller_name + " jumps to itself");
        }
        return add_probe(code, plan_.functions[id], edge.site_va, XREF_PROBE_TAIL_SITE, 0, false, {});
      }
      case EdgeKind::jump:
      case EdgeKind::indirect_jump:
        return {};
    }
    return {};
  }

  Result<void> add_stop_probe() {
    auto va = parse_u64(request_.stop, "--stop");
    uint64_t stop_va = 0;
    if (va) {
      stop_va = *va;
    } else {
      auto function = resolve_function(*plan_.image, request_.stop, "--stop");
      if (!function) return function.error();
      stop_va = function->start;
    }
    const FunctionSymbol* owner = plan_.image->function_containing(stop_va);
    if (owner == nullptr) {
      if (auto data = data_not_code(*plan_.image, stop_va, "--stop")) return *data;
      return make_error(ErrorCode::address_unmapped, "--stop " + to_hex(stop_va) + " is in no known function");
    }
    auto code = disassemble(*plan_.image, *owner);
    if (!code) return code.error();
    plan_.stop_va = stop_va;
    TracedFunction none;
    none.id = 0xffffffff;
    return add_probe(*code, none, stop_va, XREF_PROBE_STOP, 0, false, {});
  }

  // The TAIL_EXIT role add_probe just placed for `function` at `va` jumps to
  // `target_va` (a role merged into a tail-call site, or left out because
  // the kernel refuses the instruction, has no tail target to keep).
  void set_tail_target(const TracedFunction& function, uint64_t va, uint64_t target_va) {
    PlannedProbe& role = plan_.probes[last_role_];
    if (role.static_va == va && role.module_index == function.module_index && role.kind == XREF_PROBE_TAIL_EXIT &&
        role.function_id == function.id) {
      role.tail_target_va = target_va;
    }
  }

  // A tail exit hands its frame to the function it jumps to: the frame's
  // function from then on, when the plan knows it.
  void name_tail_targets() {
    index_functions();
    for (PlannedProbe& probe : plan_.probes) {
      if (probe.kind != XREF_PROBE_TAIL_EXIT || probe.tail_target_va == 0) continue;
      auto found = functions_by_start_.find(function_key(probe.module_index, probe.tail_target_va));
      if (found != functions_by_start_.end() && found->second != nullptr) probe.tail_target_id = found->second->id;
    }
  }

  bool is_start_function(uint64_t key) const { return start_entries_.count(key) || mid_start_functions_.count(key); }

  // A start function that ends in a tail jump hands its frame to the
  // jump's target; when that target is not traced, the window stays open
  // until the target returns. Its rets (and, through its own tail jumps,
  // theirs) get continuation probes that see that moment; a target that
  // cannot be followed leaves the end to be inferred from the thread's
  // next event above the frame.
  Result<void> add_continuations() {
    static constexpr size_t kMaxContinuations = 32;
    std::vector<std::pair<uint32_t, uint64_t>> pending;
    const size_t traced = plan_.functions.size();
    for (size_t i = 0; i < traced; ++i) {
      const TracedFunction& function = plan_.functions[i];
      if (function.indirect || !is_start_function(function_key(function.module_index, function.symbol.start))) continue;
      auto code = disassemble(image_of(function.module_index), function.symbol);
      if (!code) continue;
      const std::vector<FunctionCode> parts = code_parts(function.module_index, *code);
      for (const FunctionCode& part : parts) {
        for (const ExitJump& exit : part.exits) {
          if (exit.kind == ExitKind::tail_call && !exit.conditional && !in_parts(parts, exit.target.va)) {
            pending.emplace_back(function.module_index, exit.target.va);
          }
        }
      }
    }
    std::set<uint64_t> seen;
    size_t added = 0;
    while (!pending.empty()) {
      auto [module_index, va] = pending.back();
      pending.pop_back();
      const FunctionSymbol* symbol = image_of(module_index).function_at(va);
      if (symbol == nullptr) continue;
      ModuleFunction target;
      static_cast<FunctionSymbol&>(target) = *symbol;
      target.module_index = module_index;
      if (symbol->source == SymbolSource::plt) {
        auto resolved = plt_target(*modules_, module_index, *symbol);
        if (!resolved) {
          plan_.warnings.push_back("a start function tail-jumps to " + symbol->demangled +
                                   ", which no loaded module defines: its window's end is inferred");
          continue;
        }
        target = *resolved;
      }
      const uint64_t key = key_of(target);
      if (ret_traced_.count(key) || !seen.insert(key).second) continue;
      if (added++ == kMaxContinuations) {
        plan_.warnings.push_back("more than " + std::to_string(kMaxContinuations) +
                                 " functions continue a start frame through tail jumps: the rest end windows by "
                                 "inference");
        break;
      }
      auto code = disassemble(image_of(target.module_index), target);
      if (!code || !code->complete()) {
        plan_.warnings.push_back(target.demangled + " (reached by a start function's tail jump) did not disassemble "
                                 "cleanly: windows handed to it end by inference");
        continue;
      }
      index_functions();
      uint32_t id = 0;
      if (auto existing = functions_by_start_.find(key); existing != functions_by_start_.end() && existing->second) {
        id = existing->second->id;
      } else {
        TracedFunction function;
        function.id = static_cast<uint32_t>(plan_.functions.size());
        function.symbol = target;
        function.module_index = target.module_index;
        function.continuation = true;
        plan_.functions.push_back(function);
        index_functions();
        id = function.id;
      }
      const TracedFunction function = plan_.functions[id];
      const std::vector<FunctionCode> parts = code_parts(target.module_index, *code);
      for (const FunctionCode& part : parts) {
        for (uint64_t ret : part.rets) {
          if (auto probe = add_probe(part, function, ret, XREF_PROBE_RET, XREF_PROBE_F_CONTINUATION, false, {});
              !probe) {
            return probe;
          }
        }
        for (const ExitJump& exit : part.exits) {
          if (exit.kind != ExitKind::tail_call || exit.conditional || in_parts(parts, exit.target.va)) continue;
          if (auto probe = add_probe(part, function, exit.va, XREF_PROBE_TAIL_EXIT, XREF_PROBE_F_CONTINUATION,
                                     false, {});
              !probe) {
            return probe;
          }
          set_tail_target(function, exit.va, exit.target.va);
          pending.emplace_back(target.module_index, exit.target.va);
        }
      }
    }
    return {};
  }

  // Where a C++ exception is caught (__cxa_begin_catch) or a cleanup
  // passes it on (_Unwind_Resume), the stack pointer shows which traced
  // frames it has left: they end then, [unwound], not at the thread's next
  // start. Only the runtime's own libraries (or a static executable) are
  // searched.
  void add_unwind_checks() {
    static const char* const kNames[] = {"__cxa_begin_catch", "_Unwind_Resume"};
    for (const Module& module : target_.space.modules()) {
      const std::string name = module.name();
      const bool runtime = name.rfind("libstdc++", 0) == 0 || name.rfind("libgcc_s", 0) == 0 ||
                           name.rfind("libc++abi", 0) == 0 || name.rfind("libunwind", 0) == 0 ||
                           &module == plan_.module;
      if (!runtime) continue;
      auto image = target_.space.image(module);
      if (!image) continue;
      for (const char* wanted : kNames) {
        for (const FunctionSymbol* found : (*image)->find_functions(wanted)) {
          if (found->source == SymbolSource::plt || found->name != wanted) continue;
          auto code = disassemble(**image, *found);
          if (!code || !code->complete()) continue;
          TracedFunction none;
          none.id = XREF_FUNCTION_NONE;
          none.module_index = module_index_of(&module, *image);
          const uint64_t va = code->entry_nop_va ? *code->entry_nop_va : found->start;
          // A probe there already (the user traces it): leave it be.
          if (head_at(none.module_index, va)) continue;
          if (auto probe = add_probe(*code, none, va, XREF_PROBE_UNWIND_CHECK, 0, false, {}); probe) {
            plan_.unwind_checks.push_back(name + ":" + wanted);
          }
          break;
        }
      }
    }
  }

  // The order in which the roles of one address act: the return of the
  // call just before it, a --stop, the entry of the function starting here,
  // then what the instruction itself does (call, jump, ret).
  static int role_rank(uint8_t kind) {
    switch (kind) {
      case XREF_PROBE_RETURN_SITE: return 0;
      case XREF_PROBE_STOP: return 1;
      case XREF_PROBE_ENTRY:
      case XREF_PROBE_UNWIND_CHECK: return 2;
    }
    return 3;
  }

  std::optional<size_t> head_at(uint32_t module_index, uint64_t va) const {
    for (size_t index = 0; index < plan_.probes.size(); ++index) {
      const PlannedProbe& probe = plan_.probes[index];
      if (probe.head && probe.static_va == va && probe.module_index == module_index &&
          probe.kind != XREF_PROBE_URETPROBE) {
        return index;
      }
    }
    return std::nullopt;
  }

  // A role whose instruction the kernel will not probe (a LOCK prefix, a
  // notrack jump). A return site moves to the next instruction when the
  // refused one only touches memory (it neither branches nor moves rsp):
  // the callee's frame is still the innermost there, so the return is seen
  // exactly, one instruction late. Any other role is left out with a
  // warning, and a call whose return cannot be seen pushes a frame that
  // ends silently (trace_abi.h, XREF_PROBE_F_UNSEEN_RETURN).
  Result<void> place_refused_probe(const FunctionCode& code, const TracedFunction& function, uint64_t va,
                                   uint8_t kind, uint8_t flags, bool start, const std::vector<FetchItem>& fetches,
                                   const std::string& what) {
    const Instruction* instruction = instruction_at(code, va);
    const std::string text = instruction ? instruction->text : "?";
    if (kind == XREF_PROBE_RETURN_SITE && instruction != nullptr && instruction->kind == InstructionKind::other &&
        text.find("sp") == std::string::npos && is_instruction_start(code, instruction->end())) {
      return add_probe(code, function, instruction->end(), kind, flags, start, fetches);
    }
    if (start) {
      return make_error(ErrorCode::unsupported,
                        what + " (" + text + "): the kernel does not place uprobes on LOCK- or segment-prefixed "
                               "instructions, and windows open there",
                        "start the window at another function");
    }
    if (kind == XREF_PROBE_RETURN_SITE && last_role_ < plan_.probes.size() &&
        plan_.probes[last_role_].kind == XREF_PROBE_CALL_SITE) {
      plan_.probes[last_role_].flags |= XREF_PROBE_F_UNSEEN_RETURN;
    }
    plan_.warnings.push_back(what + " (" + text + ") cannot be probed: the kernel refuses uprobes on LOCK- and "
                             "segment-prefixed instructions; " +
                             (kind == XREF_PROBE_RETURN_SITE ? "that call's return is not shown"
                                                             : "that event is not seen"));
    return {};
  }

  // Adds one role at `va`. An address can play several roles (a thunk's
  // first instruction is its entry and its tail jump; a tail jump of a
  // start function is also a tail-call site in call-site mode): they are
  // merged into one chain, never refused.
  Result<void> add_probe(const FunctionCode& code, const TracedFunction& function, uint64_t va, uint8_t kind,
                         uint8_t flags, bool start, const std::vector<FetchItem>& fetches) {
    const std::string what = std::string(kind == XREF_PROBE_STOP ? "--stop" : "probe") + " at " + to_hex(va);
    const uint32_t module_index = kind == XREF_PROBE_STOP ? 0 : function.module_index;
    if (auto site = check_probe_site(image_of(module_index), code, va, what); !site) return site;
    if (kernel_refuses_uprobe(image_of(module_index), va)) {
      return place_refused_probe(code, function, va, kind, flags, start, fetches, what);
    }
    auto offset = image_of(module_index).file_offset_of(va);
    if (!offset) return offset.error();
    PlannedProbe probe;
    probe.module_index = module_index;
    probe.static_va = va;
    probe.file_offset = *offset;
    probe.function_id = function.id;
    probe.kind = kind;
    probe.flags = flags;
    probe.start = start;
    probe.fetches = fetches;
    const auto head = kind == XREF_PROBE_URETPROBE ? std::nullopt : head_at(module_index, va);
    if (!head) {
      last_role_ = plan_.probes.size();
      plan_.probes.push_back(std::move(probe));
      return {};
    }
    return merge_role(*head, std::move(probe), what);
  }

  // `role` becomes `probe` in its place in the chain.
  static void replace_role(PlannedProbe& role, PlannedProbe probe) {
    probe.head = role.head;
    probe.next = role.next;
    role = std::move(probe);
  }

  Result<void> merge_role(size_t head, PlannedProbe probe, const std::string& what) {
    std::vector<size_t> chain;
    plan_.for_each_role(head, [&](size_t index, const PlannedProbe&) { chain.push_back(index); });
    for (size_t index : chain) {
      PlannedProbe& existing = plan_.probes[index];
      last_role_ = index;
      // Back-to-back calls: the return site of one call is the call site
      // (or a ret, a tail jump) of the next; the first role sees the
      // return before acting.
      if (probe.kind == XREF_PROBE_RETURN_SITE && index == head) {
        if (existing.kind == XREF_PROBE_RETURN_SITE || (existing.flags & XREF_PROBE_F_RETURN_SITE)) return {};
        existing.flags |= XREF_PROBE_F_RETURN_SITE;
        existing.return_function_id = probe.function_id;
        return {};
      }
      if (existing.kind == XREF_PROBE_RETURN_SITE && index == head && role_rank(probe.kind) > 0) {
        const uint32_t returning = existing.function_id;
        replace_role(existing, std::move(probe));
        existing.flags |= XREF_PROBE_F_RETURN_SITE;
        existing.return_function_id = returning;
        return {};
      }
      if (existing.kind == probe.kind && existing.function_id == probe.function_id) {
        existing.start = existing.start || probe.start;
        if (existing.fetches.empty()) existing.fetches = probe.fetches;
        return {};
      }
      // A tail jump that is both the function's exit and a tail-call site:
      // one role, the call-site view (the target's entry, marked [tail]).
      if ((existing.kind == XREF_PROBE_TAIL_EXIT && probe.kind == XREF_PROBE_TAIL_SITE) ||
          (existing.kind == XREF_PROBE_TAIL_SITE && probe.kind == XREF_PROBE_TAIL_EXIT)) {
        if (existing.kind == XREF_PROBE_TAIL_EXIT) {
          const uint8_t return_flags = existing.flags & XREF_PROBE_F_RETURN_SITE;
          const uint32_t returning = existing.return_function_id;
          replace_role(existing, std::move(probe));
          existing.flags |= return_flags;
          existing.return_function_id = returning;
        }
        return {};
      }
      if ((existing.kind == XREF_PROBE_STOP && probe.start) || (probe.kind == XREF_PROBE_STOP && existing.start)) {
        return make_error(ErrorCode::invalid_argument, what + " is where windows open",
                          "give --stop an address the window reaches after its start");
      }
    }
    if (chain.size() >= XREF_PROBE_MAX_ROLES) {
      return make_error(ErrorCode::internal, what + " would play more than " +
                                                 std::to_string(XREF_PROBE_MAX_ROLES) + " roles");
    }
    // Insert by rank: before the first role that acts later.
    const size_t added = plan_.probes.size();
    last_role_ = added;
    probe.head = false;
    probe.next = -1;
    plan_.probes.push_back(std::move(probe));
    PlannedProbe& role = plan_.probes[added];
    int32_t previous = -1;
    for (size_t index : chain) {
      if (role_rank(plan_.probes[index].kind) > role_rank(role.kind)) break;
      previous = static_cast<int32_t>(index);
    }
    if (previous < 0) {
      PlannedProbe& old_head = plan_.probes[head];
      role.head = true;
      role.next = static_cast<int32_t>(head);
      old_head.head = false;
      // The return of the call before belongs to whatever acts first.
      if (old_head.flags & XREF_PROBE_F_RETURN_SITE) {
        old_head.flags &= static_cast<uint8_t>(~XREF_PROBE_F_RETURN_SITE);
        role.flags |= XREF_PROBE_F_RETURN_SITE;
        role.return_function_id = old_head.return_function_id;
      }
    } else {
      PlannedProbe& before = plan_.probes[static_cast<size_t>(previous)];
      role.next = before.next;
      before.next = static_cast<int32_t>(added);
    }
    return {};
  }

  const Target& target_;
  std::optional<ProbeModules> modules_;  // the plan's modules until it is done
  TraceRequest request_;  // a copy: --here fills in its default mode
  TracePlan plan_;
  std::map<uint64_t, TracedFunction*> functions_by_start_;
  std::map<std::pair<uint64_t, uint64_t>, bool> split_parts_;
  struct CallSiteFetches {
    std::string name;
    std::vector<FetchItem> at_entry;
    std::vector<FetchItem> at_return;
    bool seen = false;
  };
  std::map<uint64_t, CallSiteFetches> call_site_fetches_;  // call-site mode: by the callee's function key
  std::set<uint64_t> start_entries_;        // function keys whose entry probe opens windows
  std::set<uint64_t> mid_start_functions_;  // function keys with a window opening inside them
  std::vector<StartSite> start_sites_;      // --start bp:N locations
  uint32_t tree_module_ = 0;                // call-site mode: the module of the callee tree
  size_t last_role_ = 0;                    // the role the last add_probe added or merged into
  std::set<uint64_t> ret_traced_;           // function keys whose rets are probed (build_probes)
};

}  // namespace

Result<TracePlan> plan_trace(const Target& target, const TraceRequest& request) {
  return Planner(target, request).run();
}

}  // namespace xref
