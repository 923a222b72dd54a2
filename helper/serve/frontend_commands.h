// The words a debugger's `xref` takes besides the sessions and the one-shot
// commands: show, sessions, stop, break; and the list of every command, for
// `xref help` and Tab completion. Defined with CLI11 like every other
// command, so help, errors and completion come from one definition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "serve/protocol.h"
#include "serve/session_request.h"

namespace xref::serve {

struct FrontendCommand {
  std::string name;  // show, sessions, stop, break
  std::optional<uint64_t> session;
  bool all = false;
  bool json = false;
  uint64_t window = 0, seq = 0;  // break W:SEQ
};

std::variant<FrontendCommand, HelpText, ProtocolError> parse_frontend_command(const std::vector<std::string>& words);

// `xref help`: every command a debugger's `xref` takes, one line each.
std::string overall_help();

// Tab completion: `words` typed before the word being completed, `partial`
// that word. Commands, their options; values are the caller's (function
// names from the target).
struct Completion {
  std::vector<std::string> candidates;
  // The option whose value `partial` is ("--start"), or "" for a
  // positional word, when the command takes code addresses there.
  std::optional<std::string> wants_function;
  // With option names: each option's short name, how many values it takes
  // (0: a flag) and whether they are code, and whether the command's positional
  // words are code. LLDB 19 completes only from such declarations
  // (lldb-plugin/xref_complete.py).
  nlohmann::json options = nlohmann::json::array();
  bool positional_code = false;
};
Completion complete_words(const std::vector<std::string>& words, const std::string& partial);

// Whether the value of `option` of `command` ("trace", "--start"), or with
// option "" the command's positional words, names code: function names
// complete there (here, and in the shell's completion script).
bool takes_code(const std::string& command, const std::string& option);

}  // namespace xref::serve
