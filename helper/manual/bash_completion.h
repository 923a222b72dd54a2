// The bash completion script of a command tree: commands and nested
// subcommands, each command's options (long and short), and values where
// the definition says what they are: PIDs for a PID, file names for a FILE,
// the values of a one_of, and function names of the target (asked from the
// helper: `xref _complete functions --pid N --prefix P`) where an option
// or a positional takes code. Only `complete` and `compgen`: it needs no
// bash-completion package.
#pragma once

#include <functional>
#include <string>

#include "manual/command_tree.h"

namespace xref::manual {

struct CompletionSite {
  // Whether the value of `option` of `command` ("trace", "--start"), or
  // with option "" the command's positional words, names code.
  std::function<bool(const std::string& command, const std::string& option)> takes_code;
};

// The script: it defines _xref and ends with `complete -F _xref xref`.
std::string bash_completion(const CommandEntry& root, const CompletionSite& site);

}  // namespace xref::manual
