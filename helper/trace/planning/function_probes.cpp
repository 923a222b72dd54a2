// The probes of the traced functions themselves: each one's entry (which
// opens windows for a start function), and its returns as its rets and tail
// exits (sites/function_sites.h), or one uretprobe with --uretprobes.
#include <string_view>

#include "hex.h"
#include "identifier_chars.h"
#include "process/ifunc_binding.h"
#include "trace/planning/roles.h"
#include "trace/planning/stages.h"

namespace xref {
namespace {

// A function's rets and tail exits, in its own code and in its split-off
// parts (a .cold part's catch block can end in a tail jump). The exits a
// probe cannot see are warned about: they show at the next event.
Result<void> add_exit_probes(PlanState& state, const FunctionCode& code, const TracedFunction& function,
                             uint8_t flags) {
  const uint32_t module_index = function.module_index;
  const ElfImage& image = state.image_of(module_index);
  const std::vector<FunctionCode> parts = state.split_parts.code_parts(module_index, image, code);
  const std::string& name = function.symbol.demangled;
  for (const FunctionExit& exit : function_exits(state.split_parts, module_index, image, parts)) {
    const FunctionCode& part = parts[exit.part];
    switch (exit.kind) {
      case FunctionExitKind::ret:
        if (auto probe = add_role(state, part, function, exit.va, XREF_PROBE_RET, flags, false,
                                  function.return_fetches);
            !probe) {
          return probe;
        }
        break;
      case FunctionExitKind::conditional_tail_jump:
        // A probe on a jcc fires whether or not the jump is taken.
        state.plan.warnings.push_back(name + " may tail-jump conditionally at " + to_hex(exit.va) +
                                      "; that exit is seen at the next event");
        break;
      case FunctionExitKind::pointer_tail_jump:
        state.plan.warnings.push_back(name + " may tail-call through a pointer at " + to_hex(exit.va) + " (" +
                                      exit.operand + "); such an exit is seen at the next event");
        break;
      case FunctionExitKind::outside_jump:
        state.plan.warnings.push_back(name + " jumps out of its code to " + to_hex(exit.target_va) +
                                      ", which starts no known function, at " + to_hex(exit.va) +
                                      "; that exit is seen at the next event");
        break;
      case FunctionExitKind::tail_jump:
        if (auto probe = add_role(state, part, function, exit.va, XREF_PROBE_TAIL_EXIT, flags, false, {}); !probe) {
          return probe;
        }
        set_tail_target(state, function, exit.va, exit.target_va);
        break;
    }
  }
  if (code.rets.empty() && code.exits.empty()) {
    state.plan.warnings.push_back(name + " has no ret instruction: its returns cannot be seen");
  }
  return {};
}

// Whether `code` (with its split-off parts) may leave by a jump no probe
// sees: through a pointer, conditionally, or to no known function. Its
// frames can then end without an event; the BPF program infers such an end
// ([inferred]) instead of taking it for unwinding (XREF_PROBE_F_UNSEEN_EXIT).
bool has_unseen_exit(PlanState& state, const FunctionCode& code, const TracedFunction& function) {
  const ElfImage& image = state.image_of(function.module_index);
  const std::vector<FunctionCode> parts = state.split_parts.code_parts(function.module_index, image, code);
  for (const FunctionExit& exit : function_exits(state.split_parts, function.module_index, image, parts)) {
    if (exit.kind != FunctionExitKind::ret && exit.kind != FunctionExitKind::tail_jump) return true;
  }
  return false;
}

Result<void> add_probes_of(PlanState& state, const TracedFunction& function) {
  auto code = disassemble(state.image_of(function.module_index), function.symbol);
  if (!code) return with_context(code.error(), "disassembling " + function.symbol.demangled);
  if (!code->complete()) {
    return make_error(ErrorCode::not_an_instruction,
                      bound_code_name(function.symbol.demangled, function.implementation) +
                          " did not disassemble cleanly (undecodable bytes or branches "
                                                  "into instructions)",
                      "xref will not guess instruction boundaries for return probes; trace another function");
  }
  const uint64_t key = function_key(function.module_index, function.symbol.start);
  state.ret_traced.insert(key);
  const bool is_start =
      state.start_entries.count(key) || (code->entry_nop_va && start_site_at(state, key, *code->entry_nop_va));
  const uint8_t flags = function.stop_return ? XREF_PROBE_F_STOP_RETURN : 0;
  std::vector<FetchItem> entry_fetches = function.entry_fetches;
  if (is_start && entry_fetches.empty()) entry_fetches = state.plan.start_fetches;
  if (is_start && !function.entry_fetches.empty() && !state.plan.start_fetches.empty()) {
    return make_error(ErrorCode::invalid_argument, "both --fetch and --fetch-at name the start function",
                      "use one of them for the start probe");
  }
  if (is_start) state.plan.start_fetches = entry_fetches;
  // A window that opens inside its function (--here, a breakpoint location
  // past the entry) needs no entry probe there: the frame is already known.
  const bool unseen_exit = !state.request.uretprobes && has_unseen_exit(state, *code, function);
  if (unseen_exit) state.unseen_exit.insert(key);
  const uint8_t entry_flags = static_cast<uint8_t>(flags | (unseen_exit ? XREF_PROBE_F_UNSEEN_EXIT : 0));
  if (is_start || !state.mid_start_functions.count(key)) {
    if (auto probe = add_role(state, *code, function, entry_probe_va(*code), XREF_PROBE_ENTRY, entry_flags, is_start,
                              entry_fetches);
        !probe) {
      return probe;
    }
  }
  if (auto mid = add_mid_function_starts(state, *code, function); !mid) return mid;
  if (state.request.uretprobes) {
    // One return probe at the entry; the kernel swaps the return address.
    return add_role(state, *code, function, function.symbol.start, XREF_PROBE_URETPROBE, flags, false,
                    function.return_fetches);
  }
  return add_exit_probes(state, *code, function, flags);
}

}  // namespace

// At top-level commas only: "std::_Function_handler<int (int), f(int)::{lambda(int)#1}>::_M_invoke"
// is one name.
std::vector<std::string> split_function_list(const std::string& list) {
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
    const bool word_start = i == 0 || !is_identifier_char(list[i - 1]);
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

Result<void> add_function_probes(PlanState& state) {
  for (const TracedFunction& function : state.plan.functions) {
    if (auto probes = add_probes_of(state, function); !probes) return probes;
  }
  return {};
}

}  // namespace xref
