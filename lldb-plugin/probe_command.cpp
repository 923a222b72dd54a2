// xref probe WORDS...: starts a probe session in the helper with the
// user's words and what LLDB knows (process, executable, breakpoints), then
// returns at once; what changed prints at each stop.
#include <string>
#include <vector>

#include "breakpoint_guard.h"
#include "commands.h"
#include "debugger_context.h"
#include "probe_abi.h"
#include "session_breakpoints.h"
#include "stop_signal.h"

namespace xref::lldb_plugin {
namespace {

bool stops_when(const std::vector<std::string>& words) {
  for (const auto& word : words) {
    if (word == "--stop-when" || word.rfind("--stop-when=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

const char* ProbeCommand::help() const {
  return "Count what reaches an address without stopping the process: exact hits per address, thread, caller and "
         "value, kept in BPF, with samples of fetched values. Returns at once; what changed prints at each stop "
         "(`xref show` prints the whole result). `xref probe --help` lists every option (the helper's own help).";
}

const char* ProbeCommand::syntax() const {
  return "xref probe ADDRESS... [--callers] [--fetch SPEC] [--filter EXPR] [--group-by ret|caller|tid|NAME] [OPTIONS]\n"
         "  ADDRESS       a function (sym, module:sym), any instruction start (0xVA, module:0xVA: static VAs), or\n"
         "                bp:N (breakpoint N's locations; N is disabled meanwhile)\n"
         "  --callers     the call sites hits came from (exact at a function's entry, inferred inside it)\n"
         "  --stop-when EXPR [--skip N]\n"
         "                stop the thread of the first (N+1th) hit where EXPR holds over the --fetch values\n"
         "  --stacks N    count hits by user stack (frame pointers), up to N frames\n"
         "  --fetch, --filter, --every, --first, --until-hits, --max-events, --hist, --regs, --duration-ms (none\n"
         "                unless given: until `xref stop`), ... as in the shell's `xref probe` (docs/probe.md); see\n"
         "                `xref probe --help`";
}

bool ProbeCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  lldb::SBTarget target = scope.target();
  if (!wants_help(words)) {
    if (auto problem = session_target_problem(target, words)) return scope.fail(*problem);
  }
  HelperClient* helper = scope.helper();
  if (helper == nullptr) return false;

  HeldBreakpoints held{target, {}, {}};
  // --stop-when's signal: LLDB stops on each, the stop hook sorts them (stop_signal.h).
  const bool takes_signal = !wants_help(words) && stops_when(words);
  if (takes_signal) {
    std::string error;
    if (!take_stop_signal(target, error)) {
      stop_signal_start_failed(target, scope.lines());
      return scope.fail("xref: " + error);
    }
  }
  if (!wants_help(words)) {
    const auto ids = breakpoint_references(words);
    std::string error;
    const std::string what = ids.empty() ? "" : "probe bp:" + std::to_string(ids.front());
    if (!hold_breakpoints(scope, ids, what, held, error)) {
      if (takes_signal) stop_signal_start_failed(target, scope.lines());
      return scope.fail("xref: " + error);
    }
  }
  nlohmann::json argv = nlohmann::json::array({"probe"});
  for (const auto& word : words) argv.push_back(word);
  HelperReply reply =
      helper->request("session.start", {{"argv", argv}, {"context", request_context(target, std::nullopt)}},
                      kSessionTimeout);
  if (!reply.ok || reply.result.contains("help")) {
    held.undo();
    if (takes_signal) stop_signal_start_failed(target, scope.lines());
  }
  if (!reply.ok) return scope.fail(reply);
  if (reply.result.contains("help")) {
    scope.print(reply.result.value("help", std::string()));
    return true;
  }
  const uint64_t id = reply.result.value("session", uint64_t{0});
  SessionRecord& session = scope.state().add_session(id);
  session.command = "probe";
  session.words = "probe";
  for (const auto& word : words) session.words += " " + word;
  session.target = target;
  session.pid = process_id(target).value_or(0);
  session.backend = reply.result.value("backend", std::string("?"));
  session.probes = reply.result.value("sites", uint64_t{0});
  session.probe_addresses = reply.result.value("addresses", nlohmann::json::array());
  record_probe_sites(session, reply.result);
  const size_t addresses = session.probe_addresses.size();
  scope.print("xref: session " + std::to_string(id) + " probing PID " + std::to_string(session.pid) + ": " +
              std::to_string(addresses) + " address" + (addresses == 1 ? "" : "es") + " (" + session.backend +
              "); counts print at each stop (xref show)");
  for (const auto& warning : reply.result.value("warnings", nlohmann::json::array())) {
    if (warning.is_string()) scope.print("xref: warning: " + warning.get<std::string>());
  }
  keep_breakpoints_off(scope, session, held, reply.result.value("breakpoints_to_disable", nlohmann::json::array()),
                       "probe");
  if (takes_signal) {
    stop_signal_started(target, id);
    const char* signal = target.GetProcess().GetUnixSignals().GetSignalAsCString(XREF_PROBE_STOP_SIGNAL);
    scope.print(std::string("xref: the first hit where --stop-when holds stops its thread with ") + signal +
                " (LLDB stops on it and keeps it from the process); the program's own " + signal +
                " go on as `process handle` said");
  }
  scope.state().ensure_stop_hook(target);
  scope.state().watch_process(session.pid);
  scope.state().watch_stops(target.GetProcess());
  return true;
}

}  // namespace xref::lldb_plugin
