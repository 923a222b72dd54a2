// Tab completion in LLDB 19 (docs/lldb.md, "Tab completion").
//
// LLDB 19 gives a plugin's commands (SBCommandPluginInterface) no completion
// hook, and a Python command none either; it completes only what a Python
// "parsed" command declares: its option names, and target symbols where an
// option's value or a positional word is of a symbol type. So when LLDB has
// Python, the plugin imports xref_complete.py (installed next to it), which
// declares each helper command that has options as such a command, with the
// helper's own definitions (`xref _complete`, from the `complete` request),
// and hands what LLDB parsed back to the plugin (`xref _run`) to run as
// every other command. Without Python, or when that fails, the plugin's own
// commands stay and nothing completes but the command names.
#pragma once

#include <lldb/API/LLDB.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend.h"

namespace xref::lldb_plugin {

// `xref _complete`: {"commands": [{"name", "help", "options": [...],
// "positional_code"}]} from the helper's `complete` request, one JSON line;
// `helps`: what `help xref` says of the plugin's commands.
Failure completion_table(Frontend& frontend, const std::map<std::string, std::string>& helps, std::string& json);

// `xref _run WORDS`: the words as one hex-encoded JSON array (no quoting for
// LLDB to undo twice), or nullopt when they are not.
std::optional<std::vector<std::string>> shim_words(char** command);

// Imports the shim when LLDB has Python; the subcommands of `xref` that are
// there afterwards (the shim's), which the plugin then does not add itself.
std::set<std::string> import_completion_shim(lldb::SBDebugger debugger, const std::string& plugin_path);

}  // namespace xref::lldb_plugin
