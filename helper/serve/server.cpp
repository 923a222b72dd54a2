#include "serve/server.h"

#include "serve/command.h"
#include "serve/context.h"
#include "serve/helper_names.h"
#include "serve/session_request.h"
#include "serve/display_text.h"
#include "serve/start_text.h"
#include "serve/watch_prepare.h"
#include "probe_abi.h"
#include "output/json_envelope.h"

namespace xref::serve {

// run.cpp: the error object of a response gets the line a front end prints.
nlohmann::json with_text(nlohmann::json response);

Server::Server(ProtocolWriter& writer, size_t max_sessions)
    : writer_(writer), sessions_(writer, max_sessions), names_(helper_names_factory()) {}

nlohmann::json Server::hello(const Request& request) {
  nlohmann::json answer = handshake_.answer(request);
  if (handshake_.done() && handshake_.version() >= 2) {
    // The helper renders: events stay here until a `run show` prints them.
    writer_.set_event_sink([this](const nlohmann::json& event) { return display_.take_event(event); });
    debugger_names_ = request.params.value("names", false);
  }
  return answer;
}

pid_t Server::display_pid(uint64_t session) {
  for (const nlohmann::json& entry : sessions_.list()["sessions"]) {
    if (entry.value("session", uint64_t{0}) == session) return entry.value("pid", 0);
  }
  return display_.pid_of(session);
}

nlohmann::json Server::complete(const Request& request) {
  std::vector<std::string> words;
  const auto argv = request.params.find("argv");
  if (argv != request.params.end() && argv->is_array()) {
    for (const nlohmann::json& word : *argv) {
      if (word.is_string()) words.push_back(word);
    }
  }
  const std::string partial = request.params.value("partial", std::string());
  Completion completion = complete_words(words, partial);
  if (completion.wants_function) {
    auto context = parse_context(request.params);
    if (auto* known = std::get_if<RequestContext>(&context); known && known->pid) {
      completion.candidates = function_candidates(*known->pid, partial);
    }
  }
  nlohmann::json result = {{"candidates", completion.candidates}};
  if (!completion.options.empty()) {
    result["options"] = completion.options;
    result["positional_code"] = completion.positional_code;
  }
  return result_response(request.id, result);
}

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
  if (request.method == "hello") return hello(request);
  if (request.method == "run") return run(request);
  if (request.method == "names") {
    if (auto refused = names_.add(request.params)) return error_response(request.id, *refused);
    return result_response(request.id, nlohmann::json::object());
  }
  if (request.method == "resumed") {
    const auto at = request.params.find("at_ns");
    const auto pid = request.params.find("pid");
    display_.stops().resumed(pid != request.params.end() && pid->is_number_integer() ? pid->get<pid_t>() : 0,
                             at != request.params.end() && at->is_number_unsigned() ? at->get<uint64_t>()
                                                                                      : monotonic_now_ns());
    return result_response(request.id, nlohmann::json::object());
  }
  if (request.method == "complete") return complete(request);
  if (request.method == "command") return command(request);
  if (request.method == "session.start") return session_start(request);
  if (request.method == "session.stop") return session_stop(request);
  if (request.method == "session.release") {
    auto release = parse_release(request.params);
    if (auto* error = std::get_if<ProtocolError>(&release)) return error_response(request.id, *error);
    if (handshake_.version() >= 2) {
      // Protocol 2: the answer carries the lines the front end prints.
      const ReleaseRequest asked = std::get<ReleaseRequest>(release);
      writer_.transform_response(request.id, [asked](nlohmann::json response) {
        if (response.contains("result")) {
          response["result"]["text"] = release_text(asked.session, response["result"], asked.addresses);
        }
        return with_text(std::move(response));
      });
    }
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
  // watch in a debugger: its expressions first (docs/protocol.md, "watch in a debugger").
  SessionSpec& chosen = std::get<SessionSpec>(spec);
  const nlohmann::json evaluate = watch_evaluate_list(chosen);
  const auto prepared = request.params.find("prepared");
  if (!evaluate.empty()) {
    if (prepared == request.params.end() || !prepared->is_object()) {
      nlohmann::json prepare = {{"evaluate", evaluate}};
      if (!chosen.watch.request.stop_when.empty()) prepare["stop_signal"] = XREF_PROBE_STOP_SIGNAL;
      return result_response(request.id, {{"prepare", prepare}});
    }
    if (auto refused = apply_watch_evaluations(chosen, *prepared)) return error_response(request.id, *refused);
  }
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
