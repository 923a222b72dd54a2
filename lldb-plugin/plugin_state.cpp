#include "plugin_state.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "hex.h"
#include "lldb_symbols.h"
#include "new_text.h"
#include "probe_render.h"
#include "stop_signal.h"
#include "window_render.h"

namespace xref::lldb_plugin {
namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(20);
constexpr auto kExitWait = std::chrono::milliseconds(1000);
// A bound for a helper that stopped answering, not a wait: drain is answered
// within one poll of each session.
constexpr auto kDrainTimeout = std::chrono::seconds(10);
// A bound for a detach that never finishes, not a wait: an ending session
// sends session_ended as soon as its probes are out (perf uprobes: about
// 100 ms per probe on this kind of kernel).
constexpr auto kSessionEndTimeout = std::chrono::seconds(60);
constexpr size_t kKeptWindowsPerSession = 1000;

std::mutex registry_mutex;
std::map<lldb::user_id_t, std::shared_ptr<PluginState>>& registry() {
  static auto* states = new std::map<lldb::user_id_t, std::shared_ptr<PluginState>>();
  return *states;
}

std::string plural(uint64_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

std::string join_ids(const std::vector<uint32_t>& ids) {
  std::string text;
  for (uint32_t id : ids) text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

void write_to_debugger(lldb::SBDebugger debugger, const Lines& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  lldb::SBFile out = debugger.GetOutputFile();
  size_t written = 0;
  out.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &written);
  out.Flush();
}

}  // namespace

std::shared_ptr<PluginState> PluginState::of(lldb::SBDebugger debugger) {
  std::lock_guard lock(registry_mutex);
  auto& state = registry()[debugger.GetID()];
  if (!state) state = std::make_shared<PluginState>(debugger);
  return state;
}

void PluginState::forget(lldb::user_id_t debugger_id) {
  std::shared_ptr<PluginState> state;
  {
    std::lock_guard lock(registry_mutex);
    auto found = registry().find(debugger_id);
    if (found == registry().end()) return;
    state = found->second;
    registry().erase(found);
  }
  state->shutdown();
}

void PluginState::shutdown() {
  {
    auto held = lock();
    stopping_ = true;
    if (wake_fd_ >= 0) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t ignored = write(wake_fd_, &one, sizeof one);
    }
  }
  if (watcher_.joinable()) watcher_.join();
  // Without the lock: a stop being printed takes it.
  if (stop_listener_) stop_listener_->stop();
  auto held = lock();
  for (const auto& [pid, pidfd] : watched_) close(pidfd);
  watched_.clear();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
  if (!helper_) return;
  // Closing its stdin makes the helper stop every session and detach; the
  // sessions end with their last windows, printed here as nothing else will.
  helper_->close(std::chrono::milliseconds(3000));
  Lines lines;
  absorb_events(lines);
  apply_pending_restores(lines);
  for (auto& [id, session] : sessions_) show_session_windows(*this, session, false, lines);
  if (!lines.empty()) write_to_debugger(debugger_, lines);
  helper_.reset();
}

HelperCommand PluginState::helper_command() const {
  if (configured_command_) return *configured_command_;
  if (const char* text = std::getenv("XREF_HELPER"); text != nullptr && *text != '\0') {
    if (auto words = split_command_line(text); words && !words->empty()) return {*words};
  }
  return default_helper_command(plugin_library_path());
}

bool PluginState::set_helper_command(std::optional<HelperCommand> command, std::string& error) {
  if (helper_ && helper_->alive()) {
    for (const auto& [id, session] : sessions_) {
      if (!session.ended) {
        error = "session " + std::to_string(id) + " is running in the current helper: `xref stop --all` first";
        return false;
      }
    }
    helper_->close(std::chrono::milliseconds(3000));
  }
  helper_.reset();
  configured_command_ = std::move(command);
  return true;
}

HelperClient* PluginState::running_helper() { return helper_ && helper_->alive() ? helper_.get() : nullptr; }

HelperClient* PluginState::helper(std::string& error) {
  if (helper_ && helper_->alive()) return helper_.get();
  if (helper_) {
    Lines lines;
    absorb(lines);  // reports the death, ends its sessions
    pending_lines_.insert(pending_lines_.end(), lines.begin(), lines.end());
  }
  const HelperCommand command = helper_command();
  helper_ = HelperClient::start(command, "xref-lldb 0.1.0", kHandshakeTimeout, error);
  if (!helper_) {
    error = "xref: " + error;
    return nullptr;
  }
  return helper_.get();
}

SessionRecord* PluginState::find_session(uint64_t id) {
  auto found = sessions_.find(id);
  return found == sessions_.end() ? nullptr : &found->second;
}

