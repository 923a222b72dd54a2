// What `session.stop` of an ended session gets (its summary), kept after
// the session itself (its thread, eventfds, plan and buffers) is freed, and
// only until the front end has read that session's session_ended event
// (docs/protocol.md, "session.stop"): a few hundred bytes each, at most
// kKept of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "serve/protocol.h"

namespace xref::serve {

// session.stop of a session not found: never started (ids below `next_id`
// were given out), or ended and already read (session_limits.cpp).
ProtocolError unknown_session(uint64_t session, uint64_t next_id);

class EndedSessions {
 public:
  // Beyond this many unread ends (a front end that never drains), the
  // oldest is forgotten first.
  static constexpr size_t kKept = 256;

  void keep(uint64_t session, nlohmann::json stop_answer) {
    answers_[session] = std::move(stop_answer);
    while (answers_.size() > kKept) answers_.erase(answers_.begin());
  }
  std::optional<nlohmann::json> find(uint64_t session) const {
    const auto found = answers_.find(session);
    if (found == answers_.end()) return std::nullopt;
    return found->second;
  }
  // The front end has read every session_ended event queued so far.
  void forget_all() { answers_.clear(); }
  size_t size() const { return answers_.size(); }

 private:
  std::map<uint64_t, nlohmann::json> answers_;
};

}  // namespace xref::serve
