// xref helper [COMMAND...]: which command starts the helper (`xref serve`),
// e.g. `xref helper sudo -n /usr/local/bin/xref serve` when LLDB does not run
// as root.
#include "commands.h"

namespace xref::lldb_plugin {

const char* HelperSubcommand::help() const {
  return "Show or set the command that starts the xref helper (default: the xref next to this plugin, then "
         "../helper/xref, then PATH, with `serve`; or the XREF_HELPER environment variable).";
}

const char* HelperSubcommand::syntax() const {
  return "xref helper                      show the command and whether the helper runs\n"
         "xref helper COMMAND [ARG...]     start the helper with this command from now on,\n"
         "                                 e.g. xref helper sudo -n /usr/local/bin/xref serve\n"
         "xref helper --default            back to the default";
}

bool HelperSubcommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  PluginState& state = scope.state();
  if (words.size() == 1 && wants_help(words)) return print_help(scope);
  if (words.empty()) {
    const HelperCommand current = state.helper_command();
    std::string line = "xref: helper command: " + current.display();
    if (!state.helper_command_configured()) line += getenv("XREF_HELPER") != nullptr ? " (from XREF_HELPER)" : " (default)";
    scope.print(line);
    if (HelperClient* helper = state.running_helper()) {
      scope.print("xref: the helper runs as pid " + std::to_string(helper->pid()) + " (xref " + helper->tool_version() + ")");
    } else {
      scope.print("xref: the helper is not running; the next xref command that needs it starts it");
    }
    return true;
  }
  std::optional<HelperCommand> chosen;
  if (!(words.size() == 1 && words[0] == "--default")) chosen = HelperCommand{words};
  std::string error;
  if (!state.set_helper_command(chosen, error)) return scope.fail("xref: " + error);
  scope.print("xref: helper command: " + state.helper_command().display() + " (starts at the next xref command that needs it)");
  return true;
}

}  // namespace xref::lldb_plugin
