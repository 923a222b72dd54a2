#include "debugger_context.h"

#include <climits>

#include "hex.h"

namespace xref::lldb_plugin {

std::optional<uint64_t> process_id(lldb::SBTarget target) {
  lldb::SBProcess process = target.GetProcess();
  if (!process.IsValid()) return std::nullopt;
  const lldb::StateType state = process.GetState();
  if (state == lldb::eStateInvalid || state == lldb::eStateUnloaded || state == lldb::eStateExited ||
      state == lldb::eStateDetached || state == lldb::eStateConnected) {
    return std::nullopt;
  }
  const lldb::pid_t pid = process.GetProcessID();
  if (pid == LLDB_INVALID_PROCESS_ID) return std::nullopt;
  return pid;
}

std::optional<HereFrame> here_frame(lldb::SBTarget target, std::string& error) {
  lldb::SBProcess process = target.GetProcess();
  if (!process.IsValid() || process.GetState() != lldb::eStateStopped) {
    error = "--here needs a stopped process: stop it at a breakpoint first";
    return std::nullopt;
  }
  lldb::SBThread thread = process.GetSelectedThread();
  lldb::SBFrame frame = thread.IsValid() ? thread.GetSelectedFrame() : lldb::SBFrame();
  if (!frame.IsValid()) {
    error = "--here needs a selected thread and frame";
    return std::nullopt;
  }
  HereFrame here;
  here.tid = thread.GetThreadID();
  here.pc = frame.GetPC();
  here.cfa = frame.GetCFA();
  here.sp = frame.GetSP();
  here.bp = frame.GetFP();
  if (here.pc == LLDB_INVALID_ADDRESS || here.cfa == LLDB_INVALID_ADDRESS) {
    error = "LLDB cannot tell the selected frame's pc and CFA";
    return std::nullopt;
  }
  return here;
}

namespace {

nlohmann::json breakpoints_json(lldb::SBTarget target) {
  nlohmann::json list = nlohmann::json::array();
  const uint32_t count = target.GetNumBreakpoints();
  for (uint32_t index = 0; index < count; ++index) {
    lldb::SBBreakpoint breakpoint = target.GetBreakpointAtIndex(index);
    if (!breakpoint.IsValid() || breakpoint.GetID() <= 0) continue;
    nlohmann::json locations = nlohmann::json::array();
    const size_t location_count = breakpoint.GetNumLocations();
    for (size_t at = 0; at < location_count; ++at) {
      lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
      const lldb::addr_t address = location.GetLoadAddress();
      if (address == LLDB_INVALID_ADDRESS) continue;  // not resolved in the process
      locations.push_back({{"id", std::to_string(breakpoint.GetID()) + "." + std::to_string(location.GetID())},
                           {"address", to_hex(address)},
                           {"enabled", location.IsEnabled()}});
    }
    list.push_back({{"id", breakpoint.GetID()}, {"enabled", breakpoint.IsEnabled()}, {"locations", locations}});
  }
  return list;
}

// x86 debug registers watch at most 8 aligned bytes each: LLDB splits a
// longer or straddling watchpoint into one per aligned 8-byte block it
// touches.
uint64_t watchpoint_slots(uint64_t address, uint64_t size) {
  if (size == 0) return 0;
  return ((address + size - 1) / 8) - (address / 8) + 1;
}

}  // namespace

uint64_t debug_registers_used(lldb::SBTarget target) {
  uint64_t used = 0;
  for (uint32_t index = 0; index < target.GetNumWatchpoints(); ++index) {
    lldb::SBWatchpoint watchpoint = target.GetWatchpointAtIndex(index);
    if (!watchpoint.IsValid() || !watchpoint.IsEnabled()) continue;
    const lldb::addr_t address = watchpoint.GetWatchAddress();
    if (address == LLDB_INVALID_ADDRESS) continue;
    used += watchpoint_slots(address, watchpoint.GetWatchSize());
  }
  for (uint32_t index = 0; index < target.GetNumBreakpoints(); ++index) {
    lldb::SBBreakpoint breakpoint = target.GetBreakpointAtIndex(index);
    if (!breakpoint.IsValid() || !breakpoint.IsEnabled() || !breakpoint.IsHardware()) continue;
    for (size_t at = 0; at < breakpoint.GetNumLocations(); ++at) {
      lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
      if (location.IsEnabled() && location.GetLoadAddress() != LLDB_INVALID_ADDRESS) ++used;
    }
  }
  return used;
}

nlohmann::json request_context(lldb::SBTarget target, const std::optional<HereFrame>& here) {
  nlohmann::json context = nlohmann::json::object();
  if (auto pid = process_id(target)) context["pid"] = *pid;
  lldb::SBModule executable = target.GetModuleAtIndex(0);
  char path[PATH_MAX];
  if (executable.IsValid() && executable.GetFileSpec().GetPath(path, sizeof path) > 0) context["executable"] = path;
  if (here) {
    context["here"] = {{"tid", here->tid}, {"pc", to_hex(here->pc)}, {"cfa", to_hex(here->cfa)}};
    // The helper checks the CFA against the .eh_frame rule at pc with these.
    if (here->sp != LLDB_INVALID_ADDRESS) context["here"]["sp"] = to_hex(here->sp);
    if (here->bp != LLDB_INVALID_ADDRESS) context["here"]["bp"] = to_hex(here->bp);
  }
  context["breakpoints"] = breakpoints_json(target);
  // What `xref watch` has left of the 4 debug registers (docs/protocol.md).
  context["debug_registers_used"] = debug_registers_used(target);
  return context;
}

}  // namespace xref::lldb_plugin
