// `xref serve`'s dispatch: one input line in, its response (or nothing,
// when a session thread answers later) out through the protocol writer.
#pragma once

#include "serve/context.h"
#include "serve/deferred.h"
#include "serve/display.h"
#include "serve/frontend_commands.h"
#include "serve/names_cache.h"
#include "serve/protocol.h"
#include "serve/sessions.h"
#include "serve/writer.h"

namespace xref::serve {

class Server {
 public:
  Server(ProtocolWriter& writer, size_t max_sessions);

  // Handles one line; false once `shutdown` was answered.
  bool handle(const LineSplitter::Line& line);
  // Joins the threads of sessions that ended by themselves.
  void reap() { sessions_.reap(); }
  // Stdin closed or a signal came: stop every session and join it.
  void stop_sessions() { sessions_.stop_all_and_join(); }

 private:
  nlohmann::json dispatch(const Request& request);
  nlohmann::json command(const Request& request);
  nlohmann::json session_start(const Request& request);
  nlohmann::json session_stop(const Request& request);
  nlohmann::json hello(const Request& request);

  // Protocol 2 (run.cpp): a debugger's words, answered with the text to print.
  nlohmann::json run(const Request& request);
  nlohmann::json run_session_start(const Request& request, const std::vector<std::string>& words,
                                   const RequestContext& context);
  nlohmann::json run_show(const Request& request, const FrontendCommand& show, const RequestContext& context);
  nlohmann::json run_stop(const Request& request, const FrontendCommand& stop);
  nlohmann::json run_break(const Request& request, const FrontendCommand& command);
  // The answer of a show: its text, or the addresses the debugger must name first.
  nlohmann::json shown_answer(const Display::Selection& selection, bool json, bool at_stop,
                              const nlohmann::json& params);
  nlohmann::json complete(const Request& request);
  pid_t display_pid(uint64_t session);

  ProtocolWriter& writer_;
  Handshake handshake_;
  SessionManager sessions_;
  Display display_;
  NamesCache names_;
  bool debugger_names_ = false;  // the front end names addresses (hello's params.names)
  bool shutting_down_ = false;
  Deferred deferred_;  // last: its thread stops first
};

}  // namespace xref::serve
