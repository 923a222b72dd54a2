// xref sessions: the sessions of this debugger, running ones with the
// helper's counts.
#include <cstdio>

#include "commands.h"

namespace xref::lldb_plugin {

const char* SessionsCommand::help() const { return "List the sessions started from this debugger."; }

const char* SessionsCommand::syntax() const { return "xref sessions"; }

bool SessionsCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  if (wants_help(words)) return print_help(scope);
  if (!words.empty()) return scope.fail("xref: `xref sessions` takes no arguments");
  std::map<uint64_t, nlohmann::json> live;
  if (HelperClient* helper = scope.state().running_helper()) {
    const HelperReply reply = helper->request("sessions", nlohmann::json::object(), kQuickTimeout);
    if (!reply.ok) return scope.fail(reply);
    for (const auto& entry : reply.result.value("sessions", nlohmann::json::array())) {
      live[entry.value("session", uint64_t{0})] = entry;
    }
  }
  if (scope.state().sessions().empty()) {
    scope.print("xref: no sessions; start one with `xref trace` or `xref probe`");
    return true;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-24s %-8s %-13s %8s %8s  %s", "session", "state", "pid", "backend", "windows",
                "events", "command");
  scope.print(line);
  for (const auto& [id, session] : scope.state().sessions()) {
    std::string state = session.ended ? "ended (" + session.stop_reason + ")" : "running";
    uint64_t windows = session.windows.size() + session.windows_dropped;
    uint64_t events = 0;
    if (auto found = live.find(id); found != live.end()) {
      state = found->second.value("state", state);
      windows = found->second.value("windows", windows);
      events = found->second.value("events", uint64_t{0});
    } else if (session.summary.is_object()) {
      events = session.summary.value("events", uint64_t{0});
    }
    // A probe session has no windows; its events are its hits as of the last stop.
    const std::string windows_text = session.command == "probe" ? std::string("-") : std::to_string(windows);
    if (session.command == "probe") {
      const nlohmann::json summary =
          session.document.is_object() ? session.document.value("summary", nlohmann::json::object()) : nlohmann::json();
      events = summary.is_object() ? summary.value("hits", uint64_t{0}) : 0;
    }
    std::snprintf(line, sizeof line, "%-8llu %-24s %-8llu %-13s %8s %8llu  %s", static_cast<unsigned long long>(id),
                  state.c_str(), static_cast<unsigned long long>(session.pid), session.backend.c_str(),
                  windows_text.c_str(), static_cast<unsigned long long>(events), session.words.c_str());
    scope.print(line);
  }
  return true;
}

}  // namespace xref::lldb_plugin
