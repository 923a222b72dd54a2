// xref trace WORDS...: starts a trace session in the helper with the
// user's words and what LLDB knows (process, executable, selected frame,
// breakpoints), then returns at once; windows print at the next stop.
#include <cstdint>
#include <string>
#include <vector>

#include "breakpoint_guard.h"
#include "commands.h"
#include "debugger_context.h"
#include "hex.h"
#include "lldb_symbols.h"
#include "session_breakpoints.h"

namespace xref::lldb_plugin {
namespace {

// The value of --start (or --start=VALUE) in the user's words.
std::vector<std::string> start_values(const std::vector<std::string>& words) {
  std::vector<std::string> values;
  for (size_t index = 0; index < words.size(); ++index) {
    if (words[index] == "--start" && index + 1 < words.size()) values.push_back(words[index + 1]);
    else if (words[index].rfind("--start=", 0) == 0) values.push_back(words[index].substr(8));
  }
  return values;
}

// --stop-at-end: a one-shot breakpoint on the selected thread at the
// selected frame's return address, taken only when the stack pointer is back
// at the frame's CFA, i.e. when this very frame returned (not a recursive
// call returning to the same address). Set before the session starts, so the
// helper's collision check sees it: a debugger int3 over a probe's int3
// would outlive the probe.
lldb::SBBreakpoint set_stop_at_end(CommandScope& scope, std::string& description, std::string& error) {
  lldb::SBProcess process = scope.target().GetProcess();
  lldb::SBThread thread = process.GetSelectedThread();
  lldb::SBFrame frame = thread.GetSelectedFrame();
  uint64_t cfa = frame.GetCFA();
  uint64_t return_address = LLDB_INVALID_ADDRESS;
  for (uint32_t index = frame.GetFrameID() + 1; index < thread.GetNumFrames(); ++index) {
    lldb::SBFrame candidate = thread.GetFrameAtIndex(index);
    if (candidate.GetCFA() != cfa) {  // skip the frames inlined into the selected one
      return_address = candidate.GetPC();
      break;
    }
  }
  lldb::SBError read_error;
  std::string note;
  // At a function's first instruction the return address is at sp and the
  // CFA is sp + 8, whatever LLDB's unwinder says: LLDB 19 takes a GCC
  // function with a .cold part to begin at that part, and its CFA (and so
  // the caller) at the real first instruction is wrong.
  const uint64_t sp = frame.GetSP();
  const uint64_t symbol_start = frame.GetSymbol().GetStartAddress().GetLoadAddress(scope.target());
  if (frame.GetFrameID() == 0 && sp != LLDB_INVALID_ADDRESS && symbol_start == frame.GetPC()) {
    const uint64_t stored = process.ReadPointerFromMemory(sp, read_error);
    if (read_error.Success()) {
      if (cfa != sp + 8 || stored != return_address) {
        note = " (LLDB's CFA " + to_hex(cfa) + " is not the entry's: the return address is taken at sp)";
      }
      cfa = sp + 8;
      return_address = stored;
    }
  }
  if (return_address == LLDB_INVALID_ADDRESS) {
    error = "--stop-at-end: the selected frame has no caller to return to";
    return {};
  }
  // The return address is stored just below the CFA; when it is not, LLDB's
  // unwinding of this frame is wrong, and so would be the breakpoint.
  const uint64_t stored = process.ReadPointerFromMemory(cfa - 8, read_error);
  if (!read_error.Success() || stored != return_address) {
    error = "--stop-at-end: LLDB's unwinding of the selected frame is inconsistent (the return address " +
            to_hex(return_address) + " is not stored below its CFA " + to_hex(cfa) +
            "), so the frame's return cannot be caught; trace without --stop-at-end, or stop at the function's "
            "first instruction (breakpoint set -a ADDRESS)";
    return {};
  }
  lldb::SBBreakpoint breakpoint = scope.target().BreakpointCreateByAddress(return_address);
  if (!breakpoint.IsValid()) {
    error = "--stop-at-end: LLDB could not set a breakpoint at " + to_hex(return_address);
    return {};
  }
  breakpoint.SetOneShot(true);
  breakpoint.SetThreadID(thread.GetThreadID());
  breakpoint.SetCondition(("$rsp == " + to_hex(cfa)).c_str());
  const std::string where = describe_address(scope.target(), scope.target().ResolveLoadAddress(return_address));
  description = "xref: breakpoint " + std::to_string(breakpoint.GetID()) + " (one-shot, thread " +
                std::to_string(thread.GetThreadID()) + ") at the return address " + to_hex(return_address) +
                (where.empty() ? "" : " (" + where + ")") + " stops the process when the window closes" + note;
  return breakpoint;
}

// What the debugger changed for a session before starting it, undone when
// the start fails.
struct Preparation {
  HeldBreakpoints held;  // --start bp:N, disabled by us
  lldb::SBBreakpoint stop_at_end;
  std::string stop_at_end_description;

