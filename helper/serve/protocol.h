// The helper protocol's wire format (docs/protocol.md): JSON lines framed
// at 1 MiB, request validation, the handshake, and the shapes of responses,
// errors and events. Pure: no I/O, so every rule is unit-tested.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "json_lines.h"
#include "result.h"

namespace xref::serve {

// Protocol 2: the helper renders (docs/protocol.md, "Protocol 2"); 1 is
// still spoken to front ends that render themselves.
constexpr int kProtocolVersion = 2;
constexpr int kOldestProtocolVersion = 1;
// The framing is shared with the LLDB plugin (shared/json_lines.h).
using xref::kMaxLineBytes;
using xref::LineSplitter;

// An error as the protocol sends it: one of the protocol's own codes, or a
// CLI ErrorCode with its exit status.
struct ProtocolError {
  std::string code;
  std::string message;
  std::string hint;
  std::optional<int> exit_status;  // set for the CLI's codes only
  int column = 0;
};

ProtocolError protocol_error(std::string code, std::string message, std::string hint = {});
ProtocolError cli_error(const Error& error);
nlohmann::json error_object(const ProtocolError& error);

struct Request {
  nlohmann::json id;  // an integer
  std::string method;
  nlohmann::json params = nlohmann::json::object();
};

// What a line turned into: a request to run, or the error response to send.
struct RejectedLine {
  nlohmann::json response;
};
using ParsedLine = std::variant<Request, RejectedLine>;

bool is_known_method(std::string_view method);

// Framing and shape checks only: parse_error, message_too_large,
// invalid_request, unknown_method.
ParsedLine parse_request(const LineSplitter::Line& line);

nlohmann::json result_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json error_response(const nlohmann::json& id, const ProtocolError& error);
nlohmann::json event_message(std::string_view event, uint64_t session, nlohmann::json fields = nlohmann::json::object());

// The line the helper speaks first.
nlohmann::json hello_line(pid_t pid);

// Nothing but hello runs before a successful hello.
class Handshake {
 public:
  bool done() const { return done_; }
  // The version the front end's hello chose (valid once done()).
  int version() const { return version_; }
  // not_ready for a request that may not run yet.
  std::optional<nlohmann::json> gate(const Request& request) const;
  // The response to a hello request; the handshake is done once it succeeds.
  nlohmann::json answer(const Request& hello);

 private:
  bool done_ = false;
  int version_ = kProtocolVersion;
};

}  // namespace xref::serve
