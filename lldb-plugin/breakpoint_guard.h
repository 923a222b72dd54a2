// A breakpoint that comes to an address where a running session has a
// uprobe (created, enabled, moved or resolved again after a library load,
// after the session started): the uprobe would swallow it, and LLDB, which
// writes its int3 as soon as the breakpoint is made, saves the uprobe's
// int3 as the byte to put back - once the uprobe is gone, that int3 kills
// the process with SIGTRAP. Before LLDB resumes the process (continue and
// every step), each such location goes off (LLDB puts its saved byte, the
// uprobe's int3, back), the session takes its uprobes there out
// (session.release: the kernel then restores the file's byte, as it finds
// an int3), and the location comes back on (LLDB saves the true byte).
#pragma once

#include <lldb/API/LLDB.h>

namespace xref::lldb_plugin {

// Hooks the resume commands of `debugger` (SBCommandInterpreter's override
// callbacks, which run before the command and let it go on).
void install_breakpoint_guard(lldb::SBDebugger debugger);

}  // namespace xref::lldb_plugin
