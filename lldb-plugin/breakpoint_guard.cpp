#include "breakpoint_guard.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "command_support.h"
#include "hex.h"
#include "probe_render.h"

namespace xref::lldb_plugin {
namespace {

// Every command that lets the process run (the aliases c, n, s, finish, ...
// resolve to these).
constexpr const char* kResumeCommands[] = {"process continue", "thread continue",   "thread step-over",
                                           "thread step-in",   "thread step-out",   "thread step-inst",
                                           "thread step-inst-over", "thread until", "thread step-scripted"};

bool before_resume(void* baton, const char**) {
  // FindDebuggerWithID takes an int; debugger ids are small counters.
  const auto id = static_cast<int>(reinterpret_cast<uintptr_t>(baton));
  lldb::SBDebugger debugger = lldb::SBDebugger::FindDebuggerWithID(id);
  if (!debugger.IsValid()) return false;
  auto state = PluginState::of(debugger);
  Lines lines;
  {
    auto held = state->lock();
    release_breakpoint_sites(*state, lines);
  }
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  if (!text.empty()) {
    lldb::SBFile out = debugger.GetOutputFile();
    size_t written = 0;
    out.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &written);
    out.Flush();
  }
  return false;  // the command goes on as typed
}

}  // namespace

void install_breakpoint_guard(lldb::SBDebugger debugger) {
  lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
  void* baton = reinterpret_cast<void*>(static_cast<uintptr_t>(debugger.GetID()));
  for (const char* command : kResumeCommands) interpreter.SetCommandOverrideCallback(command, before_resume, baton);
}

void record_probe_sites(SessionRecord& session, const nlohmann::json& result) {
  for (const auto& live : result.value("probe_sites", nlohmann::json::array())) {
    if (!live.is_string()) continue;
    try {
      session.probe_sites.insert(std::stoull(live.get<std::string>(), nullptr, 16));
    } catch (const std::exception&) {
    }
  }
}

void release_breakpoint_sites(PluginState& state, Lines& lines) {
  HelperClient* helper = state.running_helper();
  if (helper == nullptr) return;
  bool ended = false;
  for (auto& [id, session] : state.sessions()) {
    if (session.ended || session.probe_sites.empty() || !session.target.IsValid()) continue;
    lldb::SBTarget target = session.target;
    for (uint32_t index = 0; index < target.GetNumBreakpoints() && !session.probe_sites.empty(); ++index) {
      lldb::SBBreakpoint breakpoint = target.GetBreakpointAtIndex(index);
      if (!breakpoint.IsValid() || !breakpoint.IsEnabled()) continue;
      std::vector<lldb::SBBreakpointLocation> taken;
      std::set<uint64_t> addresses;
      for (size_t at = 0; at < breakpoint.GetNumLocations(); ++at) {
        lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
        if (!location.IsValid() || !location.IsEnabled()) continue;
        const uint64_t address = location.GetLoadAddress();
        if (session.probe_sites.count(address) == 0) continue;
        taken.push_back(location);
        addresses.insert(address);
      }
      if (taken.empty()) continue;
      nlohmann::json live = nlohmann::json::array();
      for (uint64_t address : addresses) live.push_back(to_hex(address));
      // Off first: LLDB puts back the byte it saved (the uprobe's int3),
      // which the kernel's unregister needs to find to restore the file's.
      for (auto& location : taken) location.SetEnabled(false);
      const std::string reason = "breakpoint " + std::to_string(breakpoint.GetID());
      HelperReply reply = helper->request(
          "session.release", {{"session", session.id}, {"addresses", live}, {"reason", reason}}, kSessionTimeout);
      for (auto& location : taken) location.SetEnabled(true);
      if (!reply.ok) {
        lines.push_back("xref: warning: session " + std::to_string(session.id) +
                        " did not take its probes out of " + reason + "'s address: " + reply.message);
        continue;
      }
      for (uint64_t address : addresses) session.probe_sites.erase(address);
      const std::vector<uint64_t> released(addresses.begin(), addresses.end());
      for (auto& line : render_release(session.id, reply.result, released)) lines.push_back(std::move(line));
      ended |= reply.result.value("ended", false);
    }
  }
  // A trace session ended: its session_ended (and its windows) are in.
  if (ended) state.absorb(lines);
}

}  // namespace xref::lldb_plugin
