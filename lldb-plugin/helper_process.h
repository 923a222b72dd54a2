// The helper process (`xref serve`): which command runs it, starting it with
// pipes on its stdin, stdout and stderr, and how it ended.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace xref::lldb_plugin {

// The words that start the helper, e.g. {"sudo", "-n", "/usr/local/bin/xref", "serve"}.
struct HelperCommand {
  std::vector<std::string> argv;
  std::string display() const;  // the words joined by spaces, for messages
};

// Splits a command line (XREF_HELPER, `xref helper ...`) into words at
// whitespace; single and double quotes group words, backslash escapes.
// Returns nullopt for an unterminated quote.
std::optional<std::vector<std::string>> split_command_line(const std::string& text);

// Where `cmake --install` (and the Debian package) puts the helper:
// CMAKE_INSTALL_FULL_BINDIR/xref, known when the plugin is configured.
extern const char* const kInstalledHelper;

// The default helper: the `xref` executable next to the plugin, then
// ../helper/xref relative to it (the build tree), then the installed helper
// (`installed`), then `xref` on PATH; each with the argument `serve`.
// `plugin_path` is this shared library's path.
HelperCommand default_helper_command(const std::string& plugin_path, const std::string& installed = kInstalledHelper);

// The path of the shared library this code is in (dladdr), or "" when
// unknown.
std::string plugin_library_path();

// A started helper. Descriptors are close-on-exec, so processes the debugger
// launches never hold the helper's stdin open.
struct HelperProcess {
  pid_t pid = -1;
  int stdin_fd = -1;   // write end
  int stdout_fd = -1;  // read end
  int stderr_fd = -1;  // read end
};

// Starts the helper in its own process group (Ctrl-C in the debugger is for
// the debugged process, not for the helper). On failure returns nullopt and
// sets `error` to the strerror text of what failed, e.g. "No such file or
// directory".
std::optional<HelperProcess> spawn_helper(const HelperCommand& command, std::string& error);

// "exited with status 3", "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int status);

}  // namespace xref::lldb_plugin
