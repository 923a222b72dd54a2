// A probe session of `xref serve`: the probe runs on the session's thread;
// each drain a front end asks for (at a debugger stop) is answered after a
// probe_update event with the counts so far, heartbeats go out as the same
// event, and the session_ended event carries the whole live_probe document.
#include <string>

#include "mark/follower.h"
#include "output/json_envelope.h"
#include "probe/output.h"
#include "probe/plan.h"
#include "probe/session.h"
#include "process/target.h"
#include "serve/session.h"
#include "serve/sessions.h"

namespace xref::serve {

void SessionManager::run_probe_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec) {
  const ProbeRequest& request = spec.probe.request;
  bool attached = false;
  auto fail = [&](const Error& error) { this->fail(*session, request_id, attached, error, {{"document", nullptr}}); };
  try {
    auto target = open_target({spec.probe.pid, spec.probe.bin});
    if (!target) return fail(target.error());
    auto plan = plan_probe(*target, request);
    if (!plan) return fail(plan.error());
    auto marks = follow_marks(request.mark_file, request.mark_regex);
    if (!marks) return fail(marks.error());
    ProbeRenderer renderer(*target, *plan, request);
    renderer.set_marks(marks->get());

    ProbeCallbacks callbacks;
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.drain_fd = session->drain_fd;
    callbacks.attached = [&](const std::string& backend, size_t sites) {
      {
        std::lock_guard lock(session->mutex);
        session->backend = backend;
        if (session->state == "attaching") session->state = "running";
      }
      nlohmann::json addresses = nlohmann::json::array();
      for (size_t index = 0; index < plan->addresses.size(); ++index) {
        const ProbeAddress& address = plan->addresses[index];
        const Module* module = plan->modules[address.module_index].module;
        const auto live = target->space.live_from_static(*module, address.static_va);
        addresses.push_back({{"address", address.given},
                             {"static_va", hex_value(address.static_va)},
                             {"module", module->name()},
                             {"function", address.function.demangled},
                             {"live", live ? nlohmann::json(hex_value(*live)) : nlohmann::json(nullptr)}});
      }
      std::vector<std::string> warnings = target->warnings;
      warnings.insert(warnings.end(), plan->warnings.begin(), plan->warnings.end());
      writer_.write(result_response(request_id, {{"session", session->id},
                                                 {"command", "probe"},
                                                 {"backend", backend},
                                                 {"sites", sites},
                                                 {"addresses", addresses},
                                                 {"warnings", warnings},
                                                 {"process", process_json(target->process.identity(),
                                                                          target->binary_match)}}));
      attached = true;
    };
    auto update = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      nlohmann::json counts = renderer.heartbeat_json(elapsed_ms, sites);
      counts.erase("type");
      return event_message("probe_update", session->id, {{"counts", counts}});
    };
    callbacks.drained = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      // Out before the drain is answered: the front end prints it at this stop.
      writer_.write(update(elapsed_ms, sites));
      answer_drains(*session, false);
    };
    callbacks.heartbeat_ms = request.heartbeat_ms;
    callbacks.heartbeat = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      writer_.write_droppable(update(elapsed_ms, sites));
    };
    auto run = run_probe(*target, *plan, request, callbacks);
    if (!run) return fail(run.error());
    {
      std::lock_guard lock(session->mutex);
      if (session->helper_exiting && run->stop_reason == "stopped") run->stop_reason = "helper_exiting";
    }
    nlohmann::json document = renderer.document(*run);
    nlohmann::json error = nullptr;
    if (run->target_exited) {
      error = error_object(cli_error(make_error(
          ErrorCode::process_exited, "process " + std::to_string(spec.probe.pid) + " exited during the probe")));
    }
    document["error"] = error;
    const nlohmann::json summary = document["summary"];
    nlohmann::json ended = event_message(
        "session_ended", session->id,
        {{"stop_reason", run->stop_reason}, {"summary", summary}, {"document", document}, {"error", error}});
    finish(*session, ended,
           nlohmann::json{{"session", session->id}, {"stop_reason", run->stop_reason}, {"summary", summary}});
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

}  // namespace xref::serve
