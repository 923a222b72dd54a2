// The LLDB front end of xref: `plugin load .../libxref_lldb.so` adds the
// `xref` command (docs/lldb.md). Public SB API only.
#include <lldb/API/LLDB.h>

#include <memory>

#include "breakpoint_guard.h"
#include "commands.h"
#include "plugin_state.h"

namespace lldb {
__attribute__((visibility("default"))) bool PluginInitialize(lldb::SBDebugger debugger);
}

namespace xref::lldb_plugin {
namespace {

void add(lldb::SBCommand& parent, Subcommand* command) {
  // LLDB owns the command object from here on.
  parent.AddCommand(command->name(), command, command->help(), command->syntax(), "");
}

// Closing the helper's stdin makes it stop every session and detach.
void on_debugger_destroyed(lldb::user_id_t debugger_id, void*) { PluginState::forget(debugger_id); }

}  // namespace
}  // namespace xref::lldb_plugin

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
  using namespace xref::lldb_plugin;
  lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
  lldb::SBCommand xref = interpreter.AddMultiwordCommand(
      "xref", "Live tracing with xref: ordered windows of what the process does next, from eBPF uprobes, "
              "without stopping it (docs/lldb.md).");
  if (!xref.IsValid()) return false;
  add(xref, new TraceCommand());
  add(xref, new ProbeCommand());
  add(xref, new SessionsCommand());
  add(xref, new ShowCommand());
  add(xref, new StopCommand());
  add(xref, new OneShotCommand("doctor"));
  add(xref, new OneShotCommand("maps"));
  add(xref, new OneShotCommand("resolve"));
  add(xref, new BreakCommand());
  add(xref, new HelperSubcommand());
  install_breakpoint_guard(debugger);
  debugger.AddDestroyCallback(on_debugger_destroyed, nullptr);
  return true;
}
