// `xref serve`'s dispatch: one input line in, its response (or nothing,
// when a session thread answers later) out through the protocol writer.
#pragma once

#include "serve/protocol.h"
#include "serve/sessions.h"
#include "serve/writer.h"

namespace xref::serve {

class Server {
 public:
  Server(ProtocolWriter& writer, size_t max_sessions) : writer_(writer), sessions_(writer, max_sessions) {}

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

  ProtocolWriter& writer_;
  Handshake handshake_;
  SessionManager sessions_;
  bool shutting_down_ = false;
};

}  // namespace xref::serve
