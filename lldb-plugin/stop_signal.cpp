#include "stop_signal.h"

#include <signal.h>

#include <mutex>
#include <optional>
#include <set>

#include "probe_abi.h"

namespace xref::lldb_plugin {
namespace {

constexpr int32_t kSignal = XREF_PROBE_STOP_SIGNAL;

struct Handling {
  bool stop = false;
  bool notify = false;
  bool suppress = false;  // LLDB's word for "not passed"
};

// One process whose handling of the signal xref took.
struct Takeover {
  lldb::SBTarget target;
  uint64_t pid = 0;
  Handling before;               // as the process had it
  std::set<uint64_t> sessions;   // the --stop-when sessions it serves
  bool starting = false;         // a session.start under way
  bool release = false;          // no session needs it: put `before` back
};

std::mutex takeovers_mutex;
std::vector<Takeover>& takeovers() {
  static auto* all = new std::vector<Takeover>();
  return *all;
}

uint64_t pid_of(lldb::SBTarget target) {
  lldb::SBProcess process = target.GetProcess();
  return process.IsValid() ? process.GetProcessID() : 0;
}

Takeover* find_takeover(lldb::SBTarget target, uint64_t pid) {
  for (auto& takeover : takeovers()) {
    if (takeover.target == target && takeover.pid == pid) return &takeover;
  }
  return nullptr;
}

struct Siginfo {
  int64_t code = 0;
  int64_t pid = 0;
};

std::optional<Siginfo> siginfo_of(lldb::SBThread thread) {
  lldb::SBValue info = thread.GetSiginfo();
  if (!info.IsValid()) return std::nullopt;
  lldb::SBValue code = info.GetChildMemberWithName("si_code");
  lldb::SBValue pid = info.GetChildMemberWithName("_sifields").GetChildMemberWithName("_kill").GetChildMemberWithName(
      "si_pid");
  if (!code.IsValid() || !pid.IsValid()) return std::nullopt;
  return Siginfo{code.GetValueAsSigned(0), pid.GetValueAsSigned(0)};
}

// A signal the probe sent: from the kernel (BPF), no sending process.
bool from_xref(const Siginfo& info) { return info.code == SI_KERNEL && info.pid == 0; }

std::string code_name(int64_t code) {
  switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    case SI_KERNEL: return "SI_KERNEL";
    default: return "si_code " + std::to_string(code);
  }
}

// The threads stopped by the signal now, sorted by who sent it.
struct SignalStops {
  bool xref = false;
  std::vector<std::pair<lldb::SBThread, Siginfo>> program;
};

SignalStops signal_stops(lldb::SBProcess process) {
  SignalStops stops;
  if (!process.IsValid() || process.GetState() != lldb::eStateStopped) return stops;
  for (uint32_t index = 0; index < process.GetNumThreads(); ++index) {
    lldb::SBThread thread = process.GetThreadAtIndex(index);
    if (thread.GetStopReason() != lldb::eStopReasonSignal || thread.GetStopReasonDataAtIndex(0) != kSignal) continue;
    const auto info = siginfo_of(thread);
    if (info && from_xref(*info)) {
      stops.xref = true;
    } else if (info) {
      stops.program.emplace_back(thread, *info);
    }
  }
  return stops;
}

std::string yes_no(bool value) { return value ? "true" : "false"; }

// Takeovers to put back now, taken out of the list (LLDB is called after,
// without the list's lock).
std::vector<Takeover> take_releases() {
  std::lock_guard lock(takeovers_mutex);
  std::vector<Takeover> due;
  auto& all = takeovers();
  for (auto it = all.begin(); it != all.end();) {
    if (it->release) {
      due.push_back(std::move(*it));
      it = all.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

void put_back(Takeover takeover, std::vector<std::string>& lines) {
  lldb::SBProcess process = takeover.target.GetProcess();
  const lldb::StateType state = process.IsValid() ? process.GetState() : lldb::eStateInvalid;
  if (!process.IsValid() || process.GetProcessID() != takeover.pid || state == lldb::eStateExited ||
      state == lldb::eStateDetached || state == lldb::eStateInvalid) {
    return;  // the process is gone, and its signal table with it
  }
  // A thread that still holds xref's signal would receive it at its resume
  // if it were passed now: wait for a stop where none does.
  if (signal_stops(process).xref) {
    std::lock_guard lock(takeovers_mutex);
    takeovers().push_back(std::move(takeover));
    return;
  }
  lldb::SBUnixSignals signals = process.GetUnixSignals();
  const Handling& before = takeover.before;
  signals.SetShouldStop(kSignal, before.stop);
  signals.SetShouldNotify(kSignal, before.notify);
  signals.SetShouldSuppress(kSignal, before.suppress);
  lines.push_back(std::string("xref: ") + signals.GetSignalAsCString(kSignal) + " handled as before again (pass " +
                  yes_no(!before.suppress) + ", stop " + yes_no(before.stop) + ", notify " + yes_no(before.notify) +
                  "): no --stop-when session left");
}

}  // namespace

bool take_stop_signal(lldb::SBTarget target, std::string& error) {
  lldb::SBUnixSignals signals = target.GetProcess().GetUnixSignals();
  if (!signals.IsValid()) {
    error = "--stop-when: LLDB has no signal table for this process";
    return false;
  }
  const uint64_t pid = pid_of(target);
  std::lock_guard lock(takeovers_mutex);
  Takeover* takeover = find_takeover(target, pid);
  if (takeover == nullptr) {
    takeovers().push_back({target, pid,
                           {signals.GetShouldStop(kSignal), signals.GetShouldNotify(kSignal),
                            signals.GetShouldSuppress(kSignal)},
                           {}, false, false});
    takeover = &takeovers().back();
  }
  takeover->starting = true;
  takeover->release = false;
  // Every SIGRTMAX-1 stops, so that the stop hook sees who sent it; xref's
  // is never passed.
  if (!signals.SetShouldStop(kSignal, true) || !signals.SetShouldSuppress(kSignal, true) ||
      !signals.SetShouldNotify(kSignal, true)) {
    error = std::string("--stop-when: LLDB would not stop on signal ") + signals.GetSignalAsCString(kSignal);
    takeover->starting = false;
    takeover->release = takeover->sessions.empty();
    return false;
  }
  return true;
}

void stop_signal_started(lldb::SBTarget target, uint64_t session) {
  std::lock_guard lock(takeovers_mutex);
  if (Takeover* takeover = find_takeover(target, pid_of(target))) {
    takeover->starting = false;
    takeover->sessions.insert(session);
  }
}

void stop_signal_start_failed(lldb::SBTarget target, std::vector<std::string>& lines) {
  {
    std::lock_guard lock(takeovers_mutex);
    Takeover* takeover = find_takeover(target, pid_of(target));
    if (takeover == nullptr) return;
    takeover->starting = false;
    takeover->release = takeover->sessions.empty();
  }
  restore_stop_signals(lines);
}

void stop_signal_session_ended(uint64_t session) {
  std::lock_guard lock(takeovers_mutex);
  for (auto& takeover : takeovers()) {
    if (takeover.sessions.erase(session) > 0 && takeover.sessions.empty() && !takeover.starting) {
      takeover.release = true;
    }
  }
}

void restore_stop_signals(std::vector<std::string>& lines) {
  for (auto& takeover : take_releases()) put_back(std::move(takeover), lines);
}

bool pass_program_signal(lldb::SBDebugger debugger, lldb::SBCommandReturnObject& result) {
  lldb::SBTarget target = debugger.GetSelectedTarget();
  lldb::SBProcess process = target.GetProcess();
  // The handling before the session, read before it may be put back below:
  // this stop is still one the session made.
  std::optional<Handling> before;
  {
    std::lock_guard lock(takeovers_mutex);
    if (Takeover* takeover = find_takeover(target, pid_of(target))) before = takeover->before;
  }
  std::vector<std::string> lines;
  restore_stop_signals(lines);
  const SignalStops stops = before ? signal_stops(process) : SignalStops{};
  lldb::SBUnixSignals signals = process.GetUnixSignals();
  bool continued = false;
  if (stops.xref) {
    signals.SetShouldSuppress(kSignal, true);
  } else if (!stops.program.empty()) {
    // Passed on at the resume as the handling said before the session.
    signals.SetShouldSuppress(kSignal, before->suppress);
    for (const auto& [thread, info] : stops.program) {
      if (!before->stop && !before->notify) continue;
      lines.push_back("xref: thread " + std::to_string(thread.GetIndexID()) + " received " +
                      signals.GetSignalAsCString(kSignal) + " from the program itself (" + code_name(info.code) +
                      " from pid " + std::to_string(info.pid) + "), not from xref: " +
                      (before->suppress ? "not passed on" : "passed on") + (before->stop ? " at `continue`" : ""));
    }
    if (!before->stop) {
      const bool was_async = debugger.GetAsync();
      debugger.SetAsync(true);
      continued = process.Continue().Success();
      debugger.SetAsync(was_async);
    }
  }
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : "\n") + line;
  if (!text.empty()) result.AppendMessage(text.c_str());  // it ends the text with a newline
  if (continued) result.SetStatus(lldb::eReturnStatusSuccessContinuingNoResult);
  return continued;
}

}  // namespace xref::lldb_plugin
