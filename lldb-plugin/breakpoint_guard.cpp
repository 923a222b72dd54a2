#include "breakpoint_guard.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "frontend.h"
#include "hex.h"

namespace xref::lldb_plugin {
namespace {

// Every command that lets the process run (the aliases c, n, s, finish, ...
// resolve to these).
constexpr const char* kResumeCommands[] = {"process continue", "thread continue",   "thread step-over",
                                           "thread step-in",   "thread step-out",   "thread step-inst",
                                           "thread step-inst-over", "thread until", "thread step-scripted"};

// Releases one breakpoint's locations that sit on the session's probe sites.
void release(Frontend& frontend, SessionRecord& session, lldb::SBBreakpoint breakpoint, Lines& lines) {
  std::vector<lldb::SBBreakpointLocation> taken;
  std::set<uint64_t> addresses;
  for (size_t at = 0; at < breakpoint.GetNumLocations(); ++at) {
    lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
    if (!location.IsValid() || !location.IsEnabled() || session.probe_sites.count(location.GetLoadAddress()) == 0) continue;
    taken.push_back(location);
    addresses.insert(location.GetLoadAddress());
  }
  if (taken.empty()) return;
  nlohmann::json live = nlohmann::json::array();
  for (uint64_t address : addresses) live.push_back(to_hex(address));
  // Off first: LLDB puts back the byte it saved (the uprobe's int3), which
  // the kernel's unregister needs to find to restore the file's.
  for (auto& location : taken) location.SetEnabled(false);
  const std::string reason = "breakpoint " + std::to_string(breakpoint.GetID());
  HelperReply reply = frontend.running_helper()->request(
      "session.release", {{"session", session.id}, {"addresses", live}, {"reason", reason}}, kSessionTimeout);
  for (auto& location : taken) location.SetEnabled(true);
  if (!reply.ok) {
    lines.push_back("xref: warning: session " + std::to_string(session.id) + " did not take its probes out of " +
                    reason + "'s address: " + reply.message);
    return;
  }
  for (uint64_t address : addresses) session.probe_sites.erase(address);
  for (const auto& line : reply.result.value("text", nlohmann::json::array())) lines.push_back(line);
  if (reply.result.value("ended", false)) frontend.end_session(session.id);
}

bool before_resume(void* baton, const char**) {
  // FindDebuggerWithID takes an int; debugger ids are small counters.
  lldb::SBDebugger debugger =
      lldb::SBDebugger::FindDebuggerWithID(static_cast<int>(reinterpret_cast<uintptr_t>(baton)));
  if (!debugger.IsValid()) return false;
  auto frontend = Frontend::of(debugger);
  Lines lines;
  {
    auto held = frontend->lock();
    for (auto& [id, session] : frontend->sessions()) {
      if (session.ended || session.probe_sites.empty() || !session.target.IsValid()) continue;
      for (uint32_t index = 0; index < session.target.GetNumBreakpoints(); ++index) {
        lldb::SBBreakpoint breakpoint = session.target.GetBreakpointAtIndex(index);
        if (!breakpoint.IsValid() || !breakpoint.IsEnabled() || !frontend->running_helper()) continue;
        release(*frontend, session, breakpoint, lines);
      }
    }
    frontend->apply_restores(lines);
  }
  write_lines(debugger, lines);
  return false;  // the command goes on as typed
}

}  // namespace

void install_breakpoint_guard(lldb::SBDebugger debugger) {
  lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
  void* baton = reinterpret_cast<void*>(static_cast<uintptr_t>(debugger.GetID()));
  for (const char* command : kResumeCommands) interpreter.SetCommandOverrideCallback(command, before_resume, baton);
}

}  // namespace xref::lldb_plugin
