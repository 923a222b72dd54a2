#include "serve/sessions.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "mark/follower.h"
#include "output/json_envelope.h"
#include "process/target.h"
#include "serve/helper_advice.h"
#include "serve/release.h"
#include "serve/session.h"
#include "trace/options.h"
#include "trace/output.h"
#include "trace/plan.h"
#include "trace/progress.h"
#include "trace/session.h"

namespace xref::serve {

namespace {

// Where the start probe is: its static VA, module and live address.
nlohmann::json start_json(const Target& target, const TracePlan& plan) {
  for (const PlannedProbe& probe : plan.probes) {
    if (!probe.start) continue;
    const Module* module = plan.modules.at(probe.module_index).module;
    const auto bias = target.space.load_bias(*module);
    return {{"va", hex_value(plan.start_va)},
            {"module", module->name()},
            {"live", bias ? nlohmann::json(hex_value(plan.start_va + *bias)) : nlohmann::json(nullptr)}};
  }
  return nullptr;
}

nlohmann::json started_json(uint64_t session, const Target& target, const TracePlan& plan,
                            const TraceRequest& request, const TraceAttachInfo& attached) {
  std::vector<std::string> warnings = target.warnings;
  warnings.insert(warnings.end(), plan.warnings.begin(), plan.warnings.end());
  nlohmann::json result = {
      {"session", session},
      {"backend", attached.backend},
      {"probes", attached.probes},
      {"functions", plan.functions.size()},
      {"return_mode", plan.return_mode},
      {"warnings", warnings},
      {"start", start_json(target, plan)},
      {"process", process_json(target.process.identity(), target.binary_match)},
  };
  if (request.here) result["here_window"] = attached.here_window;
  // The CFA the window opened on: the debugger's, or the unwind rule's when
  // they disagreed (then a warning says so).
  if (plan.here) result["here_cfa"] = hex_value(plan.here->entry_sp + 8);
  result["breakpoints_to_disable"] = plan.breakpoints_to_disable;
  return result;
}

}  // namespace

SessionManager::~SessionManager() { stop_all_and_join(); }

// The tracefs probe group and instance are named after the helper (PID and
// start time): one session at a time may use them.
std::optional<uint64_t> SessionManager::tracefs_session(const Session* except) {
  for (const auto& [id, other] : sessions_) {
    if (other.get() == except) continue;
    std::lock_guard other_lock(other->mutex);
    if (!other->ended && other->requested_backend == "tracefs") return id;
  }
  return std::nullopt;
}

bool SessionManager::claim_tracefs(Session& session) {
  std::lock_guard lock(mutex_);
  if (tracefs_session(&session)) return false;
  std::lock_guard session_lock(session.mutex);
  session.requested_backend = "tracefs";
  return true;
}

std::optional<ProtocolError> SessionManager::start(const nlohmann::json& request_id, SessionSpec spec) {
  {
    // Sessions that ended are a moment from their thread's end: joined now,
    // a failed start's number is free for this one (outside mutex_, which
    // their last writes may take).
    std::vector<std::shared_ptr<Session>> finishing;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [id, session] : sessions_) {
        std::lock_guard session_lock(session->mutex);
        if (session->state == "ended") finishing.push_back(session);
      }
    }
    for (const auto& session : finishing) {
      while (!session->thread_done) std::this_thread::yield();
    }
  }
  reap();
  std::lock_guard lock(mutex_);
  static const std::string kNoBackend;  // a profile's perf events are per thread: any number of sessions
  const std::string& backend = spec.command == "probe"     ? spec.probe.request.backend
                               : spec.command == "watch"   ? spec.watch.request.backend
                               : spec.command == "profile" ? kNoBackend
                                                           : spec.options.request.backend;
  if (backend == "tracefs") {
    if (auto id = tracefs_session(nullptr)) {
      return cli_error(make_error(ErrorCode::invalid_argument,
                                  "session " + std::to_string(*id) + " already traces with --backend tracefs",
                                  "one tracefs session per helper: stop it first, or use a BPF backend"));
    }
  }
  if (auto refused = refuse_over_cap()) return refused;
  auto session = std::make_shared<Session>();
  session->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  session->drain_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (session->cancel_fd < 0 || session->drain_fd < 0) {
    return cli_error(make_error(ErrorCode::internal, "eventfd failed for a new session"));
  }
  while (sessions_.count(next_id_) > 0) ++next_id_;  // a failed start whose thread still ends
  session->id = next_id_++;
  session->command = spec.command;
  session->pid = spec.process().pid;
  session->requested_backend = backend;
  try {
    session->thread = std::thread(&SessionManager::run, this, session, request_id, std::move(spec));
  } catch (const std::system_error& failure) {
    return cli_error(make_error(ErrorCode::internal, std::string("cannot start a session thread: ") + failure.what()));
  }
  sessions_[session->id] = session;
  return std::nullopt;
}

