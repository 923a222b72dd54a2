// Protocol 2's session start as the debugger sees it: what it must do
// before the probes go in (the preparation), and the lines that say what
// started, in the helper's words for both debuggers.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/names.h"
#include "serve/protocol.h"
#include "serve/session_request.h"

namespace xref::serve {

// {"disable_breakpoints": [N], "disable_quietly": [N], "stop_signal": 63,
// "stop_at_end": true}, each only when needed; empty when nothing is.
nlohmann::json preparation(const SessionSpec& spec, const DebuggerContext& debugger);

// What is wrong with the front end's report `prepared`, before anything
// starts: an invalid_request naming the field (stop_at_end.address must be a
// live address "0x..."); nullopt when it is well formed.
std::optional<ProtocolError> check_prepared(const nlohmann::json& prepared);

// A start answer's `stop_signal`: the signal --stop-when stops a thread
// with (the debugger stops on it and keeps it from the process), else null.
nlohmann::json stop_signal_field(const std::string& stop_when);

// The lines a started session prints: what it observes, where, and what
// the debugger did for it (`prepared`, the front end's report).
std::vector<std::string> start_text(const std::string& command, pid_t pid, const nlohmann::json& started,
                                    const nlohmann::json& prepared, render::Names& names);

// The function an event of a window happened in (its target).
std::string event_function(render::Names& names, const nlohmann::json& event);

}  // namespace xref::serve