SessionRecord& PluginState::add_session(uint64_t id) {
  SessionRecord& session = sessions_[id];
  session.id = id;
  return session;
}

void PluginState::record_window(SessionRecord& session, nlohmann::json window) {
  if (session.here_window && window.value("window_id", uint64_t{0}) == *session.here_window) {
    session.here_window_seen = true;
  }
  session.windows.push_back({std::move(window), ++arrivals_, false});
  if (session.windows.size() > kKeptWindowsPerSession) {
    auto oldest_shown = std::find_if(session.windows.begin(), session.windows.end(),
                                     [](const WindowRecord& record) { return record.shown; });
    session.windows.erase(oldest_shown != session.windows.end() ? oldest_shown : session.windows.begin());
    ++session.windows_dropped;
  }
}

void PluginState::absorb_events(Lines& lines) {
  if (!helper_) return;
  for (HelperEvent& event : helper_->take_events()) {
    SessionRecord* session = find_session(event.session);
    if (session == nullptr) session = &add_session(event.session);
    if (event.name == "window" && event.body.contains("window")) {
      record_window(*session, std::move(event.body["window"]));
    } else if (event.name == "probe_update") {
      // Heartbeats carry only counts; a drain's update, what changed.
      if (event.body.contains("changes")) {
        session->changes = std::move(event.body["changes"]);
        session->document = std::move(event.body["document"]);
      }
    } else if (event.name == "warning") {
      lines.push_back("xref: session " + std::to_string(event.session) + ": warning: " +
                      event.body.value("message", std::string()));
    } else if (event.name == "session_ended") {
      for (auto& window : event.body.value("windows", nlohmann::json::array())) record_window(*session, window);
      if (event.body.contains("document") && event.body["document"].is_object()) {
        session->document = std::move(event.body["document"]);
      }
      session->summary = event.body.value("summary", nlohmann::json::object());
      session->error = event.body.value("error", nlohmann::json());
      end_session(*session, event.body.value("stop_reason", std::string("stopped")));
    }
  }
  for (auto& line : helper_->take_stderr()) lines.push_back("xref: helper: " + line);
}

void PluginState::absorb(Lines& lines) {
  lines.insert(lines.begin(), pending_lines_.begin(), pending_lines_.end());
  pending_lines_.clear();
  absorb_events(lines);
  if (!helper_ || helper_->alive()) {
    apply_pending_restores(lines);
    return;
  }
  // The helper died: say so once, end its sessions, forget it (the next
  // command that needs one starts a new helper).
  std::string line = "xref: the helper '" + helper_->command().display() + "' (pid " + std::to_string(helper_->pid()) +
                     ") " + helper_->ending();
  std::vector<uint64_t> ended;
  for (auto& [id, session] : sessions_) {
    if (session.ended) continue;
    ended.push_back(id);
    end_session(session, "helper_exited");
    session.end_shown = true;  // said in the line below
  }
  if (!ended.empty()) {
    std::string ids;
    for (uint64_t id : ended) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    line += "; its probes are gone and session" + std::string(ended.size() == 1 ? " " : "s ") + ids + " ended";
  }
  const auto last_words = helper_->recent_stderr();
  if (!last_words.empty()) line += "; its last message: " + last_words.back();
  lines.push_back(line);
  apply_pending_restores(lines);
  lines.push_back("xref: the process is untouched; the next xref command starts a new helper");
  helper_.reset();
}

void PluginState::end_session(SessionRecord& session, const std::string& reason) {
  if (session.ended) return;
  session.ended = true;
  session.stop_reason = reason;
  stop_signal_session_ended(session.id);
  BreakpointRestore restore{session.target, session.id, std::move(session.disabled_breakpoints),
                            session.stop_at_end_breakpoint};
  session.disabled_breakpoints.clear();
  session.stop_at_end_breakpoint = 0;
  if (!restore.enable.empty() || restore.remove != 0) pending_restores_.push_back(std::move(restore));
}

void apply_restores(std::vector<BreakpointRestore> restores, Lines& lines) {
  for (BreakpointRestore& restore : restores) {
    std::vector<uint32_t> enabled;
    for (uint32_t id : restore.enable) {
      lldb::SBBreakpoint breakpoint = restore.target.FindBreakpointByID(static_cast<lldb::break_id_t>(id));
      if (!breakpoint.IsValid()) continue;
      breakpoint.SetEnabled(true);
      enabled.push_back(id);
    }
    if (!enabled.empty()) {
      lines.push_back("xref: breakpoint" + std::string(enabled.size() == 1 ? " " : "s ") + join_ids(enabled) +
                      " re-enabled: session " + std::to_string(restore.session) + " ended");
    }
    // --stop-at-end's breakpoint is still there when the window did not end
    // by returning to it.
    if (restore.remove != 0 && restore.target.FindBreakpointByID(restore.remove).IsValid()) {
      restore.target.BreakpointDelete(restore.remove);
    }
  }
}