  void undo() {
    held.undo();
    if (stop_at_end.IsValid()) held.target.BreakpointDelete(stop_at_end.GetID());
  }
};

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
    if (auto problem = session_target_problem(target, words)) return scope.fail(*problem);
    if (has_word(words, "--here")) {
      std::string error;
      here = here_frame(target, error);
      if (!here) return scope.fail("xref: " + error);
    }
  }
  HelperClient* helper = scope.helper();
  if (helper == nullptr) return false;

  // Breakpoint N of --start bp:N goes off before the probes go in.
  Preparation preparation{{target, {}, {}}, {}, {}};
  if (!wants_help(words)) {
    const auto ids = breakpoint_references(start_values(words));
    std::string error;
    const std::string what = ids.empty() ? "" : "--start bp:" + std::to_string(ids.front());
    if (!hold_breakpoints(scope, ids, what, preparation.held, error)) return scope.fail("xref: " + error);
    if (here) {
      // The breakpoint stopped at, in case the trace probes its location.
      const size_t before = preparation.held.disabled.size();
      if (!hold_breakpoints(scope, breakpoints_at(target, here->pc), "--here", preparation.held, error)) {
        preparation.undo();
        return scope.fail("xref: " + error);
      }
      preparation.held.quiet.assign(preparation.held.disabled.begin() + static_cast<std::ptrdiff_t>(before),
                                    preparation.held.disabled.end());
    }
  }
  if (here && has_word(words, "--stop-at-end")) {
    std::string error;
    preparation.stop_at_end = set_stop_at_end(scope, preparation.stop_at_end_description, error);
    if (!preparation.stop_at_end.IsValid()) {
      preparation.undo();
      return scope.fail("xref: " + error);
    }
  }
  nlohmann::json argv = nlohmann::json::array({"trace"});
  for (const auto& word : words) argv.push_back(word);
  HelperReply reply =
      helper->request("session.start", {{"argv", argv}, {"context", request_context(target, here)}}, kSessionTimeout);
  const lldb::break_id_t stop_at_end_id = preparation.stop_at_end.IsValid() ? preparation.stop_at_end.GetID() : 0;
  if (!reply.ok || reply.result.contains("help")) preparation.undo();
  if (!reply.ok) {
    if (stop_at_end_id != 0 && reply.message.find("breakpoint " + std::to_string(stop_at_end_id) + ".") != std::string::npos) {
      reply.hint = "breakpoint " + std::to_string(stop_at_end_id) +
                   " was --stop-at-end's stop at the return address, which this trace probes (e.g. the return site of a "
                   "recursive call): drop --stop-at-end; the window still prints at the next stop";
    }
    return scope.fail(reply);
  }
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
  record_probe_sites(session, reply.result);
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
  keep_breakpoints_off(scope, session, preparation.held,
                       reply.result.value("breakpoints_to_disable", nlohmann::json::array()), "trace");
  if (preparation.stop_at_end.IsValid()) {
    session.stop_at_end_breakpoint = preparation.stop_at_end.GetID();
    scope.print(preparation.stop_at_end_description);
  }
  scope.state().ensure_stop_hook(target);
  scope.state().watch_process(session.pid);
  scope.state().watch_stops(target.GetProcess());
  return true;
}

}  // namespace xref::lldb_plugin
