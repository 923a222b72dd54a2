#include "serve/server.h"

#include "serve/command.h"
#include "serve/context.h"
#include "serve/session_request.h"

namespace xref::serve {

bool Server::handle(const LineSplitter::Line& line) {
  if (!line.too_large && line.text.find_first_not_of(" \t\r") == std::string::npos) return true;  // blank line
  ParsedLine parsed = parse_request(line);
  if (auto* rejected = std::get_if<RejectedLine>(&parsed)) {
    writer_.write(rejected->response);
    return true;
  }
  const Request& request = std::get<Request>(parsed);
  if (auto refused = handshake_.gate(request)) {
    writer_.write(*refused);
    return true;
  }
  nlohmann::json response;
  try {
    response = dispatch(request);
  } catch (const std::exception& failure) {
    response = error_response(request.id, cli_error(make_error(ErrorCode::internal, failure.what())));
  }
  if (!response.is_null()) writer_.write(response);
  return !shutting_down_;
}

nlohmann::json Server::dispatch(const Request& request) {
  if (request.method == "hello") return handshake_.answer(request);
  if (request.method == "command") return command(request);
  if (request.method == "session.start") return session_start(request);
  if (request.method == "session.stop") return session_stop(request);
  if (request.method == "session.release") {
    auto release = parse_release(request.params);
    if (auto* error = std::get_if<ProtocolError>(&release)) return error_response(request.id, *error);
    // A session with a probe site there answers once its uprobes are out.
    return sessions_.release(std::get<ReleaseRequest>(release), request.id).value_or(nullptr);
  }
  if (request.method == "sessions") return result_response(request.id, sessions_.list());
  if (request.method == "drain") return sessions_.drain(request.id).value_or(nullptr);
  // shutdown: every session ends (each sends its session_ended) before the answer.
  sessions_.stop_all_and_join();
  shutting_down_ = true;
  return result_response(request.id, nlohmann::json::object());
}

nlohmann::json Server::command(const Request& request) {
  auto words = parse_argv(request.params);
  if (auto* error = std::get_if<ProtocolError>(&words)) return error_response(request.id, *error);
  auto context = parse_context(request.params);
  if (auto* error = std::get_if<ProtocolError>(&context)) return error_response(request.id, *error);
  auto result = run_one_shot(std::get<std::vector<std::string>>(words), std::get<RequestContext>(context));
  if (auto* error = std::get_if<ProtocolError>(&result)) return error_response(request.id, *error);
  return result_response(request.id, std::move(std::get<nlohmann::json>(result)));
}

nlohmann::json Server::session_start(const Request& request) {
  auto words = parse_argv(request.params);
  if (auto* error = std::get_if<ProtocolError>(&words)) return error_response(request.id, *error);
  auto context = parse_context(request.params);
  if (auto* error = std::get_if<ProtocolError>(&context)) return error_response(request.id, *error);
  auto spec = parse_session_start(std::get<std::vector<std::string>>(words), std::get<RequestContext>(context));
  if (auto* error = std::get_if<ProtocolError>(&spec)) return error_response(request.id, *error);
  if (auto* help = std::get_if<HelpText>(&spec)) return result_response(request.id, {{"help", help->text}});
  // The session answers once attached.
  if (auto refused = sessions_.start(request.id, std::move(std::get<SessionSpec>(spec)))) {
    return error_response(request.id, *refused);
  }
  return nullptr;
}

nlohmann::json Server::session_stop(const Request& request) {
  auto id = parse_session_id(request.params);
  if (auto* error = std::get_if<ProtocolError>(&id)) return error_response(request.id, *error);
  // The session answers after its session_ended event, unless it is over.
  return sessions_.stop(std::get<uint64_t>(id), request.id).value_or(nullptr);
}

}  // namespace xref::serve