void PluginState::apply_pending_restores(Lines& lines) {
  restore_stop_signals(lines);
  std::vector<BreakpointRestore> restores = std::move(pending_restores_);
  pending_restores_.clear();
  apply_restores(std::move(restores), lines);
}

void PluginState::await_pending_windows(Lines& lines) {
  if (!helper_) return;
  bool running = false;
  for (const auto& [id, session] : sessions_) running |= !session.ended;
  if (!running) return;
  // What the probes recorded before the stop is in the helper's ring
  // buffers; `drain` answers once every session has sent the windows that
  // closed so far, and the events come before the answer.
  const HelperReply reply = helper_->request("drain", nlohmann::json::object(), kDrainTimeout);
  if (!reply.ok && helper_->alive()) lines.push_back("xref: the helper did not drain its sessions: " + reply.message);
  absorb_events(lines);
  // Sessions that reached their bound only detach now: wait for their end,
  // so this stop already shows it (and a --start bp:N breakpoint is back).
  if (!reply.ok) return;
  for (const auto& id : reply.result.value("ending", nlohmann::json::array())) {
    const auto deadline = std::chrono::steady_clock::now() + kSessionEndTimeout;
    SessionRecord* session = find_session(id.get<uint64_t>());
    while (session != nullptr && !session->ended && helper_->alive() && std::chrono::steady_clock::now() < deadline) {
      helper_->wait_for_event(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
      absorb_events(lines);
      session = find_session(id.get<uint64_t>());
    }
  }
}

std::vector<std::pair<SessionRecord*, WindowRecord*>> PluginState::unshown_windows(std::optional<uint64_t> only) {
  std::vector<std::pair<SessionRecord*, WindowRecord*>> windows;
  for (auto& [id, session] : sessions_) {
    if (only && id != *only) continue;
    for (auto& record : session.windows) {
      if (!record.shown) windows.emplace_back(&session, &record);
    }
  }
  std::sort(windows.begin(), windows.end(),
            [](const auto& a, const auto& b) { return a.second->arrival < b.second->arrival; });
  return windows;
}

void PluginState::ensure_stop_hook(lldb::SBTarget target) {
  for (const auto& hooked : hooked_targets_) {
    if (hooked == target) return;
  }
  lldb::SBCommandReturnObject ignored;
  // `target stop-hook add` applies to the selected target, which is the one
  // the trace command ran in.
  debugger_.GetCommandInterpreter().HandleCommand("target stop-hook add --one-liner \"xref show --new\"", ignored);
  if (ignored.Succeeded()) hooked_targets_.push_back(target);
}

void PluginState::watch_process(uint64_t pid) {
  if (pid == 0 || watched_.count(pid)) return;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd < 0) return;  // already gone, or an old kernel: the next command prints instead
  fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  watched_[pid] = pidfd;
  if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!watcher_.joinable()) watcher_ = std::thread([this] { watch_loop(); });
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = write(wake_fd_, &one, sizeof one);
}

void PluginState::watch_loop() {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<uint64_t> pids;
    {
      auto held = lock();
      if (stopping_) return;
      fds.push_back({wake_fd_, POLLIN, 0});
      for (const auto& [pid, pidfd] : watched_) {
        fds.push_back({pidfd, POLLIN, 0});
        pids.push_back(pid);
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      uint64_t count;
      [[maybe_unused]] ssize_t ignored = read(wake_fd_, &count, sizeof count);
    }
    for (size_t index = 1; index < fds.size(); ++index) {
      if (fds[index].revents == 0) continue;
      {
        auto held = lock();
        close(watched_[pids[index - 1]]);
        watched_.erase(pids[index - 1]);
      }
      announce_exit(pids[index - 1]);
    }
  }
}

