// `xref profile report|annotate|diff` in a debugger: the CLI's commands
// (profile/cmd_offline.cpp) run in process, their output as text lines;
// a capture file the words leave out is the last one a profile session of
// this helper wrote (diff without files: the last two).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "serve/capture_files.h"
#include "serve/protocol.h"

namespace xref::serve {

bool is_profile_offline(const std::vector<std::string>& words);

// {"text": [...], "exit_status"} or {"help"}; an error when a capture is
// left out and this helper wrote none.
std::variant<nlohmann::json, ProtocolError> run_profile_offline(const std::vector<std::string>& words,
                                                                const CaptureFiles& captures);

}  // namespace xref::serve
