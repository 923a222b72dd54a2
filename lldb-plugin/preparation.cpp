#include "preparation.h"

#include <algorithm>

#include "hex.h"
#include "stop_signal.h"
#include "watch_expressions.h"

namespace xref::lldb_plugin {
namespace {

std::vector<lldb::break_id_t> numbers(const nlohmann::json& list) {
  std::vector<lldb::break_id_t> ids;
  for (const auto& id : list.is_array() ? list : nlohmann::json::array()) {
    if (id.is_number_integer()) ids.push_back(id.get<lldb::break_id_t>());
  }
  return ids;
}

bool contains(const std::vector<lldb::break_id_t>& ids, lldb::break_id_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// --stop-at-end: a one-shot breakpoint on the selected thread at the
// selected frame's return address, taken only when the stack pointer is back
// at the frame's CFA, i.e. when this very frame returned (not a recursive
// call returning to the same address). Set before the session starts, so the
// helper's collision check sees it.
std::variant<lldb::SBBreakpoint, std::string> set_stop_at_end(lldb::SBTarget target, nlohmann::json& prepared) {
  lldb::SBProcess process = target.GetProcess();
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
  // At a function's first instruction the return address is at sp and the
  // CFA is sp + 8, whatever LLDB's unwinder says: LLDB 19 takes a GCC
  // function with a .cold part to begin at that part, and its CFA (and so
  // the caller) at the real first instruction is wrong.
  const uint64_t sp = frame.GetSP();
  const uint64_t symbol_start = frame.GetSymbol().GetStartAddress().GetLoadAddress(target);
  if (frame.GetFrameID() == 0 && sp != LLDB_INVALID_ADDRESS && symbol_start == frame.GetPC()) {
    const uint64_t stored = process.ReadPointerFromMemory(sp, read_error);
    if (read_error.Success()) {
      cfa = sp + 8;
      return_address = stored;
    }
  }
  if (return_address == LLDB_INVALID_ADDRESS) return "xref: --stop-at-end: the selected frame has no caller to return to";
  // The return address is stored just below the CFA; when it is not, LLDB's
  // unwinding of this frame is wrong, and so would be the breakpoint.
  const uint64_t stored = process.ReadPointerFromMemory(cfa - 8, read_error);
  if (!read_error.Success() || stored != return_address) {
    return "xref: --stop-at-end: LLDB's unwinding of the selected frame is inconsistent (the return address " +
           to_hex(return_address) + " is not stored below its CFA " + to_hex(cfa) +
           "), so the frame's return cannot be caught; trace without --stop-at-end, or stop at the function's "
           "first instruction (breakpoint set -a ADDRESS)";
  }
  lldb::SBBreakpoint breakpoint = target.BreakpointCreateByAddress(return_address);
  if (!breakpoint.IsValid()) return "xref: --stop-at-end: LLDB could not set a breakpoint at " + to_hex(return_address);
  breakpoint.SetOneShot(true);
  breakpoint.SetThreadID(thread.GetThreadID());
  breakpoint.SetCondition(("$rsp == " + to_hex(cfa)).c_str());
  prepared["stop_at_end"] = {
      {"breakpoint", breakpoint.GetID()}, {"address", to_hex(return_address)}, {"thread", thread.GetThreadID()}};
  return breakpoint;
}

}  // namespace

std::variant<nlohmann::json, std::string> Preparation::run(Lines& lines) {
  nlohmann::json prepared = nlohmann::json::object();
  // `xref watch EXPR`: addresses and sizes first (nothing to undo); the
  // helper words an expression LLDB could not evaluate.
  if (const auto evaluate = prepare_.find("evaluate"); evaluate != prepare_.end()) {
    prepared["evaluated"] = evaluate_watch_expressions(target_, *evaluate);
  }
  const auto named = numbers(prepare_.value("disable_breakpoints", nlohmann::json()));
  // LLDB takes its int3 out of the process only while it is stopped.
  if (!named.empty() && target_.GetProcess().GetState() != lldb::eStateStopped) {
    return "xref: bp:" + std::to_string(named.front()) + " needs the process stopped, so that breakpoint " +
           std::to_string(named.front()) + " is out of its memory before the probes go in: `process interrupt` first";
  }
  std::vector<lldb::break_id_t> all = named;
  for (lldb::break_id_t id : numbers(prepare_.value("disable_quietly", nlohmann::json()))) all.push_back(id);
  for (lldb::break_id_t id : all) {
    lldb::SBBreakpoint breakpoint = target_.FindBreakpointByID(id);
    if (!breakpoint.IsValid() || !breakpoint.IsEnabled() || contains(disabled_, id)) continue;
    breakpoint.SetEnabled(false);
    disabled_.push_back(id);
    if (!contains(named, id)) quiet_.push_back(id);
  }
  prepared["disabled"] = disabled_;
  if (prepare_.contains("stop_signal")) {
    std::string error;
    signal_taken_ = true;
    if (!take_stop_signal(target_, error)) {
      undo(lines);
      return "xref: " + error;
    }
    prepared["stop_signal"] = {{"by", "LLDB"}};
  }
  if (prepare_.value("stop_at_end", false)) {
    auto set = set_stop_at_end(target_, prepared);
    if (auto* error = std::get_if<std::string>(&set)) {
      undo(lines);
      return *error;
    }
    stop_at_end_ = std::get<lldb::SBBreakpoint>(set);
  }
  return prepared;
}

void Preparation::undo(Lines& lines) {
  for (lldb::break_id_t id : disabled_) {
    if (lldb::SBBreakpoint breakpoint = target_.FindBreakpointByID(id); breakpoint.IsValid()) breakpoint.SetEnabled(true);
    if (!contains(quiet_, id)) lines.push_back("xref: breakpoint " + std::to_string(id) + " re-enabled: the session did not start");
  }
  disabled_.clear();
  if (signal_taken_) stop_signal_start_failed(target_, lines);
  signal_taken_ = false;
  if (stop_at_end_.IsValid()) target_.BreakpointDelete(stop_at_end_.GetID());
  stop_at_end_ = {};
}

void Preparation::hand_over(SessionRecord& session, const nlohmann::json& kept) {
  const auto keep = numbers(kept);
  for (lldb::break_id_t id : disabled_) {
    if (contains(keep, id)) {
      session.disabled.push_back(id);
    } else if (lldb::SBBreakpoint breakpoint = target_.FindBreakpointByID(id); breakpoint.IsValid()) {
      breakpoint.SetEnabled(true);
    }
  }
  if (signal_taken_) stop_signal_started(target_, session.id);
  session.catches_signal = signal_taken_;
  if (stop_at_end_.IsValid()) session.stop_at_end = stop_at_end_.GetID();
}

std::string Preparation::explain(std::string text) const {
  if (!stop_at_end_.IsValid()) return text;
  const std::string id = std::to_string(stop_at_end_.GetID());
  if (text.find("breakpoint " + id + ".") == std::string::npos) return text;
  return text + "; breakpoint " + id +
         " was --stop-at-end's stop at the return address, which this trace probes (e.g. the return site of a "
         "recursive call): drop --stop-at-end; the window still prints at the next stop";
}

}  // namespace xref::lldb_plugin
