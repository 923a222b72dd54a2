// A watch session of `xref serve`: the watch runs on the session's thread;
// each drain a front end asks for (at a debugger stop) is answered after a
// watch_update event with the writes recorded since the last one, and the
// session_ended event carries the whole live_watch document. Its store
// sites are probe sites for session.release (a debugger's breakpoint there
// takes the uprobe's place; writes there are then only seen as unobserved
// changes).
#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <string>

#include "output/json_envelope.h"
#include "probe_abi.h"
#include "process/target.h"
#include "serve/release.h"
#include "serve/session.h"
#include "serve/sessions.h"
#include "watch/engine.h"
#include "watch/output.h"
#include "watch/plan.h"
#include "watch/run.h"

namespace xref::serve {
namespace {

nlohmann::json ranges_json(const WatchPlan& plan) {
  nlohmann::json ranges = nlohmann::json::array();
  for (size_t index = 0; index < plan.ranges.size(); ++index) {
    const WatchRange& range = plan.ranges[index];
    ranges.push_back({{"index", index},
                      {"spelled", range.spelled},
                      {"address", hex_value(range.address)},
                      {"length", range.length},
                      {"parked", range.parked}});
  }
  return ranges;
}

nlohmann::json stop_json(const WatchRequest& request, const std::optional<WatchStop>& stop) {
  if (!stop) return nullptr;
  return {{"filter", request.stop_when},
          {"skip", request.stop_skip},
          {"seq", stop->sequence},
          {"tid", stop->tid},
          {"range", stop->range},
          {"match", stop->match},
          {"signal", XREF_PROBE_STOP_SIGNAL},
          {"signal_result", stop->signal_result}};
}

// Counts so far, for `sessions` and the update.
nlohmann::json counts_json(const WatchRun& run) {
  uint64_t writes = 0, lost = 0;
  for (const WatchRangeCounts& counts : run.counts) {
    writes += counts.writes;
    lost += counts.records_lost + counts.in_flight_full;
  }
  uint64_t recorded = 0, unobserved = 0;
  for (const WatchRecord& record : run.records) {
    recorded += record.kind == WatchRecordKind::write ? 1 : 0;
    unobserved += record.kind == WatchRecordKind::unobserved_change ? 1 : 0;
  }
  return {{"writes", writes}, {"recorded", recorded}, {"unobserved_changes", unobserved}, {"lost", lost}};
}

}  // namespace

void SessionManager::hook_watch_releases(Session& session, const WatchPlan& plan, std::vector<uint64_t> site_lives,
                                         WatchCallbacks& callbacks) {
  {
    std::lock_guard lock(session.mutex);
    session.probe_sites = site_lives;
  }
  struct Releasing {
    std::deque<PendingRelease> asked;
    std::set<uint32_t> out;
  };
  auto releasing = std::make_shared<Releasing>();
  callbacks.take_releases = [&session, site_lives, releasing] {
    std::vector<PendingRelease> taken;
    {
      std::lock_guard lock(session.mutex);
      taken.swap(session.releases);
    }
    std::vector<WatchReleaseAsk> asks;
    for (PendingRelease& pending : taken) {
      WatchReleaseAsk ask;
      ask.reason = pending.reason;
      for (uint32_t site = 0; site < site_lives.size(); ++site) {
        const bool named = std::find(pending.addresses.begin(), pending.addresses.end(), site_lives[site]) !=
                           pending.addresses.end();
        if (site_lives[site] != 0 && named && releasing->out.insert(site).second) ask.sites.push_back(site);
      }
      releasing->asked.push_back(std::move(pending));
      asks.push_back(std::move(ask));
    }
    return asks;
  };
  callbacks.released = [this, &session, &plan, site_lives, releasing](const WatchRun&, const WatchReleaseDone& done) {
    PendingRelease pending = std::move(releasing->asked.front());
    releasing->asked.pop_front();
    if (done.error) {
      std::lock_guard lock(session.mutex);
      session.releases_at_end.push_back(std::move(pending));
      return;
    }
    nlohmann::json sites = nlohmann::json::array();
    for (uint32_t index : done.sites) {
      const WatchSite& site = plan.sites[index];
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(site.function_offset));
      sites.push_back({{"address", site.function + offset},
                       {"function", site.function},
                       {"probe_live", hex_value(site_lives[index])},
                       {"text", site.text},
                       {"store", true},
                       {"at_ms", done.at_ms}});
    }
    const bool others = releasing->out.size() < site_lives.size();
    writer_.write(result_response(pending.request_id,
                                  {{"session", session.id},
                                   {"released", sites},
                                   {"reason", pending.reason},
                                   {"ended", false},
                                   {"gap_us", done.gap_us},
                                   {"process_stopped", done.process_stopped},
                                   {"hits_may_be_lost", !done.sites.empty() && others && !done.process_stopped}}));
  };
  callbacks.drain_waiting = [&session] {
    std::lock_guard lock(session.mutex);
    return !session.drains.empty();
  };
}

