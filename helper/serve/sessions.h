// Sessions of `xref serve`: each runs run_trace on its own thread
// and speaks for itself through the protocol writer (its start response,
// its window events, its session_ended event and the responses to
// session.stop). Stopping is an eventfd the session's poll loop watches.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "serve/capture_files.h"
#include "serve/ended_sessions.h"
#include "serve/context.h"
#include "serve/protocol.h"
#include "serve/session_request.h"
#include "serve/writer.h"

namespace xref {
struct ProbeCallbacks;
struct ProbePlan;
struct WatchCallbacks;
struct WatchPlan;
}  // namespace xref

namespace xref::serve {

struct Session;
class SiteReleases;

// One `drain` request: answered when the last of its sessions has drained
// (or ended).
struct PendingDrain {
  nlohmann::json request_id;
  std::mutex mutex;
  size_t remaining = 0;
  std::vector<uint64_t> ending;  // sessions that reached a bound: session_ended follows, no window
};

// What a stop request gets once the session is over: its summary, or why
// it never started.
using StopAnswer = std::variant<nlohmann::json, ProtocolError>;

class SessionManager {
 public:
  // Sessions at once (attaching, running or stopping) unless `xref serve
  // --max-sessions` says otherwise: each holds a thread, ring buffers and
  // maps, and under sudo that is root's memory.
  static constexpr size_t kDefaultMaxSessions = 64;

  explicit SessionManager(ProtocolWriter& writer, size_t max_sessions = kDefaultMaxSessions)
      : writer_(writer), max_sessions_(max_sessions) {}
  ~SessionManager();
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // Starts a session thread, which answers `request_id` once attached (or
  // failed); an error to send now when the session cannot start at all.
  std::optional<ProtocolError> start(const nlohmann::json& request_id, SessionSpec spec);

  // Asks a session to stop. The session answers `request_id` after its
  // session_ended event; the response to send now when it already ended.
  std::optional<nlohmann::json> stop(uint64_t session, const nlohmann::json& request_id);

  // session.release (release.cpp): the session stops observing its probe
  // sites at those live addresses, for a debugger's breakpoint to go there;
  // answered once their uprobes are out of the target. The response to send
  // now when none of its sites is there or it already ended.
  std::optional<nlohmann::json> release(const ReleaseRequest& release, const nlohmann::json& request_id);

  // {"sessions": [...]} for every session not yet ended.
  nlohmann::json list();

  // Every running session drains its ring buffer (sending the windows that
  // closed so far) before `request_id` is answered; the response to send
  // now when no session is running. `at_stop`: the debugger stopped the
  // process, which ends every profile session (reported in `ending`).
  std::optional<nlohmann::json> drain(const nlohmann::json& request_id, bool at_stop = false);

  // The profile sessions' capture files.
  CaptureFiles& captures() { return captures_; }

  // The helper is exiting: every session stops ("helper_exiting") and its
  // thread is joined, each detaching its own probes.
  void stop_all_and_join();

  // Joins the threads of sessions that ended and frees them; what a
  // session.stop of one gets stays in ended_ until forget_reported().
  void reap();
  // A drain or sessions request is being answered: its answer follows
  // every session_ended event queued so far, so a front end that reads it
  // has read them; their sessions are forgotten.
  void forget_reported();

 private:
  void run(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec);
  // A probe session (probe_session.cpp): counts at each drain as
  // probe_update events, the live_probe document at its end.
  void run_probe_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec);
  // A watch session (watch_session.cpp): the new writes at each drain as
  // watch_update events, the live_watch document at its end.
  void run_watch_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec);
  // A profile session (profile_session.cpp): samples until its duration or
  // the debugger's next stop; its top functions in session_ended's document.
  void run_profile_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec);
  void finish(Session& session, const std::optional<nlohmann::json>& ended_event, StopAnswer answer);
  // A probe or watch run's stop reason as the session reports it: a stop
  // the helper's exit made is "helper_exiting".
  std::string end_reason(Session& session, std::string reason);
  // A probe or watch session's end: the session_ended event with its
  // document (`error`, the process's exit, put in it) and `extra` fields.
  void end_with_document(Session& session, const std::string& stop_reason, const std::optional<Error>& error,
                         nlohmann::json document, const nlohmann::json& summary,
                         const nlohmann::json& extra = nlohmann::json::object());
  // A session that failed: before its attach the failure answers
  // session.start; after it, its session_ended event carries the error,
  // with `empty` (what the command's event holds when there is no result).
  void fail(Session& session, const nlohmann::json& request_id, bool attached, const Error& error,
            const nlohmann::json& empty);
  void answer_drains(Session& session, bool ending);
  // too_many_sessions when max_sessions_ have not ended yet (mutex_ held;
  // session_limits.cpp).
  std::optional<ProtocolError> refuse_over_cap();
  // release.cpp: a probe session's release hooks (`site_lives`: each plan
  // site's live address); the releases answered after session_ended.
  void hook_probe_releases(Session& session, const ProbePlan& plan, std::vector<uint64_t> site_lives,
                           ProbeCallbacks& callbacks);
  void answer_releases_at_end(Session& session, const StopAnswer& answer);
  // release.cpp: a probe or watch session's releases from its attach on
  // (`site_lives`: each plan site's live address).
  std::shared_ptr<SiteReleases> start_releases(Session& session, std::vector<uint64_t> site_lives);
  // The next release `releasing` took, answered with the `sites` it took
  // out; one the engine could not do (`failed`) answers after the end.
  void answer_release(Session& session, SiteReleases& releasing, bool failed, const nlohmann::json& sites,
                      uint64_t gap_us, bool process_stopped);
  // watch_session.cpp: a watch session's release hooks (`site_lives`: each
  // plan site's live address).
  void hook_watch_releases(Session& session, const WatchPlan& plan, std::vector<uint64_t> site_lives,
                           WatchCallbacks& callbacks);
  // A running session other than `except` that uses tracefs (mutex_ held).
  std::optional<uint64_t> tracefs_session(const Session* except);
  // --backend auto falling back to tracefs: whether `session` may, which
  // then counts as its backend for later session.start requests.
  bool claim_tracefs(Session& session);

  ProtocolWriter& writer_;
  CaptureFiles captures_;  // before the sessions: their threads are joined first
  std::mutex mutex_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;  // not reaped yet
  const size_t max_sessions_;
  EndedSessions ended_;  // reaped, session_ended not yet read
};

}  // namespace xref::serve
