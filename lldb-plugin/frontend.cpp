#include "frontend.h"

#include <cstdlib>
#include <thread>

#include "debugger_context.h"
#include "lldb_symbols.h"
#include "monotonic_clock.h"  // the clock of the BPF timestamps
#include "preparation.h"
#include "stop_signal.h"

namespace xref::lldb_plugin {
namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(20);
constexpr auto kExitWait = std::chrono::seconds(2);
constexpr int kNameRounds = 3;  // a text that still lacks names after this is printed with the helper's own

std::mutex registry_mutex;
std::map<lldb::user_id_t, std::shared_ptr<Frontend>>& registry() {
  static auto* frontends = new std::map<lldb::user_id_t, std::shared_ptr<Frontend>>();
  return *frontends;
}

uint64_t live_of(const nlohmann::json& value) {
  try {
    return value.is_string() ? std::stoull(value.get<std::string>(), nullptr, 16) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

void write_lines(lldb::SBDebugger debugger, const Lines& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  if (text.empty()) return;
  lldb::SBFile out = debugger.GetOutputFile();
  size_t written = 0;
  out.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &written);
  out.Flush();
}

std::shared_ptr<Frontend> Frontend::of(lldb::SBDebugger debugger) {
  std::lock_guard lock(registry_mutex);
  auto& frontend = registry()[debugger.GetID()];
  if (!frontend) frontend = std::make_shared<Frontend>(debugger);
  return frontend;
}

void Frontend::forget(lldb::user_id_t debugger_id) {
  std::shared_ptr<Frontend> frontend;
  {
    std::lock_guard lock(registry_mutex);
    auto found = registry().find(debugger_id);
    if (found == registry().end()) return;
    frontend = found->second;
    registry().erase(found);
  }
  frontend->shutdown();
}

void Frontend::shutdown() {
  // Without the lock: a stop being printed takes it.
  if (stop_listener_) stop_listener_->stop();
  auto held = lock();
  stopping_ = true;
  if (!running_helper()) return;
  Lines lines;
  // Sessions whose process exited: their ends first (and they need no stop).
  await_exits(lines);
  bool running = false;
  for (const auto& [id, session] : sessions_) running |= !session.ended;
  if (running) {
    // A session that ended on its own just now, before this front end heard
    // of it, leaves nothing to stop ("ended" empty): nobody asked, so nothing
    // is said.
    Lines stopped;
    nlohmann::json answer;
    run({"stop", "--all"}, {{"names", "helper"}}, stopped, std::chrono::seconds(10), &answer);
    const auto ended = answer.find("ended");
    if (ended == answer.end() || !ended->is_array() || !ended->empty()) lines.insert(lines.end(), stopped.begin(), stopped.end());
  }
  // Closing its stdin makes the helper stop anything left and detach.
  helper_->close(std::chrono::milliseconds(3000));
  helper_.reset();
  write_lines(debugger_, lines);
}

// The helper.

HelperCommand Frontend::configured_or_default(std::string& source) const {
  if (configured_command_) return *configured_command_;
  if (const char* text = std::getenv("XREF_HELPER"); text != nullptr && *text != '\0') {
    if (auto words = split_command_line(text); words && !words->empty()) {
      source = " (from XREF_HELPER)";
      return {*words};
    }
  }
  source = " (default)";
  return default_helper_command(plugin_library_path());
}

HelperClient* Frontend::running_helper() { return helper_ && helper_->alive() ? helper_.get() : nullptr; }

HelperClient* Frontend::helper(Lines& lines, Failure& failure) {
  if (running_helper()) return helper_.get();
  if (helper_) helper_died(lines);
  std::string error;
  helper_ = start_client(error);
  if (!helper_) {
    failure = "xref: " + error;
    return nullptr;
  }
  // A notification (a trace's --heartbeat-ms) prints as it comes while the
  // process runs, as LLDB prints its own asynchronous output; at the prompt
  // it is left out: the stop just printed what the sessions found.
  helper_->set_event_handler([debugger = debugger_](const nlohmann::json& event) {
    lldb::SBProcess process = lldb::SBDebugger(debugger).GetSelectedTarget().GetProcess();
    if (!process.IsValid() || process.GetState() != lldb::eStateRunning) return;
    Lines text;
    for (const nlohmann::json& line : event.value("text", nlohmann::json::array())) {
      if (line.is_string()) text.push_back(line.get<std::string>());
    }
    if (!text.empty()) print_async(debugger, text);
  });
  return helper_.get();
}

std::unique_ptr<HelperClient> Frontend::start_client(std::string& error) const {
  std::string source;
  return HelperClient::start(configured_or_default(source), "xref-lldb 0.2.0", kHandshakeTimeout, error);
}

Failure Frontend::with_helper(const std::function<void(HelperClient&)>& use) {
  if (HelperClient* running = running_helper()) {
    use(*running);
    return std::nullopt;
  }
  std::string error;
  auto lent = start_client(error);
  if (!lent) return "xref: " + error;
  use(*lent);
  lent->close(std::chrono::milliseconds(3000));
  return std::nullopt;
}

void Frontend::helper_died(Lines& lines) {
  std::string line = "xref: the helper '" + helper_->command().display() + "' (pid " + std::to_string(helper_->pid()) +
                     ") " + helper_->ending();
  std::string ended;
  size_t count = 0;
  for (auto& [id, session] : sessions_) {
    if (session.ended) continue;
    ended += (ended.empty() ? "" : ", ") + std::to_string(id);
    ++count;
    end_session(id);
  }
  if (count > 0) line += "; its probes are gone and session" + std::string(count == 1 ? " " : "s ") + ended + " ended";
  const auto last_words = helper_->recent_stderr();
  if (!last_words.empty()) line += "; its last message: " + last_words.back();
  lines.push_back(line);
  apply_restores(lines);
  lines.push_back("xref: the process is untouched; the next xref command starts a new helper");
  helper_.reset();
}

void Frontend::helper_command(const std::vector<std::string>& words, Lines& lines, Failure& failure) {
  std::string source;
  if (words.empty()) {
    lines.push_back("xref: helper command: " + configured_or_default(source).display() + source);
    if (HelperClient* helper = running_helper()) {
      lines.push_back("xref: the helper runs as pid " + std::to_string(helper->pid()) + " (xref " +
                      helper->tool_version() + ")");
    } else {
      lines.push_back("xref: the helper is not running; the next xref command that needs it starts it");
    }
    return;
  }
  if (running_helper()) {
    for (const auto& [id, session] : sessions_) {
      if (session.ended) continue;
      failure = "xref: session " + std::to_string(id) + " is running in the current helper: `xref stop --all` first";
      return;
    }
    helper_->close(std::chrono::milliseconds(3000));
  }
  helper_.reset();
  configured_command_.reset();
  if (words != std::vector<std::string>{"--default"}) configured_command_ = HelperCommand{words};
  lines.push_back("xref: helper command: " + configured_or_default(source).display() +
                  " (starts at the next xref command that needs it)");
}

// Requests.

Failure Frontend::request(const std::string& method, const nlohmann::json& params, std::chrono::milliseconds timeout,
                          Lines& lines, HelperReply& reply) {
  Failure failure;
  HelperClient* client = helper(lines, failure);
  if (client == nullptr) return failure;
  reply = client->request(method, params, timeout);
  for (auto& line : client->take_stderr()) lines.push_back("xref: helper: " + line);
  if (!reply.ok && !client->alive()) {
    helper_died(lines);
    return "xref: " + reply.message;
  }
  return std::nullopt;
}

Failure Frontend::run(const std::vector<std::string>& words, nlohmann::json extra, Lines& lines,
                      std::chrono::milliseconds timeout, nlohmann::json* answer) {
  await_exits(lines);
  lldb::SBTarget target = debugger_.GetSelectedTarget();
  std::string ignored;
  nlohmann::json params = {{"argv", words}, {"context", request_context(target, here_frame(target, ignored))}};
  if (lldb::SBProcess process = target.GetProcess(); process.IsValid() && process.GetState() == lldb::eStateStopped) {
    // Since when the process sits at LLDB's prompt: window times leave it out.
    // (a stop this plugin saw begin; else from now: LLDB says not when it stopped)
    auto& since = stopped_since_[process.GetProcessID()];
    if (since.first != process.GetStopID(false) || since.second == 0) since = {process.GetStopID(false), monotonic_ns()};
    params["stopped_at_ns"] = since.second;
  }
  params.update(extra);
  std::optional<Preparation> preparation;
  HelperReply reply;
  for (int round = 0;; ++round) {
    if (round == kNameRounds + 2) params["names"] = "helper";
    if (auto failure = request("run", params, timeout, lines, reply)) return failure;
    if (!reply.ok) {
      std::string text = reply.error.value("text", "xref: " + reply.message);
      if (preparation) text = preparation->explain(text);
      if (preparation) preparation->undo(lines);
      return text;
    }
    if (reply.result.contains("names_needed") && round <= kNameRounds + 1) {
      if (auto failure = name(reply.result["names_needed"], lines)) return failure;
      if (reply.result.contains("next_argv")) {
        // A stop whose sessions ended: their text so far, the rest with `show`.
        for (const auto& line : reply.result.value("text", nlohmann::json::array())) lines.push_back(line);
        if (auto failure = after(reply.result, lines)) return failure;
        params["argv"] = reply.result["next_argv"];
      }
      params["named"] = true;  // a show renders what it drained, without draining again
      continue;
    }
    if (reply.result.contains("prepare") && !preparation) {
      preparation.emplace(target, reply.result["prepare"]);
      auto prepared = preparation->run(lines);
      if (auto* failure = std::get_if<std::string>(&prepared)) return *failure;
      params["prepared"] = std::get<nlohmann::json>(prepared);
      params["context"] = request_context(target, here_frame(target, ignored));  // with --stop-at-end's breakpoint
      continue;
    }
    break;
  }
  const nlohmann::json& result = reply.result;
  for (const auto& line : result.value("text", nlohmann::json::array())) lines.push_back(line);
  if (result.contains("session") && result["session"].is_object()) {
    started(result["session"], target);
    SessionRecord& session = sessions_[result["session"].value("id", uint64_t{0})];
    if (preparation) preparation->hand_over(session, result["session"].value("breakpoints_to_disable", nlohmann::json()));
  } else if (preparation) {
    preparation->undo(lines);
  }
  if (answer != nullptr) *answer = result;
  return after(result, lines);
}

void Frontend::started(const nlohmann::json& answer, lldb::SBTarget target) {
  SessionRecord& session = sessions_[answer.value("id", uint64_t{0})];
  session.id = answer.value("id", uint64_t{0});
  session.target = target;
  session.pid = answer.value("pid", uint64_t{0});
  for (const auto& live : answer.value("probe_sites", nlohmann::json::array())) {
    if (const uint64_t address = live_of(live)) session.probe_sites.insert(address);
  }
  watch(target);
}

Failure Frontend::name(const nlohmann::json& needed, Lines& lines) {
  for (const auto& entry : needed.is_array() ? needed : nlohmann::json::array()) {
    const uint64_t pid = entry.value("pid", uint64_t{0});
    lldb::SBTarget target = debugger_.FindTargetWithProcessID(static_cast<lldb::pid_t>(pid));
    nlohmann::json names = nlohmann::json::array();
    for (const auto& live : entry.value("addresses", nlohmann::json::array())) {
      names.push_back(name_of(target, live_of(live)));
    }
    HelperReply reply;
    if (auto failure = request("names", {{"pid", pid}, {"names", names}}, kQuickTimeout, lines, reply)) return failure;
  }
  return std::nullopt;
}

Failure Frontend::after(const nlohmann::json& result, Lines& lines) {
  for (const auto& ended : result.value("ended", nlohmann::json::array())) end_session(ended.value("session", uint64_t{0}));
  apply_restores(lines);
  const auto wanted = result.find("set_breakpoint");
  if (wanted == result.end() || !wanted->is_object()) return std::nullopt;
  const uint64_t address = live_of(wanted->value("address", nlohmann::json()));
  lldb::SBTarget target = debugger_.GetSelectedTarget();
  if (auto found = sessions_.find(wanted->value("session", uint64_t{0})); found != sessions_.end()) {
    target = found->second.target;
  }
  lldb::SBBreakpoint breakpoint = target.BreakpointCreateByAddress(address);
  if (!breakpoint.IsValid()) return "xref: LLDB could not set a breakpoint at " + wanted->value("address", std::string());
  for (const auto& line : result.value("text_after", nlohmann::json::array())) {
    std::string text = line;
    if (const size_t at = text.find("{number}"); at != std::string::npos) {
      text.replace(at, 8, std::to_string(breakpoint.GetID()));
    }
    lines.push_back(text);
  }
  return std::nullopt;
}

// Sessions ending.

void Frontend::end_session(uint64_t id) {
  auto found = sessions_.find(id);
  if (found == sessions_.end() || found->second.ended) return;
  SessionRecord& session = found->second;
  session.ended = true;
  if (session.catches_signal) stop_signal_session_ended(id);
  if (!session.disabled.empty() || session.stop_at_end != 0) pending_restores_.push_back(session);
}

void Frontend::apply_restores(Lines& lines) {
  restore_stop_signals(lines);
  std::vector<SessionRecord> restores = std::move(pending_restores_);
  pending_restores_.clear();
  for (SessionRecord& session : restores) {
    std::string enabled;
    size_t count = 0;
    for (lldb::break_id_t id : session.disabled) {
      lldb::SBBreakpoint breakpoint = session.target.FindBreakpointByID(id);
      if (!breakpoint.IsValid()) continue;
      breakpoint.SetEnabled(true);
      enabled += (enabled.empty() ? "" : ", ") + std::to_string(id);
      ++count;
    }
    if (count > 0) {
      lines.push_back("xref: breakpoint" + std::string(count == 1 ? " " : "s ") + enabled + " re-enabled: session " +
                      std::to_string(session.id) + " ended");
    }
    // --stop-at-end's is still there when the window did not end by returning to it.
    if (session.stop_at_end != 0 && session.target.FindBreakpointByID(session.stop_at_end).IsValid()) {
      session.target.BreakpointDelete(session.stop_at_end);
    }
  }
}

// Stops, resumes, exits.

void Frontend::watch(lldb::SBTarget target) {
  if (!stop_listener_) {
    stop_listener_ = std::make_unique<StopListener>(
        StopListener::Handlers{[this](lldb::SBProcess process) { on_stopped(process); },
                               [this](lldb::SBProcess process) { on_resumed(process); },
                               [this](lldb::SBProcess process) { on_exited(process); }});
  }
  stop_listener_->watch(target.GetProcess());
  for (const auto& hooked : hooked_targets_) {
    if (hooked == target) return;
  }
  // The stop hook prints in order, before the prompt; the listener catches
  // the stops LLDB runs no hook for (an interrupt). `target stop-hook add`
  // applies to the selected target, the one the session started in.
  lldb::SBCommandReturnObject ignored;
  debugger_.GetCommandInterpreter().HandleCommand("target stop-hook add --one-liner \"xref show --new\"", ignored);
  if (ignored.Succeeded()) hooked_targets_.push_back(target);
}

void Frontend::at_stop(Lines& lines) {
  if (!running_helper()) {
    if (helper_) helper_died(lines);
    return;
  }
  const nlohmann::json extra = {{"at_stop", true}};
  if (auto failure = run({"show"}, extra, lines, kQuickTimeout)) lines.push_back(*failure);
}

void Frontend::stop_hook_ran(lldb::SBProcess process) {
  if (process.IsValid()) hooked_stops_[process.GetProcessID()] = process.GetStopID(false);
}

void Frontend::on_stopped(lldb::SBProcess process) {
  const uint64_t at = monotonic_ns();
  const uint64_t pid = process.GetProcessID();
  const uint32_t stop = process.GetStopID(false);
  Lines lines;
  {
    auto held = lock();
    if (stopping_) return;
    // Since when it sits stopped: the stop hook's request may have said
    // already (earlier); else the moment LLDB told of the stop.
    if (auto& since = stopped_since_[pid]; since.first != stop || since.second == 0) since = {stop, at};
    // The stop hook of this stop, if LLDB ran one, has finished: the event
    // comes here after it (stop_listener.h).
    auto hooked = hooked_stops_.find(pid);
    if (hooked != hooked_stops_.end() && hooked->second == stop) return;
    hooked_stops_[pid] = stop;
    at_stop(lines);
  }
  print_async(debugger_, lines);
}

void Frontend::on_resumed(lldb::SBProcess process) {
  // Read before the lock, which a command may hold: the process runs already
  // (the helper also cuts a stop at the first event a probe saw after it).
  const uint64_t at = monotonic_ns();
  const uint64_t pid = process.GetProcessID();
  auto held = lock();
  stopped_since_.erase(pid);
  // A window's time leaves out the time the process sat stopped.
  if (HelperClient* helper = running_helper()) helper->notify("resumed", {{"pid", pid}, {"at_ns", at}});
}

void Frontend::on_exited(lldb::SBProcess) {
  Lines lines;
  {
    auto held = lock();
    if (stopping_) return;
    await_exits(lines);
  }
  // Straight to the output: lldb may be about to quit (the end of a batch),
  // before its event thread would print.
  write_lines(debugger_, lines);
}

void Frontend::await_exits(Lines& lines) {
  std::set<uint64_t> gone;
  for (auto& [id, session] : sessions_) {
    if (session.ended) continue;
    lldb::SBProcess process = session.target.GetProcess();
    const lldb::StateType state = process.IsValid() ? process.GetState() : lldb::eStateInvalid;
    if (awaited_.count(session.pid)) continue;
    if (process.GetProcessID() != session.pid || state == lldb::eStateExited || state == lldb::eStateDetached ||
        state == lldb::eStateInvalid) {
      gone.insert(session.pid);
    }
  }
  if (gone.empty() || !running_helper()) return;
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  for (bool waiting = true; waiting && std::chrono::steady_clock::now() < deadline;) {
    HelperReply reply;
    if (request("sessions", nlohmann::json::object(), kQuickTimeout, lines, reply) || !reply.ok) return;
    waiting = false;
    for (const auto& entry : reply.result.value("sessions", nlohmann::json::array())) {
      waiting |= gone.count(entry.value("pid", uint64_t{0})) > 0;
    }
    if (waiting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Their last windows and end lines, named by the helper: LLDB no longer
  // resolves the addresses of a process that is gone.
  awaited_.insert(gone.begin(), gone.end());
  if (auto failure = run({"show"}, {{"at_stop", true}, {"names", "helper"}}, lines, kQuickTimeout)) lines.push_back(*failure);
}

}  // namespace xref::lldb_plugin