void SessionManager::run_watch_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec) {
  const WatchRequest& request = spec.watch.request;
  bool attached = false;
  auto fail = [&](const Error& error) { this->fail(*session, request_id, attached, error, {{"document", nullptr}}); };
  try {
    auto target = open_target({spec.watch.pid, spec.watch.bin});
    if (!target) return fail(target.error());
    auto plan = plan_watch_ranges(*target, request);
    if (!plan) return fail(plan.error());
    auto choice = choose_watch_backend(*plan, request);
    if (!choice) return fail(choice.error());
    WatchRenderer renderer(*target, *plan, request);

    WatchCallbacks callbacks;
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.cancel_reason = "stopped";
    callbacks.drain_fd = session->drain_fd;
    std::vector<uint64_t> site_lives;
    callbacks.attached = [&](const std::string& backend, size_t sites) {
      {
        std::lock_guard lock(session->mutex);
        session->backend = backend;
        if (session->state == "attaching") session->state = "running";
      }
      // Every uprobe, after-sites and contract returns included: for session.release.
      site_lives.clear();
      for (const WatchSite& site : plan->sites) site_lives.push_back(site.live_va);
      hook_watch_releases(*session, *plan, site_lives, callbacks);
      std::vector<std::string> warnings = target->warnings;
      warnings.insert(warnings.end(), plan->warnings.begin(), plan->warnings.end());
      writer_.write(result_response(request_id, {{"session", session->id},
                                                 {"command", "watch"},
                                                 {"backend", backend},
                                                 {"backend_reason", choice->reason},
                                                 {"sites", sites},
                                                 {"ranges", ranges_json(*plan)},
                                                 {"probe_sites", probe_sites_json(site_lives)},
                                                 {"warnings", warnings},
                                                 {"breakpoints_to_disable", nlohmann::json::array()},
                                                 {"stop_signal", request.stop_when.empty()
                                                                     ? nlohmann::json(nullptr)
                                                                     : nlohmann::json(XREF_PROBE_STOP_SIGNAL)},
                                                 {"process", process_json(target->process.identity(),
                                                                          target->binary_match)}}));
      attached = true;
    };
    // The records sent so far: each update carries the ones after them.
    size_t sent = 0;
    auto update = [&](const WatchRun& so_far) {
      nlohmann::json records = nlohmann::json::array();
      for (; sent < so_far.records.size(); ++sent) records.push_back(renderer.record_json(so_far.records[sent], &so_far));
      const nlohmann::json counts = counts_json(so_far);
      {
        std::lock_guard lock(session->mutex);
        session->events = counts["recorded"].get<uint64_t>();
      }
      return event_message("watch_update", session->id,
                           {{"elapsed_ms", so_far.elapsed_ms},
                            {"armed_ns", so_far.armed_ns},
                            {"records", records},
                            {"counts", counts},
                            {"stop", stop_json(request, so_far.stop)}});
    };
    callbacks.drained = [&](const WatchRun& so_far, bool ending) {
      // Out before the drain is answered: the front end prints it at this stop.
      writer_.write(update(so_far));
      answer_drains(*session, ending);
    };
    auto run = run_watch(*target, *plan, request, *choice, callbacks);
    if (!run) return fail(run.error());
    {
      std::lock_guard lock(session->mutex);
      if (session->helper_exiting && run->stop_reason == "stopped") run->stop_reason = "helper_exiting";
    }
    // The writes no stop showed yet, then the end.
    writer_.write(update(*run));
    nlohmann::json document = renderer.document(*run);
    nlohmann::json error = nullptr;
    if (run->target_exited) {
      error = error_object(cli_error(make_error(
          ErrorCode::process_exited, "process " + std::to_string(spec.watch.pid) + " exited during the watch")));
    } else if (run->target_changed) {
      error = error_object(cli_error(*run->target_changed));
    }
    document["error"] = error;
    nlohmann::json summary = counts_json(*run);
    summary["events"] = summary["recorded"];
    nlohmann::json ended = event_message("session_ended", session->id,
                                         {{"stop_reason", run->stop_reason},
                                          {"summary", summary},
                                          {"document", document},
                                          {"error", error}});
    finish(*session, ended,
           nlohmann::json{{"session", session->id}, {"stop_reason", run->stop_reason}, {"summary", summary}});
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

}  // namespace xref::serve
