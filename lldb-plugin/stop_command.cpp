// xref stop [N|--all]: ends sessions; the helper detaches their probes, the
// breakpoints they disabled are enabled again, their last windows print.
#include "commands.h"
#include "number_parse.h"

namespace xref::lldb_plugin {

const char* StopCommand::help() const {
  return "Stop sessions: detach their probes, re-enable the breakpoints they disabled, print their last "
         "windows.";
}

const char* StopCommand::syntax() const {
  return "xref stop [N | --all]\n"
         "  N       the session to stop (the only running one when omitted)\n"
         "  --all   every running session";
}

bool StopCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  if (wants_help(words)) return print_help(scope);
  PluginState& state = scope.state();
  std::vector<uint64_t> running;
  for (const auto& [id, session] : state.sessions()) {
    if (!session.ended) running.push_back(id);
  }
  std::vector<uint64_t> chosen;
  if (words.size() == 1 && words[0] == "--all") {
    chosen = running;
  } else if (words.size() == 1) {
    auto id = parse_u64(words[0], "session");
    if (!id) {
      return scope.fail("xref: " + id.error().message + " (column " + std::to_string(id.error().column) + ")");
    }
    SessionRecord* session = state.find_session(*id);
    if (session == nullptr) return scope.fail("xref: no session " + words[0] + "; `xref sessions` lists them");
    if (session->ended) return scope.fail("xref: session " + words[0] + " has already ended (" + session->stop_reason + ")");
    chosen.push_back(*id);
  } else if (words.empty()) {
    if (running.size() > 1) return scope.fail("xref: several sessions run: name one (`xref sessions`) or use --all");
    chosen = running;
  } else {
    return scope.fail("xref: usage: xref stop [N | --all]");
  }
  if (chosen.empty()) {
    scope.print("xref: no running session");
    return true;
  }
  HelperClient* helper = state.running_helper();
  for (uint64_t id : chosen) {
    if (helper == nullptr) break;  // absorb() below reports the helper's death and ends its sessions
    const HelperReply reply = helper->request("session.stop", {{"session", id}}, kSessionTimeout);
    if (!reply.ok && reply.code != "unknown_session") return scope.fail(reply);
    if (SessionRecord* session = state.find_session(id); session != nullptr && reply.ok &&
                                                          reply.result.contains("summary")) {
      session->summary = reply.result["summary"];
    }
  }
  state.absorb(scope.lines());  // the session_ended events came before the responses
  for (uint64_t id : chosen) {
    SessionRecord* session = state.find_session(id);
    if (session == nullptr) continue;
    state.end_session(*session, "stopped");
    state.apply_pending_restores(scope.lines());
    show_session_windows(state, *session, false, scope.lines());
  }
  return true;
}

}  // namespace xref::lldb_plugin
