// The `command` method: a one-shot command (maps, resolve, memscan, doctor)
// run in process exactly as `xref WORDS --json` would run, its document
// captured from std::cout. Runs on the main thread: it swaps std::cout's
// buffer while the command runs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "serve/context.h"
#include "serve/protocol.h"

namespace xref::serve {

// {"document", "exit_status"}, or {"help"} when the words ask for --help.
std::variant<nlohmann::json, ProtocolError> run_one_shot(const std::vector<std::string>& words,
                                                         const RequestContext& context, bool text = false);

}  // namespace xref::serve
