#include "session_breakpoints.h"

#include <algorithm>

#include "number_parse.h"

namespace xref::lldb_plugin {
namespace {

std::string disabled_reason(const std::string& command) {
  return " disabled while the " + command +
         " is armed: a uprobe at the same address would swallow it; re-enabled when the " + command + " ends";
}

}  // namespace

void HeldBreakpoints::undo() {
  for (lldb::break_id_t id : disabled) {
    if (lldb::SBBreakpoint breakpoint = target.FindBreakpointByID(id); breakpoint.IsValid()) breakpoint.SetEnabled(true);
  }
  disabled.clear();
}

std::vector<lldb::break_id_t> breakpoint_references(const std::vector<std::string>& values) {
  std::vector<lldb::break_id_t> ids;
  for (const std::string& value : values) {
    if (value.rfind("bp:", 0) != 0) continue;
    auto id = parse_u64(std::string_view(value).substr(3), "breakpoint");
    if (id && *id > 0 && *id <= static_cast<uint64_t>(INT32_MAX)) ids.push_back(static_cast<lldb::break_id_t>(*id));
  }
  return ids;
}

std::vector<lldb::break_id_t> breakpoints_at(lldb::SBTarget target, uint64_t address) {
  std::vector<lldb::break_id_t> ids;
  for (uint32_t index = 0; index < target.GetNumBreakpoints(); ++index) {
    lldb::SBBreakpoint breakpoint = target.GetBreakpointAtIndex(index);
    if (!breakpoint.IsValid() || !breakpoint.IsEnabled()) continue;
    for (size_t at = 0; at < breakpoint.GetNumLocations(); ++at) {
      lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
      if (location.IsValid() && location.IsEnabled() && location.GetLoadAddress() == address) {
        ids.push_back(breakpoint.GetID());
        break;
      }
    }
  }
  return ids;
}

bool hold_breakpoints(CommandScope& scope, const std::vector<lldb::break_id_t>& ids, const std::string& what,
                      HeldBreakpoints& held, std::string& error) {
  held.target = scope.target();
  if (ids.empty()) return true;
  if (held.target.GetProcess().GetState() != lldb::eStateStopped) {
    const std::string id = std::to_string(ids.front());
    error = what + " needs the process stopped, so that breakpoint " + id +
            " is out of its memory before the probes go in: `process interrupt` first";
    return false;
  }
  for (lldb::break_id_t id : ids) {
    lldb::SBBreakpoint breakpoint = held.target.FindBreakpointByID(id);
    if (!breakpoint.IsValid() || !breakpoint.IsEnabled()) continue;
    breakpoint.SetEnabled(false);
    held.disabled.push_back(id);
  }
  return true;
}

void keep_breakpoints_off(CommandScope& scope, SessionRecord& session, const HeldBreakpoints& held,
                          const nlohmann::json& ids, const std::string& command) {
  std::vector<lldb::break_id_t> named;
  for (const auto& id : ids.is_array() ? ids : nlohmann::json::array()) {
    if (!id.is_number_integer()) continue;
    const auto breakpoint_id = id.get<lldb::break_id_t>();
    if (std::find(held.disabled.begin(), held.disabled.end(), breakpoint_id) != held.disabled.end()) {
      named.push_back(breakpoint_id);
      continue;
    }
    lldb::SBBreakpoint breakpoint = scope.target().FindBreakpointByID(breakpoint_id);
    if (!breakpoint.IsValid() || !breakpoint.IsEnabled()) continue;
    breakpoint.SetEnabled(false);
    session.disabled_breakpoints.push_back(static_cast<uint32_t>(breakpoint_id));
    scope.print("xref: warning: breakpoint " + std::to_string(breakpoint_id) + disabled_reason(command) +
                " (disabled after the probes went in: if its location is a probe, that probe may be lost)");
  }
  for (lldb::break_id_t id : held.disabled) {
    if (std::find(named.begin(), named.end(), id) != named.end()) {
      session.disabled_breakpoints.push_back(static_cast<uint32_t>(id));
      scope.print("xref: breakpoint " + std::to_string(id) + disabled_reason(command));
    } else {
      scope.target().FindBreakpointByID(id).SetEnabled(true);
      if (std::find(held.quiet.begin(), held.quiet.end(), id) != held.quiet.end()) continue;
      scope.print("xref: warning: the helper did not put probes on breakpoint " + std::to_string(id) +
                  "'s locations; it stays enabled");
    }
  }
}

}  // namespace xref::lldb_plugin
