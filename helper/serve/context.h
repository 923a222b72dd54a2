// What a front end sends beside the user's words (docs/protocol.md):
// params.argv and params.context, checked and turned into the types the
// commands use. Pure, so malformed requests are unit-tested.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "serve/protocol.h"
#include "sites/debugger_context.h"

namespace xref::serve {

struct RequestContext {
  std::optional<pid_t> pid;
  std::string executable;     // the debugger's main executable, for --bin
  DebuggerContext debugger;   // present when params.context was given
  // context.debug_registers_used: the debugger's own hardware watchpoints
  // and breakpoints now (watch's hw engine leaves them their slots).
  uint32_t debug_registers_used = 0;
};

// params.argv: a non-empty array of strings.
std::variant<std::vector<std::string>, ProtocolError> parse_argv(const nlohmann::json& params);

// params.context (optional): pid, executable, here {tid, pc, cfa}, breakpoints,
// debug_registers_used.
std::variant<RequestContext, ProtocolError> parse_context(const nlohmann::json& params);

// params.session: a session id.
std::variant<uint64_t, ProtocolError> parse_session_id(const nlohmann::json& params);

// session.release's params: {session, addresses: [live VAs], reason}.
struct ReleaseRequest {
  uint64_t session = 0;
  std::vector<uint64_t> addresses;
  std::string reason;  // what takes the sites over: "breakpoint 2"
};
std::variant<ReleaseRequest, ProtocolError> parse_release(const nlohmann::json& params);

}  // namespace xref::serve
