#include "trace/start_sites.h"

#include <algorithm>

#include "cfa_rule.h"
#include "hex.h"
#include "number_parse.h"

namespace xref {

Result<HereCfa> choose_here_cfa(const HereFrame& frame, std::optional<uint64_t> rule_cfa,
                                std::optional<StackRange> stack, const std::string& rule_text) {
  HereCfa chosen{frame.cfa, ""};
  if (rule_cfa && *rule_cfa != frame.cfa) {
    chosen.cfa = *rule_cfa;
    chosen.warning = "the debugger's CFA " + to_hex(frame.cfa) + " disagrees with the .eh_frame rule at the pc (" +
                     rule_text + " = " + to_hex(*rule_cfa) + "); using the unwind rule";
  }
  // The return address sits just below the CFA, above sp, on sp's stack.
  if (frame.sp && stack) {
    const bool on_stack = chosen.cfa > *frame.sp && chosen.cfa - 8 >= stack->start && chosen.cfa <= stack->end;
    if (!on_stack) {
      return make_error(ErrorCode::invalid_argument,
                        "--here: the frame's CFA " + to_hex(chosen.cfa) + " is not above its sp " + to_hex(*frame.sp) +
                            " on the thread's stack [" + to_hex(stack->start) + ", " + to_hex(stack->end) + ")",
                        "the debugger cannot unwind this frame; step past the function's first instructions "
                        "or use --start");
    }
  }
  return chosen;
}

Result<HereCfa> here_cfa(const Target& target, const HereFrame& frame, const CodeSite& site) {
  std::optional<uint64_t> rule_cfa;
  std::string rule_text;
  if (frame.sp && site.image) {
    if (auto rule = cfa_rule_at(*site.image, site.static_va)) {
      rule_text = to_string(*rule);
      if (rule->reg == CfaRule::Register::rsp) {
        rule_cfa = *frame.sp + static_cast<uint64_t>(rule->offset);
      } else if (rule->reg == CfaRule::Register::rbp && frame.bp) {
        rule_cfa = *frame.bp + static_cast<uint64_t>(rule->offset);
      }
    }
  }
  std::optional<StackRange> stack;
  if (frame.sp) {
    for (const MapEntry& mapping : target.space.maps()) {
      if (*frame.sp >= mapping.start && *frame.sp < mapping.end) {
        stack = StackRange{mapping.start, mapping.end};
        break;
      }
    }
  }
  return choose_here_cfa(frame, rule_cfa, stack, rule_text);
}

Result<CodeSite> place_code_address(const Target& target, uint64_t live_va, const std::string& what) {
  const LiveAddress live = target.space.resolve_live(live_va);
  if (live.candidates.empty() || !live.candidates.front().file_backed || live.candidates.front().module == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      what + " " + to_hex(live_va) + " is not in file-backed code of the process (" +
                          address_kind_name(live.kind) + ")",
                      "JIT or anonymous code cannot be traced with uprobes");
  }
  const StaticCandidate& candidate = live.candidates.front();
  auto image = target.space.image(*candidate.module);
  if (!image) return image.error();
  const FunctionSymbol* function = (*image)->function_containing(candidate.static_va);
  if (function == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      what + " " + to_hex(live_va) + " (" + candidate.module->name() + ":" +
                          to_hex(candidate.static_va) + ") is in no known function",
                      "the module has neither symbols nor .eh_frame ranges there");
  }
  CodeSite site;
  site.module = candidate.module;
  site.image = *image;
  site.live_va = live_va;
  site.static_va = candidate.static_va;
  site.function = *function;
  site.at_entry = candidate.static_va == function->start;
  return site;
}

std::optional<uint32_t> breakpoint_reference(const std::string& text) {
  if (text.rfind("bp:", 0) != 0) return std::nullopt;
  auto number = parse_u64(text.substr(3), "breakpoint number");
  if (!number || *number == 0 || *number > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*number);
}

Result<std::vector<CodeSite>> breakpoint_sites(const Target& target, const DebuggerContext& debugger, uint32_t id) {
  const auto breakpoint = std::find_if(debugger.breakpoints.begin(), debugger.breakpoints.end(),
                                       [&](const DebuggerBreakpoint& candidate) { return candidate.id == id; });
  if (breakpoint == debugger.breakpoints.end()) {
    return make_error(ErrorCode::invalid_argument, "--start bp:" + std::to_string(id) + ": there is no breakpoint " +
                                                       std::to_string(id),
                      "list them with `breakpoint list` (lldb) or `info breakpoints` (gdb)");
  }
  if (breakpoint->locations.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "--start bp:" + std::to_string(id) + ": breakpoint " + std::to_string(id) +
                          " has no resolved location in the process",
                      "run the process until its code is loaded, or set the breakpoint on a function that exists");
  }
  std::vector<CodeSite> sites;
  for (const DebuggerBreakpointLocation& location : breakpoint->locations) {
    auto site = place_code_address(target, location.address, "breakpoint " + location.id + " at");
    if (!site) return site.error();
    sites.push_back(std::move(*site));
  }
  return sites;
}

Result<void> check_breakpoint_collisions(const std::vector<ProbeAddress>& probes, const DebuggerContext& debugger,
                                         const std::vector<uint32_t>& exempt) {
  for (const DebuggerBreakpoint& breakpoint : debugger.breakpoints) {
    if (!breakpoint.enabled || std::find(exempt.begin(), exempt.end(), breakpoint.id) != exempt.end()) continue;
    for (const DebuggerBreakpointLocation& location : breakpoint.locations) {
      if (!location.enabled) continue;
      for (const ProbeAddress& probe : probes) {
        if (probe.live_va != location.address) continue;
        return make_error(ErrorCode::breakpoint_collision,
                          "the " + probe.label + " probe at " + to_hex(probe.live_va) + " is breakpoint " +
                              location.id + "'s location: the uprobe would swallow the breakpoint",
                          "disable or delete breakpoint " + std::to_string(breakpoint.id) +
                              ", trace something else, or pass --allow-breakpoint-collision");
      }
    }
  }
  return {};
}

}  // namespace xref
