// xref trace WORDS...: starts a tracing session in the helper with the
// user's words and what LLDB knows (process, executable, selected frame,
// breakpoints), then returns at once; windows print at the next stop.
#include <string>

#include "commands.h"
#include "debugger_context.h"
#include "hex.h"
#include "lldb_symbols.h"

namespace xref::lldb_plugin {
namespace {

// --stop-at-end: a one-shot breakpoint on the selected thread at the
// selected frame's return address, taken only when the stack pointer is back
// at the frame's CFA, i.e. when this very frame returned (not a recursive
// call returning to the same address).
void set_stop_at_end(CommandScope& scope, SessionRecord& session) {
  lldb::SBThread thread = scope.target().GetProcess().GetSelectedThread();
  lldb::SBFrame frame = thread.GetSelectedFrame();
  const uint64_t cfa = frame.GetCFA();
  lldb::SBFrame parent;
  for (uint32_t index = frame.GetFrameID() + 1; index < thread.GetNumFrames(); ++index) {
    lldb::SBFrame candidate = thread.GetFrameAtIndex(index);
    if (candidate.GetCFA() != cfa) {  // skip the frames inlined into the selected one
      parent = candidate;
      break;
    }
  }
  if (!parent.IsValid()) {
    scope.print("xref: --stop-at-end: the selected frame has no caller to return to; no stop was set");
    return;
  }
  const uint64_t return_address = parent.GetPC();
  lldb::SBBreakpoint breakpoint = scope.target().BreakpointCreateByAddress(return_address);
  if (!breakpoint.IsValid()) {
    scope.print("xref: --stop-at-end: LLDB could not set a breakpoint at " + to_hex(return_address));
    return;
  }
  breakpoint.SetOneShot(true);
  breakpoint.SetThreadID(thread.GetThreadID());
  breakpoint.SetCondition(("$rsp == " + to_hex(cfa)).c_str());
  session.stop_at_end_breakpoint = breakpoint.GetID();
  std::string where = describe_address(scope.target(), parent.GetPCAddress());
  scope.print("xref: breakpoint " + std::to_string(breakpoint.GetID()) + " (one-shot, thread " +
              std::to_string(thread.GetThreadID()) + ") at the return address " + to_hex(return_address) +
              (where.empty() ? "" : " (" + where + ")") + " stops the process when the window closes");
}

void disable_breakpoints(CommandScope& scope, SessionRecord& session, const nlohmann::json& ids) {
  if (!ids.is_array()) return;
  for (const auto& id : ids) {
    if (!id.is_number_integer()) continue;
    lldb::SBBreakpoint breakpoint = scope.target().FindBreakpointByID(id.get<lldb::break_id_t>());
    if (!breakpoint.IsValid()) continue;
    breakpoint.SetEnabled(false);
    session.disabled_breakpoints.push_back(static_cast<uint32_t>(id.get<lldb::break_id_t>()));
    scope.print("xref: breakpoint " + std::to_string(id.get<int64_t>()) +
                " disabled while the trace is armed: a uprobe at the same address would swallow it; "
                "re-enabled when the trace ends");
  }
}

}  // namespace

const char* TraceCommand::help() const {
  return "Trace what happens next, in order, without stopping the process: ordered, thread-scoped windows of "
         "calls and returns from eBPF uprobes. Returns at once; windows print at the next stop (or `xref show`). "
         "`xref trace --help` lists every option (the helper's own help).";
}

const char* TraceCommand::syntax() const {
  return "xref trace --here [--stop-at-end] [OPTIONS]\n"
         "xref trace --start FUNCTION|bp:N [--start-filter EXPR] [--fetch SPEC] [OPTIONS]\n"
         "  --here          open a window on the selected thread now, until the selected frame returns\n"
         "  --stop-at-end   with --here: stop the process when that window closes\n"
         "  --start bp:N    open a window at each hit of breakpoint N's locations (N is disabled meanwhile)\n"
         "  --functions, --callees-of FN --depth N, --all-calls-in FN, --fetch-at, --fetch-ret, --max-windows, ...\n"
         "                  as in the shell's `xref trace` (docs/trace.md); see `xref trace --help`";
}

bool TraceCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  lldb::SBTarget target = scope.target();
  std::optional<HereFrame> here;
  if (!wants_help(words)) {
    if (!target.IsValid()) return scope.fail("xref: no target: create one with `file PATH` and run or attach");
    if (!process_id(target) && !has_word(words, "--pid")) {
      return scope.fail("xref: no live process: `run` or `attach` first");
    }
    if (has_word(words, "--here")) {
      std::string error;
      here = here_frame(target, error);
      if (!here) return scope.fail("xref: " + error);
    }
  }
  HelperClient* helper = scope.helper();
  if (helper == nullptr) return false;
  nlohmann::json argv = nlohmann::json::array({"trace"});
  for (const auto& word : words) argv.push_back(word);
  const HelperReply reply =
      helper->request("session.start", {{"argv", argv}, {"context", request_context(target, here)}}, kSessionTimeout);
  if (!reply.ok) return scope.fail(reply);
  if (reply.result.contains("help")) {
    scope.print(reply.result.value("help", std::string()));
    return true;
  }
  const uint64_t id = reply.result.value("session", uint64_t{0});
  SessionRecord& session = scope.state().add_session(id);
  std::string joined;
  for (const auto& word : words) joined += " " + word;
  session.words = "trace" + joined;
  session.target = target;
  session.pid = process_id(target).value_or(0);
  session.backend = reply.result.value("backend", std::string("?"));
  session.probes = reply.result.value("probes", uint64_t{0});
  if (here && reply.result.contains("here_window") && reply.result["here_window"].is_number_unsigned()) {
    session.here_window = reply.result["here_window"].get<uint64_t>();
    session.here_tid = here->tid;
    session.here_cfa = here->cfa;
  }
  scope.print("xref: session " + std::to_string(id) + " tracing PID " + std::to_string(session.pid) + ": " +
              std::to_string(session.probes) + " probes (" + session.backend + "); windows print at the next stop (xref show)");
  if (session.here_window) {
    scope.print("xref: window " + std::to_string(*session.here_window) + " is open on thread " +
                std::to_string(here->tid) + " until the selected frame (CFA " + to_hex(here->cfa) + ") returns");
  }
  for (const auto& warning : reply.result.value("warnings", nlohmann::json::array())) {
    if (warning.is_string()) scope.print("xref: warning: " + warning.get<std::string>());
  }
  disable_breakpoints(scope, session, reply.result.value("breakpoints_to_disable", nlohmann::json::array()));
  if (here && has_word(words, "--stop-at-end")) set_stop_at_end(scope, session);
  scope.state().ensure_stop_hook(target);
  scope.state().watch_process(session.pid);
  return true;
}

}  // namespace xref::lldb_plugin