void SessionManager::run(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec) {
  if (spec.command == "probe") return run_probe_session(std::move(session), std::move(request_id), std::move(spec));
  if (spec.command == "watch") return run_watch_session(std::move(session), std::move(request_id), std::move(spec));
  if (spec.command == "profile") return run_profile_session(std::move(session), std::move(request_id), std::move(spec));
  const TraceRequest& request = spec.options.request;
  bool attached = false;
  auto fail = [&](const Error& error) {
    this->fail(*session, request_id, attached, error, {{"windows", nlohmann::json::array()}});
  };
  try {
    auto target = open_target({spec.options.pid, spec.options.bin});
    if (!target) return fail(target.error());
    auto plan = plan_trace(*target, request);
    if (!plan) return fail(plan.error());
    auto marks = follow_marks(request.mark_file, request.mark_regex);
    if (!marks) return fail(marks.error());

    TraceRenderer renderer(*target, *plan);
    renderer.set_marks(marks->get());
    TraceCallbacks callbacks;
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.drain_fd = session->drain_fd;
    callbacks.drained = [&](bool ending) { answer_drains(*session, ending); };
    callbacks.attached = [&](const TraceAttachInfo& info) {
      session->attached(info.backend);
      const std::vector<uint64_t> lives = trace_probe_lives(*target, *plan);
      {
        std::lock_guard lock(session->mutex);
        session->probe_sites = lives;
      }
      nlohmann::json started = started_json(session->id, *target, *plan, request, info);
      started["probe_sites"] = probe_sites_json(lives);
      writer_.write(result_response(request_id, started));
      attached = true;
    };
    uint64_t windows_not_sent = 0;
    TraceProgress progress(request, marks->get());  // --heartbeat-ms, counted as the CLI counts
    callbacks.window_closed = [&](const TraceWindow& window) {
      progress.window_closed(window.events.size());
      {
        std::lock_guard lock(session->mutex);
        ++session->windows;
        session->events += window.events.size();
      }
      // The window event as event_message() would spell it (keys sorted),
      // with the window written straight in.
      std::string line = "{\"event\":\"window\",\"session\":" + std::to_string(session->id) +
                         ",\"type\":\"event\",\"window\":";
      renderer.windows().append_json(line, window, nullptr);
      line += "}\n";
      // A front end too slow for the windows loses some, counted in the
      // summary; it never holds up the session.
      if (!writer_.write_droppable_line(std::move(line))) ++windows_not_sent;
      return true;
    };
    // A heartbeat is a notification the front end prints as it comes, while
    // the process runs (protocol 2 sends it, text and counts, past the
    // display); dropped, as in the CLI, when the front end reads too slowly.
    callbacks.heartbeat_ms = request.heartbeat_ms;
    callbacks.heartbeat = [&](uint64_t elapsed_ms, const TraceCounters& counters) {
      nlohmann::json heartbeat = progress.heartbeat_json(elapsed_ms, counters);
      heartbeat.erase("type");
      std::string line = TraceProgress::heartbeat_text(heartbeat);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      writer_.write_droppable(event_message(
          "heartbeat", session->id,
          {{"heartbeat", heartbeat}, {"text", {"xref: session " + std::to_string(session->id) + ": " + line}}}));
    };
    auto run = run_trace(*target, *plan, request, callbacks);
    if (!run) return fail(run.error());

    {
      std::lock_guard lock(session->mutex);
      if (session->helper_exiting && run->stop_reason == "stopped") run->stop_reason = "helper_exiting";
      // session.release of one of its probe sites (release.cpp).
      if (!session->release_reason.empty() && run->stop_reason == "stopped") run->stop_reason = "released";
    }
    if (windows_not_sent > 0) run->windows_not_shown["output_stalled"] = windows_not_sent;
    nlohmann::json open_windows = nlohmann::json::array();
    // The windows not sent yet: open at the end, or ended with their end record lost.
    for (const auto& [id, window] : run->windows->windows()) {
      std::string text;
      renderer.windows().append_json(text, window, &*run);
      open_windows.push_back(nlohmann::json::parse(text));
    }
    nlohmann::json error = nullptr;
    if (run->target_exited) {
      error = error_object(cli_error(make_error(
          ErrorCode::process_exited,
          "process " + std::to_string(spec.options.pid) + " exited during the trace; windows still open are marked "
                                                          "target_exited")));
    }
    const nlohmann::json summary = renderer.summary_json(*run);
    nlohmann::json ended = event_message("session_ended", session->id,
                                         {{"stop_reason", run->stop_reason},
                                          {"summary", summary},
                                          {"windows", std::move(open_windows)},
                                          {"error", error}});
    finish(*session, ended,
           nlohmann::json{{"session", session->id}, {"stop_reason", run->stop_reason}, {"summary", summary}});
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

void SessionManager::fail(Session& session, const nlohmann::json& request_id, bool attached, const Error& error,
                          const nlohmann::json& empty) {
  const ProtocolError reported = cli_error(with_helper_advice(error));
  if (!attached) {
    {
      // Gone from `sessions` and the cap before its answer is out.
      std::lock_guard lock(session.mutex);
      session.state = "ended";
    }
    {
      // A start that failed gives its number back when no start came after
      // it, so the user's sessions are numbered 1, 2, 3 without gaps.
      std::lock_guard lock(mutex_);
      if (session.id + 1 == next_id_) --next_id_;
    }
    writer_.write(error_response(request_id, reported));
    finish(session, std::nullopt,
           protocol_error("unknown_session", "session " + std::to_string(session.id) + " did not start: " + error.message));
    return;
  }
  nlohmann::json fields = {{"stop_reason", "error"}, {"summary", nullptr}, {"error", error_object(reported)}};
  fields.update(empty);
  finish(session, event_message("session_ended", session.id, fields),
         nlohmann::json{{"session", session.id}, {"stop_reason", "error"}, {"summary", nullptr}});
}

std::string SessionManager::end_reason(Session& session, std::string reason) {
  std::lock_guard lock(session.mutex);
  if (session.helper_exiting && reason == "stopped") reason = "helper_exiting";
  return reason;
}

void SessionManager::end_with_document(Session& session, const std::string& stop_reason, const std::optional<Error>& error,
                                       nlohmann::json document, const nlohmann::json& summary,
                                       const nlohmann::json& extra) {
  const nlohmann::json error_json = error ? error_object(cli_error(*error)) : nlohmann::json(nullptr);
  document["error"] = error_json;
  nlohmann::json fields = {{"stop_reason", stop_reason}, {"summary", summary}, {"document", document}, {"error", error_json}};
  fields.update(extra);
  finish(session, event_message("session_ended", session.id, fields),
         nlohmann::json{{"session", session.id}, {"stop_reason", stop_reason}, {"summary", summary}});
}

void SessionManager::finish(Session& session, const std::optional<nlohmann::json>& ended_event, StopAnswer answer) {
  {
    // Out of the sessions list before its session_ended event is out.
    std::lock_guard lock(session.mutex);
    session.state = "ended";
  }
  // The event goes out before any stop request is answered (docs/protocol.md).
  if (ended_event) writer_.write(*ended_event);
  std::vector<nlohmann::json> waiting;
  {
    std::lock_guard lock(session.mutex);
    session.ended = true;
    session.stop_answer = answer;
    waiting.swap(session.stop_requests);
  }
  for (const nlohmann::json& id : waiting) {
    if (const auto* result = std::get_if<nlohmann::json>(&answer)) writer_.write(result_response(id, *result));
    else writer_.write(error_response(id, std::get<ProtocolError>(answer)));
  }
  answer_releases_at_end(session, answer);
  // An ended session has nothing more to drain: its windows are all out.
  answer_drains(session, false);
  session.thread_done = true;
}

void SessionManager::answer_drains(Session& session, bool ending) {
  std::vector<std::shared_ptr<PendingDrain>> drains;
  {
    std::lock_guard lock(session.mutex);
    drains.swap(session.drains);
  }
  for (const auto& drain : drains) {
    nlohmann::json answer;
    {
      std::lock_guard lock(drain->mutex);
      if (ending) drain->ending.push_back(session.id);
      if (--drain->remaining == 0) answer = {{"drained", true}, {"ending", drain->ending}};
    }
    if (!answer.is_null()) writer_.write(result_response(drain->request_id, answer));
  }
}

std::optional<nlohmann::json> SessionManager::drain(const nlohmann::json& request_id, bool at_stop) {
  forget_reported();
  auto pending = std::make_shared<PendingDrain>();
  pending->request_id = request_id;
  std::vector<std::shared_ptr<Session>> running;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, session] : sessions_) {
      std::lock_guard session_lock(session->mutex);
      if (session->ended) continue;
      session->drains.push_back(pending);
      running.push_back(session);
    }
    pending->remaining = running.size();
  }
  if (running.empty()) return result_response(request_id, {{"drained", true}, {"ending", nlohmann::json::array()}});
  for (const auto& session : running) {
    if (at_stop) session->stop_drain = true;
    session->request_drain();
  }
  return std::nullopt;
}

