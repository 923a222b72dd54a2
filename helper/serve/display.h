// Protocol 2: what the sessions produced and the front end has not shown
// yet (windows, a probe's changes at each drain, warnings, how each
// session ended), kept in the helper and rendered there, so LLDB, GDB and
// the shell read the same text. Fed by the protocol writer's event sink
// (every session thread) and read by `run` requests; one mutex guards it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <variant>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "render/names.h"
#include "serve/stop_clock.h"

namespace xref::serve {

class NamesCache;

class Display {
 public:
  // Windows kept per session, shown or not (`show --all` prints them).
  static constexpr size_t kKeptWindows = 1000;
  // A probe session's drains whose changes were not printed yet.
  static constexpr size_t kKeptChanges = 100;
  // A watch session's writes kept, shown or not.
  static constexpr size_t kKeptWrites = 10000;
  // A watch's new writes printed at one stop; `xref show` prints the rest.
  static constexpr size_t kWritesPerStop = 20;
  // Ended sessions kept for `show --all` and `sessions`, beyond running ones.
  static constexpr size_t kKeptEnded = 64;

  // The writer's event sink: true when the event was taken.
  bool take_event(const nlohmann::json& event);
  // A session that attached: its words and the start answer.
  void started(uint64_t session, const std::string& command, pid_t pid, const std::string& words,
               const nlohmann::json& start);

  struct Selection {
    std::optional<uint64_t> session;  // only this one
    bool all = false;                 // shown before or not
    size_t window_limit = 0;          // at most this many new windows (0: no limit)
    bool peek = false;                // JSON for a script: nothing counts as shown
    bool at_stop = false;             // a debugger stop: a probe's changes; else its result so far
    std::map<uint64_t, std::vector<int>> breakpoints;  // the debugger's, by live address: "[bp 1]"
  };
  struct Shown {
    std::vector<std::string> lines;
    // Sessions whose end was not reported to the front end before: what it
    // gives back (breakpoints, its stop signal) is due now.
    std::vector<nlohmann::json> ended;
    size_t windows = 0, probes = 0;
  };
  // Live addresses the selection's text names, per process, that `names`
  // cannot name yet (the front end names them with its debugger first).
  std::map<pid_t, std::vector<uint64_t>> unnamed(const Selection& selection, const NamesCache& names);
  // Renders the selection and marks it shown.
  Shown show(const Selection& selection, NamesCache& names);
  // The same selection as JSON lines ({"session", "window"} / {"session", "document"}).
  Shown show_json(const Selection& selection);

  // Whether session `id` is known (started from this helper).
  bool known(uint64_t id);
  bool ended(uint64_t id);
  pid_t pid_of(uint64_t id);
  // The `xref sessions` table; `live` is SessionManager::list()'s answer.
  std::vector<std::string> sessions_table(const nlohmann::json& live);
  // `xref break W:SEQ`: the live address of event SEQ of window W (the
  // only session with a window W, or `session`), and how to describe it.
  struct EventPlace {
    uint64_t session = 0;
    uint64_t live = 0;         // where the breakpoint goes
    uint64_t probe_live = 0;   // where the event's probe is
    std::string what;          // "the call site of"
    bool running = false;      // its session still runs
    nlohmann::json event;
  };
  std::variant<EventPlace, std::string> event_place(uint64_t window, uint64_t seq, std::optional<uint64_t> session);

  StopClock& stops() { return stops_; }

 private:
  struct Window {
    nlohmann::json window;
    uint64_t arrival = 0;
    bool shown = false;
  };
  struct Session {
    uint64_t id = 0;
    std::string command;
    pid_t pid = 0;
    std::string words;
    nlohmann::json start;
    std::deque<Window> windows;
    uint64_t windows_dropped = 0;
    std::deque<nlohmann::json> changes;
    // watch: its writes (records of watch_update events), whether each was
    // shown; --stop-when's stop, once.
    std::deque<std::pair<nlohmann::json, bool>> writes;
    uint64_t writes_dropped = 0;
    uint64_t armed_ns = 0;
    nlohmann::json watch_stop;
    bool watch_stop_shown = true;
    nlohmann::json document;
    bool document_shown = true;
    std::vector<std::string> warnings;
    bool ended = false;
    nlohmann::json end;  // the session_ended event
    bool end_shown = false;
    bool end_reported = false;
  };

  Session& session(uint64_t id);
  void keep_window(Session& session, nlohmann::json window);
  void take_watch_update(Session& session, const nlohmann::json& event);
  // A watch's lines of a show (watch_display.cpp).
  void show_watch(Session& session, const Selection& selection, render::Names& names, Shown& shown);
  // A profile's lines of a show once it ended: the capture's summary and its
  // hottest functions (profile_display.cpp); the addresses they name.
  void show_profile(Session& session, const Selection& selection, render::Names& names, Shown& shown);
  static std::vector<uint64_t> profile_addresses(const Session& session, const Selection& selection);
  void forget_old();
  template <typename Visit>
  void each_selected(const Selection& selection, Visit visit);

  std::mutex mutex_;
  std::map<uint64_t, Session> sessions_;
  uint64_t arrivals_ = 0;
  StopClock stops_;
};

}  // namespace xref::serve
