#include "sites/breakpoints.h"

#include <algorithm>

#include "hex.h"
#include "number_parse.h"

namespace xref {

std::optional<uint32_t> breakpoint_reference(const std::string& text) {
  if (text.rfind("bp:", 0) != 0) return std::nullopt;
  auto number = parse_u64(text.substr(3), "breakpoint number");
  if (!number || *number == 0 || *number > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*number);
}

Result<std::vector<CodeSite>> breakpoint_sites(const Target& target, const DebuggerContext& debugger, uint32_t id,
                                               const std::string& what) {
  const std::string named = what + " bp:" + std::to_string(id);
  const auto breakpoint = std::find_if(debugger.breakpoints.begin(), debugger.breakpoints.end(),
                                       [&](const DebuggerBreakpoint& candidate) { return candidate.id == id; });
  if (breakpoint == debugger.breakpoints.end()) {
    return make_error(ErrorCode::invalid_argument, named + ": there is no breakpoint " + std::to_string(id),
                      "list them with `breakpoint list` (lldb) or `info breakpoints` (gdb)");
  }
  if (breakpoint->locations.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      named + ": breakpoint " + std::to_string(id) + " has no resolved location in the process",
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

Result<void> check_breakpoint_collisions(const std::vector<LiveProbe>& probes, const DebuggerContext& debugger,
                                         const std::vector<uint32_t>& exempt) {
  for (const DebuggerBreakpoint& breakpoint : debugger.breakpoints) {
    if (!breakpoint.enabled || std::find(exempt.begin(), exempt.end(), breakpoint.id) != exempt.end()) continue;
    for (const DebuggerBreakpointLocation& location : breakpoint.locations) {
      if (!location.enabled) continue;
      for (const LiveProbe& probe : probes) {
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
