#include "serve/protocol.h"

#include <array>

#include "input/untrusted_json.h"

namespace xref::serve {

ProtocolError protocol_error(std::string code, std::string message, std::string hint) {
  return ProtocolError{std::move(code), std::move(message), std::move(hint), std::nullopt, 0};
}

ProtocolError cli_error(const Error& error) {
  return ProtocolError{error_code_name(error.code), error.message, error.hint, error_exit_status(error.code),
                       error.column};
}

nlohmann::json error_object(const ProtocolError& error) {
  nlohmann::json json = {{"code", error.code}, {"message", error.message}};
  if (error.exit_status) json["exit_status"] = *error.exit_status;
  if (!error.hint.empty()) json["hint"] = error.hint;
  if (error.column > 0) json["column"] = error.column;
  return json;
}

bool is_known_method(std::string_view method) {
  static constexpr std::array<std::string_view, 12> kMethods = {
      "hello",    "command", "session.start", "session.stop", "session.release", "sessions",
      "drain",    "shutdown", "run",          "names",        "resumed",         "complete"};
  for (std::string_view known : kMethods) {
    if (method == known) return true;
  }
  return false;
}

ParsedLine parse_request(const LineSplitter::Line& line) {
  if (line.too_large) {
    return RejectedLine{error_response(
        nullptr, protocol_error("message_too_large",
                                "request line longer than " + std::to_string(kMaxLineBytes) + " bytes; skipped",
                                "send shorter requests"))};
  }
  UntrustedJson parsed = parse_untrusted_json(line.text);
  if (parsed.failure == UntrustedJson::Failure::too_deep) {
    return RejectedLine{error_response(
        nullptr, protocol_error("parse_error", "the line is JSON " + too_deep_text() + "; skipped",
                                "send one JSON object per line; no request nests that deep"))};
  }
  if (!parsed.ok()) {
    return RejectedLine{error_response(nullptr, protocol_error("parse_error", "the line is not valid JSON",
                                                               "send one JSON object per line"))};
  }
  const nlohmann::json& message = parsed.value;
  if (!message.is_object()) {
    return RejectedLine{error_response(
        nullptr, protocol_error("parse_error", std::string("the line is a JSON ") + message.type_name() +
                                                   ", not an object",
                                "send one JSON object per line"))};
  }
  const auto id = message.find("id");
  const bool id_ok = id != message.end() && id->is_number_integer();
  const nlohmann::json reply_id = id_ok ? *id : nlohmann::json(nullptr);
  if (!id_ok) {
    return RejectedLine{error_response(nullptr, protocol_error("invalid_request", "the request has no integer \"id\""))};
  }
  const auto method = message.find("method");
  if (method == message.end() || !method->is_string()) {
    return RejectedLine{error_response(reply_id, protocol_error("invalid_request", "the request has no string \"method\""))};
  }
  Request request;
  request.id = reply_id;
  request.method = method->get<std::string>();
  if (const auto params = message.find("params"); params != message.end() && !params->is_null()) {
    if (!params->is_object()) {
      return RejectedLine{error_response(reply_id, protocol_error("invalid_request", "\"params\" is not an object"))};
    }
    request.params = *params;
  }
  if (!is_known_method(request.method)) {
    return RejectedLine{error_response(
        reply_id, protocol_error("unknown_method", "no method named \"" + request.method + "\"",
                                 "methods: hello, command, session.start, session.stop, session.release, sessions, drain, shutdown, "
                                 "run, names, resumed, complete"))};
  }
  return request;
}

nlohmann::json result_response(const nlohmann::json& id, nlohmann::json result) {
  return {{"id", id}, {"result", std::move(result)}};
}

nlohmann::json error_response(const nlohmann::json& id, const ProtocolError& error) {
  return {{"id", id}, {"error", error_object(error)}};
}

nlohmann::json event_message(std::string_view event, uint64_t session, nlohmann::json fields) {
  nlohmann::json message = {{"type", "event"}, {"event", event}, {"session", session}};
  for (auto& [key, value] : fields.items()) message[key] = std::move(value);
  return message;
}

nlohmann::json hello_line(pid_t pid) {
  return {{"type", "hello"},
          {"protocol", kProtocolVersion},
          {"protocols", {kOldestProtocolVersion, kProtocolVersion}},
          {"tool", "xref"},
          {"tool_version", XREF_VERSION},
          {"pid", pid}};
}

std::optional<nlohmann::json> Handshake::gate(const Request& request) const {
  if (done_ || request.method == "hello") return std::nullopt;
  return error_response(request.id, protocol_error("not_ready", "\"" + request.method + "\" before \"hello\"",
                                                   "send hello with the protocol version first"));
}

nlohmann::json Handshake::answer(const Request& hello) {
  const auto version = hello.params.find("protocol");
  if (version == hello.params.end() || !version->is_number_integer()) {
    return error_response(hello.id, protocol_error("invalid_request", "hello needs an integer params.protocol"));
  }
  if (*version < kOldestProtocolVersion || *version > kProtocolVersion) {
    return error_response(
        hello.id, protocol_error("version_mismatch",
                                 "the front end speaks protocol " + version->dump() + ", this helper (xref " +
                                     XREF_VERSION + ") speaks protocols " + std::to_string(kOldestProtocolVersion) +
                                     " to " + std::to_string(kProtocolVersion),
                                 "install a front end and helper of the same release"));
  }
  done_ = true;
  version_ = version->get<int>();
  return result_response(hello.id, {{"protocol", version_}, {"tool_version", XREF_VERSION}});
}

}  // namespace xref::serve
