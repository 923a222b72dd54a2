// session.start's words and context turned into a trace, probe, watch or profile request,
// with the CLI's own definitions (add_trace_options, add_probe_options) and
// checks: a front end's `trace ...` or `probe ...` means what it means in a
// shell.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "serve/context.h"
#include "serve/protocol.h"
#include "probe/options.h"
#include "serve/profile_options.h"
#include "trace/options.h"
#include "watch/options.h"

namespace xref::serve {

struct SessionSpec {
  std::string command = "trace";  // trace, probe, watch or profile
  TraceCommandOptions options;    // command trace
  ProbeCommandOptions probe;      // command probe
  WatchCommandOptions watch;      // command watch
  DebuggerProfileOptions profile;  // command profile

  const ProcessCommandOptions& process() const {
    if (command == "watch") return watch;
    if (command == "profile") return profile;
    return command == "probe" ? static_cast<const ProcessCommandOptions&>(probe) : options;
  }
};

struct HelpText {
  std::string text;
};

std::variant<SessionSpec, HelpText, ProtocolError> parse_session_start(const std::vector<std::string>& words,
                                                                       const RequestContext& context);

}  // namespace xref::serve
