// What bounds a helper's sessions: how many may run at once, and what a
// session.stop gets for a session that is gone.
#include <string>

#include "serve/ended_sessions.h"
#include "serve/session.h"
#include "serve/sessions.h"

namespace xref::serve {

ProtocolError unknown_session(uint64_t session, uint64_t next_id) {
  const std::string name = "session " + std::to_string(session);
  if (session == 0 || session >= next_id) {
    return protocol_error("unknown_session", "no " + name, "the sessions method lists the running ones");
  }
  return protocol_error("unknown_session",
                        name + " is over: it did not start, or its session_ended event came before an earlier "
                               "drain or sessions answer",
                        "the sessions method lists the running ones");
}

std::optional<ProtocolError> SessionManager::refuse_over_cap() {
  size_t open = 0;
  for (const auto& [id, session] : sessions_) {
    std::lock_guard lock(session->mutex);
    if (session->state != "ended") ++open;
  }
  if (open < max_sessions_) return std::nullopt;
  return protocol_error("too_many_sessions",
                        std::to_string(open) + " sessions already run in this helper, its limit (xref serve "
                                               "--max-sessions " + std::to_string(max_sessions_) + ")",
                        "stop one first (`xref stop N`; `xref sessions` lists them), or start the helper with a "
                        "larger --max-sessions");
}

}  // namespace xref::serve