void PluginState::announce_exit(uint64_t pid) {
  // The helper notices the exit too and ends the sessions (target_exited),
  // with their last windows: give it a moment.
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  Lines lines;
  NewText text;
  for (;;) {
    {
      auto held = lock();
      absorb_events(lines);
      bool all_ended = true;
      for (const auto& [id, session] : sessions_) all_ended &= session.pid != pid || session.ended;
      if (all_ended || stopping_ || std::chrono::steady_clock::now() >= deadline) {
        // Claimed under the lock, rendered after it: LLDB's API lock may be
        // held by a command whose stop hook waits for this lock.
        text = claim_new_text(pid, SIZE_MAX, false);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  text.lines.insert(text.lines.begin(), lines.begin(), lines.end());
  // Straight to the output: lldb may be about to quit (the end of a batch),
  // before its event thread would print.
  const Lines rendered = render_new_text(std::move(text));
  if (!rendered.empty()) write_to_debugger(debugger_, rendered);
}

void PluginState::watch_stops(lldb::SBProcess process) {
  if (!stop_listener_) {
    stop_listener_ = std::make_unique<StopListener>(
        StopListener::Handlers{[this](lldb::SBProcess stopped) { on_stopped(stopped); },
                               [this](lldb::SBProcess resumed) { on_resumed(resumed); }});
  }
  stop_listener_->watch(process);
}

void PluginState::stop_hook_ran(lldb::SBProcess process) {
  if (process.IsValid()) hooked_stops_[process.GetProcessID()] = process.GetStopID(false);
}

void PluginState::on_stopped(lldb::SBProcess process) {
  // Read before the lock (no LLDB calls under it). The stop hook of this
  // stop, if LLDB ran one, has finished: the event comes here after it.
  const uint64_t pid = process.GetProcessID();
  const uint32_t stop = process.GetStopID(false);
  NewText text;
  {
    auto held = lock();
    if (stopping_) return;
    auto hooked = hooked_stops_.find(pid);
    if (hooked != hooked_stops_.end() && hooked->second == stop) return;  // printed by the stop hook
    hooked_stops_[pid] = stop;
    Lines lines;
    await_pending_windows(lines);
    text = claim_new_text(std::nullopt, kWindowsPerStop, true);
    text.lines.insert(text.lines.begin(), lines.begin(), lines.end());
  }
  print_async(debugger_, render_new_text(std::move(text)));
}

void PluginState::on_resumed(lldb::SBProcess process) {
  // The process runs again: the place to tell the helper (a `resumed`
  // request), so that a window's time can leave out the time the process
  // sat stopped at the prompt. Nothing to do yet.
  (void)process;
}

bool PluginState::process_gone(const SessionRecord& session) {
  lldb::SBTarget target = session.target;
  lldb::SBProcess process = target.GetProcess();
  if (!process.IsValid() || process.GetProcessID() != session.pid) return true;
  const lldb::StateType state = process.GetState();
  return state == lldb::eStateExited || state == lldb::eStateDetached || state == lldb::eStateInvalid ||
         state == lldb::eStateUnloaded;
}

std::string session_end_line(const SessionRecord& session) {
  if (session.command == "probe") return probe_end_line(session.id, session.stop_reason, session.summary, session.error);
  std::string line = "xref: session " + std::to_string(session.id) + " ended (" + session.stop_reason + ")";
  const nlohmann::json& summary = session.summary;
  if (summary.is_object() && !summary.empty()) {
    line += ": " + plural(summary.value("windows", uint64_t{0}), "window") + " (" +
            std::to_string(summary.value("complete_windows", uint64_t{0})) + " complete), " +
            plural(summary.value("events", uint64_t{0}), "event") + ", lost ";
    const auto lost = summary.find("lost");
    line += lost != summary.end() && lost->is_number_unsigned() ? std::to_string(lost->get<uint64_t>()) : "?";
  }
  if (session.error.is_object() && session.error.contains("message")) {
    line += "; " + session.error.value("message", std::string());
  }
  return line;
}

void show_probe_session(SessionRecord& session, bool all, Lines& lines) {
  LldbSymbols symbols(session.target);
  std::vector<std::string> shown;
  if (all && session.document.is_object()) {
    const std::string state = session.ended ? "ended " + session.stop_reason : "running";
    shown = render_probe_document(session.document, session.probe_addresses, session.id, state, symbols);
  } else if (!all && session.changes.is_object()) {
    shown = render_probe_changes(session.changes, session.probe_addresses, session.id, symbols);
  }
  session.changes = nullptr;
  for (auto& line : shown) lines.push_back(std::move(line));
}

void show_session_windows(PluginState& state, SessionRecord& session, bool all, Lines& lines) {
  if (session.command == "probe") show_probe_session(session, all, lines);
  LldbSymbols symbols(session.target);
  for (auto& record : session.windows) {
    if (record.shown && !all) continue;
    for (auto& line : render_window(record.window, session.id, symbols)) lines.push_back(std::move(line));
    record.shown = true;
  }
  if (session.ended && (!session.end_shown || all)) {
    lines.push_back(session_end_line(session));
    session.end_shown = true;
  }
  (void)state;
}

}  // namespace xref::lldb_plugin