std::optional<nlohmann::json> SessionManager::stop(uint64_t id, const nlohmann::json& request_id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mutex_);
    const auto found = sessions_.find(id);
    if (found == sessions_.end()) {
      // Ended and freed: the same summary as its session_ended event.
      if (auto answer = ended_.find(id)) return result_response(request_id, *answer);
      return error_response(request_id, unknown_session(id, next_id_));
    }
    session = found->second;
  }
  std::lock_guard lock(session->mutex);
  if (session->ended) {
    // Its session_ended event is already out; answer with the same summary.
    if (const auto* result = std::get_if<nlohmann::json>(&session->stop_answer)) {
      return result_response(request_id, *result);
    }
    return error_response(request_id, std::get<ProtocolError>(session->stop_answer));
  }
  session->stop_requests.push_back(request_id);
  if (session->state != "ended") session->state = "stopping";
  session->cancel();
  return std::nullopt;
}

nlohmann::json SessionManager::list() {
  forget_reported();
  nlohmann::json sessions = nlohmann::json::array();
  std::lock_guard lock(mutex_);
  for (const auto& [id, session] : sessions_) {
    std::lock_guard session_lock(session->mutex);
    if (session->state == "ended") continue;
    sessions.push_back({{"session", id},
                        {"command", session->command},
                        {"pid", session->pid},
                        {"backend", session->backend.empty() ? nlohmann::json(nullptr) : nlohmann::json(session->backend)},
                        {"windows", session->windows},
                        {"events", session->events},
                        {"state", session->state}});
  }
  return {{"sessions", sessions}};
}

void SessionManager::stop_all_and_join() {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, session] : sessions_) all.push_back(session);
  }
  for (const auto& session : all) {
    std::lock_guard lock(session->mutex);
    if (session->state == "ended") continue;
    session->helper_exiting = true;
    session->state = "stopping";
    session->cancel();
  }
  for (const auto& session : all) {
    if (session->thread.joinable()) session->thread.join();
  }
}

void SessionManager::reap() {
  std::lock_guard lock(mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& session = *it->second;
    if (!session.thread_done) {
      ++it;
      continue;
    }
    if (session.thread.joinable()) session.thread.join();
    // A session that never started was answered by its session.start error;
    // one that ran keeps its summary until its session_ended was read.
    if (const auto* answer = std::get_if<nlohmann::json>(&session.stop_answer)) ended_.keep(it->first, *answer);
    it = sessions_.erase(it);  // its eventfds close with it
  }
}

void SessionManager::forget_reported() {
  reap();
  std::lock_guard lock(mutex_);
  ended_.forget_all();
}

}  // namespace xref::serve
