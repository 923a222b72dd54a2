// What the plugin keeps per debugger: the helper (started on first use) and,
// per session, only what LLDB did for it (breakpoints it turned off, the
// --stop-at-end breakpoint, the stop signal, its probe sites). Everything a
// user reads comes from the helper (`run`, docs/protocol.md, "Protocol 2"):
// this file asks, does what the answer says LLDB must do, and returns the
// lines to print.
//
// Every member is used under lock(): by the `xref` command, the stop hook,
// the resume guard (breakpoint_guard.h) and the stop listener's thread
// (stop_listener.h), which runs the same show at a stop LLDB ran no hook for.
#pragma once

#include <lldb/API/LLDB.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "helper_client.h"
#include "stop_listener.h"

namespace xref::lldb_plugin {

using Lines = std::vector<std::string>;

inline constexpr auto kSessionTimeout = std::chrono::seconds(300);  // attaching/detaching many probes
inline constexpr auto kQuickTimeout = std::chrono::seconds(30);

// What LLDB did for one session, undone when it ends.
struct SessionRecord {
  uint64_t id = 0;
  lldb::SBTarget target;
  uint64_t pid = 0;
  std::set<uint64_t> probe_sites;               // live addresses of its uprobes (breakpoint_guard.h)
  std::vector<lldb::break_id_t> disabled;       // back on when it ends
  lldb::break_id_t stop_at_end = 0;             // deleted when it ends
  bool catches_signal = false;                  // --stop-when (stop_signal.h)
  bool ended = false;
};

// The line to print for a failure, or nothing.
using Failure = std::optional<std::string>;

class Frontend {
 public:
  static std::shared_ptr<Frontend> of(lldb::SBDebugger debugger);
  // The debugger is going away: every session stops and prints what it found last.
  static void forget(lldb::user_id_t debugger_id);

  explicit Frontend(lldb::SBDebugger debugger) : debugger_(debugger) {}
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }

  // `xref WORDS...`: sends `run`, names the addresses the helper asks LLDB
  // to name, prepares what it asks LLDB to prepare, appends its text, and
  // does what the answer says LLDB must do. `extra` goes into the request.
  Failure run(const std::vector<std::string>& words, nlohmann::json extra, Lines& lines,
              std::chrono::milliseconds timeout = kSessionTimeout, nlohmann::json* answer = nullptr);

  // `xref helper ...`.
  void helper_command(const std::vector<std::string>& words, Lines& lines, Failure& failure);

  // At a stop (the stop hook, or the listener for one it did not see): what
  // the sessions found since the last one.
  void at_stop(Lines& lines);
  // The stop hook ran at the process's current stop: the listener leaves it.
  void stop_hook_ran(lldb::SBProcess process);

  HelperClient* running_helper();
  // Lends the running helper to `use`, else one started for it and closed
  // after (the next command starts the one it keeps: `xref helper` can still
  // change which). The Tab-completion shim's table (completion_shim.h).
  Failure with_helper(const std::function<void(HelperClient&)>& use);
  std::map<uint64_t, SessionRecord>& sessions() { return sessions_; }
  // Marks a session ended: its breakpoints come back at apply_restores.
  void end_session(uint64_t id);
  // Breakpoints of ended sessions back, --stop-at-end's gone, signals released.
  void apply_restores(Lines& lines);

 private:
  HelperClient* helper(Lines& lines, Failure& failure);
  HelperCommand configured_or_default(std::string& source) const;
  // A helper started with the configured command (not yet this front end's).
  std::unique_ptr<HelperClient> start_client(std::string& error) const;
  void helper_died(Lines& lines);
  Failure request(const std::string& method, const nlohmann::json& params, std::chrono::milliseconds timeout,
                  Lines& lines, HelperReply& reply);
  Failure name(const nlohmann::json& needed, Lines& lines);
  Failure after(const nlohmann::json& result, Lines& lines);
  void started(const nlohmann::json& session, lldb::SBTarget target);
  // A session's process exited: the helper ends its sessions (target_exited)
  // a moment later, with their last windows; wait for that.
  void await_exits(Lines& lines);
  void watch(lldb::SBTarget target);
  // On the stop listener's thread.
  void on_stopped(lldb::SBProcess process);
  void on_resumed(lldb::SBProcess process);
  void on_exited(lldb::SBProcess process);
  void shutdown();

  lldb::SBDebugger debugger_;
  std::mutex mutex_;
  std::optional<HelperCommand> configured_command_;
  std::unique_ptr<HelperClient> helper_;
  std::map<uint64_t, SessionRecord> sessions_;
  std::vector<SessionRecord> pending_restores_;
  std::vector<lldb::SBTarget> hooked_targets_;
  std::map<uint64_t, uint32_t> hooked_stops_;  // pid -> the stop id the stop hook last ran at
  // pid -> (stop id, CLOCK_MONOTONIC ns) of the stop the process sits in
  std::map<uint64_t, std::pair<uint32_t, uint64_t>> stopped_since_;
  std::unique_ptr<StopListener> stop_listener_;
  std::set<uint64_t> awaited_;  // pids whose exit await_exits waited for
  bool stopping_ = false;
};

// Writes lines to the debugger's output at once (no command is printing them).
void write_lines(lldb::SBDebugger debugger, const Lines& lines);

}  // namespace xref::lldb_plugin
