// --stop-when's signal in LLDB: tell xref's SIGRTMAX-1 from the program's own.
//
// The probe stops a thread with SIGRTMAX-1 from BPF (bpf_send_signal_thread),
// which arrives with si_code SI_KERNEL and no sender; a program's own raise,
// kill, tgkill and sigqueue arrive with SI_TKILL, SI_USER or SI_QUEUE and its
// pid. LLDB decides whether a signal stops before anything of the plugin
// runs, so while a --stop-when session runs every SIGRTMAX-1 stops, and the
// stop hook sorts them (siginfo of the stopped thread):
// - xref's: a stop, and the signal is kept from the process (suppressed);
// - the program's own: passed on or not as the process's handling said
//   before the session (LLDB passes a signal when the thread resumes, with
//   its siginfo), and the process goes on by itself unless that handling
//   said stop.
// When the last such session ends, the process's handling of SIGRTMAX-1
// (stop, notify, pass) is put back as it was, once no thread still holds
// xref's signal.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <string>
#include <vector>

namespace xref::lldb_plugin {

// Before a --stop-when session of `target`'s process starts: remembers the
// process's handling of the signal (once) and makes LLDB stop on it. False
// with `error` set when LLDB has no signal table.
bool take_stop_signal(lldb::SBTarget target, std::string& error);
// The session started: the handling stays taken until it ends.
void stop_signal_started(lldb::SBTarget target, uint64_t session);
// The session did not start: the handling comes back unless another
// session needs it.
void stop_signal_start_failed(lldb::SBTarget target, std::vector<std::string>& lines);
// A session ended. No LLDB calls: the process watcher thread ends sessions.
void stop_signal_session_ended(uint64_t session);
// Puts back the handling no session needs any more (on a command's thread).
void restore_stop_signals(std::vector<std::string>& lines);

// In the stop hook, first: a stop by the program's own SIGRTMAX-1 where its
// handling said not to stop continues the process (LLDB prints that the
// hook continued it); true then, with `result` saying so. xref's signal is
// kept from the process.
bool pass_program_signal(lldb::SBDebugger debugger, lldb::SBCommandReturnObject& result);

}  // namespace xref::lldb_plugin
