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
#include "serve/start_text.h"
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

// The update's `stop`: the write --stop-when stopped at, with the condition.
nlohmann::json stop_json(const WatchRequest& request, const std::optional<WatchStop>& stop) {
  if (!stop) return nullptr;
  const nlohmann::json when = stop_when_json(request, stop);
  nlohmann::json flat = when["stop"];
  flat["filter"] = when["filter"];
  flat["skip"] = when["skip"];
  return flat;
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
  auto releasing = start_releases(session, std::move(site_lives));
  callbacks.take_releases = [&session, releasing] {
    std::vector<WatchReleaseAsk> asks;
    for (SiteReleases::Ask& ask : releasing->take(session)) asks.push_back({std::move(ask.sites), std::move(ask.reason)});
    return asks;
  };
  callbacks.released = [this, &session, &plan, releasing](const WatchRun&, const WatchReleaseDone& done) {
    // A store site: what it writes from now on only the unobserved-change check sees.
    nlohmann::json sites = nlohmann::json::array();
    for (uint32_t index : done.sites) {
      const WatchSite& site = plan.sites[index];
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(site.function_offset));
      sites.push_back({{"address", site.function + offset},
                       {"function", site.function},
                       {"probe_live", hex_value(releasing->site_lives()[index])},
                       {"text", site.text},
                       {"store", true},
                       {"at_ms", done.at_ms}});
    }
    answer_release(session, *releasing, done.error.has_value(), sites, done.gap_us, done.process_stopped);
  };
  callbacks.drain_waiting = [&session] { return session.drain_waiting(); };
}

void SessionManager::run_watch_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec) {
  const WatchRequest& request = spec.watch.request;
  bool attached = false;  // the start answered: a failure now ends the session
  auto fail = [&](const Error& error) { this->fail(*session, request_id, attached, error, {{"document", nullptr}}); };
  try {
    auto target = open_target({spec.process().pid, spec.process().bin});
    auto plan = target ? plan_watch_ranges(*target, request) : Result<WatchPlan>(target.error());
    auto choice = plan ? choose_watch_backend(*plan, request) : Result<WatchBackendChoice>(plan.error());
    if (!choice) return fail(choice.error());
    WatchRenderer renderer(*target, *plan, request);

    WatchCallbacks callbacks;
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.cancel_reason = "stopped";
    callbacks.drain_fd = session->drain_fd;
    std::vector<uint64_t> site_lives;
    callbacks.attached = [&](const std::string& backend, size_t sites) {
      session->attached(backend);
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
                                                 {"stop_signal", stop_signal_field(request.stop_when)},
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
    run->stop_reason = end_reason(*session, run->stop_reason);
    // The writes no stop showed yet, then the end.
    writer_.write(update(*run));
    std::optional<Error> error = run->target_changed;
    if (run->target_exited) {
      error = make_error(ErrorCode::process_exited, "process " + std::to_string(spec.watch.pid) + " exited during the watch");
    }
    nlohmann::json summary = counts_json(*run);
    summary["events"] = summary["recorded"];
    end_with_document(*session, run->stop_reason, error, renderer.document(*run), summary);
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

}  // namespace xref::serve
