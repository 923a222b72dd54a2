// The debugger breakpoints a session's probes meet. A uprobe and a debugger
// breakpoint at the same address do not mix (the uprobe swallows the int3,
// and a debugger that takes its int3 out after the uprobe went in writes
// the original byte over the uprobe's), so the breakpoints a session's words
// name (`--start bp:N`, `probe bp:N`) go off before its probes go in, and
// those the helper names in `breakpoints_to_disable` right after; all come
// back when the session ends.
#pragma once

#include <lldb/API/LLDB.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command_support.h"

namespace xref::lldb_plugin {

// Breakpoints disabled before a session starts, re-enabled by undo() when
// the start fails.
struct HeldBreakpoints {
  lldb::SBTarget target;
  std::vector<lldb::break_id_t> disabled;
  // Held for --here (the breakpoint stopped at, in case the helper probes
  // its location): back on without a word when the helper does not name it.
  std::vector<lldb::break_id_t> quiet;

  void undo();
};

// N of each `bp:N` among `values`.
std::vector<lldb::break_id_t> breakpoint_references(const std::vector<std::string>& values);

// The enabled breakpoints with an enabled location at load address
// `address` (at --here's pc: the one the thread stopped at).
std::vector<lldb::break_id_t> breakpoints_at(lldb::SBTarget target, uint64_t address);

// Disables the enabled ones of `ids` into `held`. LLDB takes its int3 out of
// the process only while it is stopped: a running process is an error
// naming `what` ("--start bp:3").
bool hold_breakpoints(CommandScope& scope, const std::vector<lldb::break_id_t>& ids, const std::string& what,
                      HeldBreakpoints& held, std::string& error);

// After the start: the held breakpoints the helper named stay off for the
// session (the others come back), and any other breakpoint it names goes
// off now, with a warning. `command` is "trace" or "probe".
void keep_breakpoints_off(CommandScope& scope, SessionRecord& session, const HeldBreakpoints& held,
                          const nlohmann::json& ids, const std::string& command);

}  // namespace xref::lldb_plugin
