// session.start's words and context turned into a trace request, with the
// CLI's own definitions (add_trace_options) and checks
// (validate_trace_request): a front end's `trace ...` means what it means
// in a shell.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "serve/context.h"
#include "serve/protocol.h"
#include "trace/options.h"

namespace xref::serve {

struct SessionSpec {
  std::string command = "trace";
  TraceCommandOptions options;
};

struct HelpText {
  std::string text;
};

std::variant<SessionSpec, HelpText, ProtocolError> parse_session_start(const std::vector<std::string>& words,
                                                                       const RequestContext& context);

}  // namespace xref::serve
