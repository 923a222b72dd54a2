// What the plugin keeps per debugger: the helper (started on first use), the
// sessions it started with their windows, and what is still to be shown.
// Every member is used under lock(). Besides the commands, only the process
// watcher thread takes the lock (never the helper's reader thread, which a
// command holding the lock may be waiting for), and it calls no LLDB API
// while it holds it: LLDB holds its own API lock around commands, stop hooks
// included, and a stop hook takes this lock.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helper_client.h"
#include "stop_listener.h"

namespace xref::lldb_plugin {

using Lines = std::vector<std::string>;

// New windows printed at one stop; `xref show` prints the rest.
inline constexpr size_t kWindowsPerStop = 20;

struct NewText;

struct WindowRecord {
  nlohmann::json window;
  uint64_t arrival = 0;  // order of arrival over all sessions
  bool shown = false;
};

struct SessionRecord {
  uint64_t id = 0;
  std::string command = "trace";  // or "probe"
  std::string words;  // "trace --here", for listings
  lldb::SBTarget target;
  uint64_t pid = 0;
  std::string backend;
  uint64_t probes = 0;
  std::vector<uint32_t> disabled_breakpoints;  // re-enabled when the session ends
  int32_t stop_at_end_breakpoint = 0;          // --stop-at-end's one-shot breakpoint, 0 if none
  std::optional<uint64_t> here_window;         // --here: the window opened on the stopped thread
  uint64_t here_tid = 0;
  uint64_t here_cfa = 0;
  bool here_window_seen = false;
  bool ended = false;
  std::string stop_reason;
  nlohmann::json summary;
  nlohmann::json error;
  bool end_shown = false;
  std::vector<WindowRecord> windows;
  uint64_t windows_dropped = 0;  // oldest shown windows forgotten beyond the bound
  // A probe session: its addresses as the start answered them, its result
  // as of the last drain (the final one once ended), and what changed up to
  // that drain, null once shown.
  nlohmann::json probe_addresses;
  nlohmann::json document;
  nlohmann::json changes;
  // Every live address where it has a uprobe (the start answer's
  // probe_sites): a breakpoint there is released (breakpoint_guard.h).
  std::set<uint64_t> probe_sites;
};

// What a session's end undoes in LLDB: breakpoints it disabled come back,
// its --stop-at-end breakpoint goes. Applied outside the state's lock on
// the watcher thread.
struct BreakpointRestore {
  lldb::SBTarget target;
  uint64_t session = 0;
  std::vector<uint32_t> enable;
  int32_t remove = 0;
};

// Applies the restores and says which breakpoints came back.
void apply_restores(std::vector<BreakpointRestore> restores, Lines& lines);

class PluginState {
 public:
  static std::shared_ptr<PluginState> of(lldb::SBDebugger debugger);
  // The debugger is going away: stop the helper (it detaches everything).
  static void forget(lldb::user_id_t debugger_id);

  explicit PluginState(lldb::SBDebugger debugger) : debugger_(debugger) {}
  PluginState(const PluginState&) = delete;
  PluginState& operator=(const PluginState&) = delete;

  std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }

  // The running helper, started (with its handshake) on first use; null
  // with `error` set when it cannot start.
  HelperClient* helper(std::string& error);
  // The helper if one runs, without starting one.
  HelperClient* running_helper();
  // The command that starts the helper: `xref helper ...`, else XREF_HELPER,
  // else the default next to the plugin.
  HelperCommand helper_command() const;
  // Replaces the command; a running helper without sessions is stopped.
  bool set_helper_command(std::optional<HelperCommand> command, std::string& error);
  bool helper_command_configured() const { return configured_command_.has_value(); }

  // Moves the helper's events into the sessions, notices its death (ending
  // its sessions), applies the breakpoint restores of ended sessions, and
  // appends what the user should read to `lines`. On a command's thread.
  void absorb(Lines& lines);

  // Marks a session ended and queues its breakpoint restore (no LLDB calls).
  void end_session(SessionRecord& session, const std::string& reason);
  void apply_pending_restores(Lines& lines);

  // At a stop, while sessions run: waits a few of the helper's drain
  // intervals for the windows that closed before the stop, and up to a
  // second for a --here window whose frame is gone from its thread's stack.
  void await_pending_windows(Lines& lines);

  std::map<uint64_t, SessionRecord>& sessions() { return sessions_; }
  SessionRecord* find_session(uint64_t id);
  SessionRecord& add_session(uint64_t id);

  // Windows not yet shown, oldest first.
  std::vector<std::pair<SessionRecord*, WindowRecord*>> unshown_windows(std::optional<uint64_t> session);

  // Adds the stop hook that prints new windows when the process stops,
  // once per target.
  void ensure_stop_hook(lldb::SBTarget target);

  // Watches a session's process: when it exits there is no stop to print
  // at, so the windows of its sessions not shown yet are printed then.
  void watch_process(uint64_t pid);

  // Catches every stop and resume of a session's process (stop_listener.h):
  // a stop the stop hook did not print (an interrupt) prints what is new.
  void watch_stops(lldb::SBProcess process);
  // The stop hook ran at the process's current stop (on a command's thread).
  void stop_hook_ran(lldb::SBProcess process);

  // What is new since it was last shown, taken out of the sessions (marked
  // shown): of the sessions of `pid` (all when nullopt), at most
  // `window_limit` windows, probe changes when asked. No LLDB calls.
  NewText claim_new_text(std::optional<uint64_t> pid, size_t window_limit, bool probe_changes);

  // Is the session's process gone (exited, killed, detached)?
  bool process_gone(const SessionRecord& session);

  lldb::SBDebugger debugger() { return debugger_; }

  void shutdown();

 private:
  void absorb_events(Lines& lines);
  void record_window(SessionRecord& session, nlohmann::json window);
  void watch_loop();
  void announce_exit(uint64_t pid);
  // On the stop listener's thread.
  void on_stopped(lldb::SBProcess process);
  void on_resumed(lldb::SBProcess process);

  lldb::SBDebugger debugger_;
  std::mutex mutex_;
  std::optional<HelperCommand> configured_command_;
  std::unique_ptr<HelperClient> helper_;
  std::map<uint64_t, SessionRecord> sessions_;
  std::vector<lldb::SBTarget> hooked_targets_;
  uint64_t arrivals_ = 0;
  Lines pending_lines_;  // absorbed in the background, shown by the next command
  std::vector<BreakpointRestore> pending_restores_;

  std::thread watcher_;
  int wake_fd_ = -1;                 // eventfd: the watched set changed, or shutdown
  std::map<uint64_t, int> watched_;  // pid -> pidfd
  bool stopping_ = false;

  std::unique_ptr<StopListener> stop_listener_;
  std::map<uint64_t, uint32_t> hooked_stops_;  // pid -> the natural stop id the stop hook last ran at
};

// Renders a session's windows that were not shown yet (all when `all`) and,
// once, the line saying it ended; marks them shown.
void show_session_windows(PluginState& state, SessionRecord& session, bool all, Lines& lines);

// "xref: session 1 ended (max_windows): 1 window (1 complete), 18 events, lost 0"
// (a probe session's: probe_end_line).
std::string session_end_line(const SessionRecord& session);

// A probe session's changes since the last stop, once (all: its whole
// result so far instead).
void show_probe_session(SessionRecord& session, bool all, Lines& lines);

}  // namespace xref::lldb_plugin
