#include "stop_listener.h"

#include <cstdint>

namespace xref::lldb_plugin {
namespace {

constexpr uint32_t kWake = 1;
constexpr uint32_t kForever = UINT32_MAX;  // SBListener::WaitForEvent: no timeout

}  // namespace

StopListener::StopListener(Handlers handlers)
    : handlers_(std::move(handlers)), listener_("xref.stops"), wake_("xref.stops.wake") {
  listener_.StartListeningForEvents(wake_, kWake);
  thread_ = std::thread([this] { loop(); });
}

StopListener::~StopListener() { stop(); }

void StopListener::watch(lldb::SBProcess process) {
  if (!process.IsValid()) return;
  std::lock_guard lock(mutex_);
  if (!watched_.insert(process.GetUniqueID()).second) return;
  listener_.StartListeningForEvents(process.GetBroadcaster(), lldb::SBProcess::eBroadcastBitStateChanged);
}

void StopListener::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake_.BroadcastEventByType(kWake);
  thread_.join();
}

void StopListener::loop() {
  while (!stopping_) {
    lldb::SBEvent event;
    if (!listener_.WaitForEvent(kForever, event) || stopping_) continue;
    if (!lldb::SBProcess::EventIsProcessEvent(event) ||
        (event.GetType() & lldb::SBProcess::eBroadcastBitStateChanged) == 0) {
      continue;
    }
    lldb::SBProcess process = lldb::SBProcess::GetProcessFromEvent(event);
    switch (lldb::SBProcess::GetStateFromEvent(event)) {
      case lldb::eStateStopped:
        // Restarted: a breakpoint condition, command or the stop hook let
        // the process go on; the user never saw this stop.
        if (!lldb::SBProcess::GetRestartedFromEvent(event)) handlers_.stopped(process);
        break;
      case lldb::eStateRunning:
      case lldb::eStateStepping:
        handlers_.resumed(process);
        break;
      case lldb::eStateExited:
      case lldb::eStateDetached:
        handlers_.exited(process);
        break;
      default:
        break;
    }
  }
}

void print_async(lldb::SBDebugger debugger, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  if (text.empty()) return;
  lldb::SBBroadcaster interpreter = debugger.GetCommandInterpreter().GetBroadcaster();
  const uint32_t output = lldb::SBCommandInterpreter::eBroadcastBitAsynchronousOutputData;
  if (interpreter.IsValid() && interpreter.EventTypeHasListeners(output)) {
    lldb::SBEvent event(output, text.data(), static_cast<uint32_t>(text.size()));
    interpreter.BroadcastEvent(event);
    return;
  }
  lldb::SBFile out = debugger.GetOutputFile();
  size_t written = 0;
  out.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &written);
  out.Flush();
}

}  // namespace xref::lldb_plugin
