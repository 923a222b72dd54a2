// A probe session of `xref serve`: the probe runs on the session's thread;
// each drain a front end asks for (at a debugger stop) is answered after a
// probe_update event with the counts so far, heartbeats go out as the same
// event, and the session_ended event carries the whole live_probe document.
#include <string>

#include "mark/follower.h"
#include "output/json_envelope.h"
#include "probe/changes.h"
#include "probe/output.h"
#include "probe/plan.h"
#include "probe/session.h"
#include "process/target.h"
#include "serve/release.h"
#include "serve/session.h"
#include "serve/start_text.h"
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
    const std::vector<uint64_t> site_lives = probe_site_lives(*target, *plan);
    hook_probe_releases(*session, *plan, site_lives, callbacks);
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.drain_fd = session->drain_fd;
    callbacks.attached = [&](const std::string& backend, size_t sites) {
      session->attached(backend);
      nlohmann::json addresses = nlohmann::json::array();
      auto live_json = [&](const Module* module, uint64_t static_va) {
        const auto live = target->space.live_from_static(*module, static_va);
        return live ? nlohmann::json(hex_value(*live)) : nlohmann::json(nullptr);
      };
      for (const ProbeSite& site : plan->sites) {
        if (site.ret) continue;
        const ProbeAddress& address = plan->addresses[site.address];
        const Module* module = plan->modules[address.module_index].module;
        addresses.push_back({{"address", address.given},
                             {"static_va", hex_value(address.static_va)},
                             {"module", module->name()},
                             {"function", address.function.demangled},
                             {"live", live_json(module, address.static_va)},
                             // where the uprobe is: the nop after an entry's endbr64
                             {"probe_live", live_json(module, site.static_va)}});
      }
      std::vector<std::string> warnings = target->warnings;
      warnings.insert(warnings.end(), plan->warnings.begin(), plan->warnings.end());
      writer_.write(result_response(request_id, {{"session", session->id},
                                                 {"command", "probe"},
                                                 {"backend", backend},
                                                 {"sites", sites},
                                                 {"addresses", addresses},
                                                 // every uprobe, ret sites included: for session.release
                                                 {"probe_sites", probe_sites_json(site_lives)},
                                                 {"warnings", warnings},
                                                 {"breakpoints_to_disable", plan->breakpoints_to_disable},
                                                 // --stop-when: the signal the debugger must stop on, not pass
                                                 {"stop_signal", stop_signal_field(request.stop_when)},
                                                 {"process", process_json(target->process.identity(),
                                                                          target->binary_match)}}));
      attached = true;
    };
    auto counts_now = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      nlohmann::json counts = renderer.heartbeat_json(elapsed_ms, sites);
      counts.erase("type");
      return counts;
    };
    nlohmann::json shown;       // the document of the last drain's update
    nlohmann::json shown_base;  // what that update's changes were measured from
    uint64_t skipped = 0;       // updates in a row the front end never got (superseded unsent)
    uint64_t superseded = 0;    // all of them
    callbacks.drained = [&](const ProbeRun& so_far, bool ending) {
      // Out before the drain is answered: the front end prints it at this
      // stop, with what changed since the previous one. A front end that
      // does not read gets the newest in place of the one still unsent, its
      // changes measured from what it got before.
      nlohmann::json document = renderer.document(so_far);
      const nlohmann::json counts = counts_now(so_far.elapsed_ms, so_far.counts.sites);
      const auto pushed = writer_.write_superseding(session->id, [&](bool superseding) {
        const nlohmann::json& since = superseding ? shown_base : shown;
        return event_message("probe_update", session->id,
                             {{"counts", counts},
                              {"changes", probe_changes(since, document)},
                              {"document", document},
                              {"superseded", superseding ? skipped + 1 : 0}});
      });
      if (pushed == OutputQueue::KeyedPush::superseded) {
        ++skipped;
        ++superseded;
      } else {
        skipped = 0;
        shown_base = std::move(shown);
      }
      shown = std::move(document);
      // Ending: the front end waits for session_ended, so the breakpoints
      // of bp:N come back at this very stop.
      answer_drains(*session, ending);
    };
    callbacks.tracefs_fallback = [&] { return claim_tracefs(*session); };
    callbacks.heartbeat_ms = request.heartbeat_ms;
    callbacks.heartbeat = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      writer_.write_droppable(event_message("probe_update", session->id, {{"counts", counts_now(elapsed_ms, sites)}}));
    };
    auto run = run_probe(*target, *plan, request, callbacks);
    if (!run) return fail(run.error());
    run->stop_reason = end_reason(*session, run->stop_reason);
    nlohmann::json document = renderer.document(*run);
    std::optional<Error> error;
    if (run->target_exited) {
      error = make_error(ErrorCode::process_exited, "process " + std::to_string(spec.probe.pid) + " exited during the probe");
    }
    const nlohmann::json summary = document["summary"];
    end_with_document(*session, run->stop_reason, error, std::move(document), summary,
                      {{"updates_superseded", superseded}});
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

}  // namespace xref::serve
