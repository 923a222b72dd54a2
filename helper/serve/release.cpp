// session.release: a debugger's breakpoint goes where a session has a
// uprobe. The two do not mix (the uprobe swallows the breakpoint, and the
// debugger saves the uprobe's int3 as the original byte), so the session
// takes its uprobes at those addresses out first and answers once they are
// out of the target. A probe session keeps observing its other sites (the
// released ones keep their counts, marked "not observed since"); a trace
// session, whose windows need every probe, ends, its windows kept.
#include "serve/release.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <string>

#include "output/json_envelope.h"
#include "probe/session.h"
#include "serve/session.h"
#include "serve/sessions.h"

namespace xref::serve {

std::vector<uint64_t> probe_site_lives(const Target& target, const ProbePlan& plan) {
  std::vector<uint64_t> lives;
  for (const ProbeSite& site : plan.sites) {
    const auto live = target.space.live_from_static(*plan.modules[site.module_index].module, site.static_va);
    lives.push_back(live ? *live : 0);
  }
  return lives;
}

std::vector<uint64_t> trace_probe_lives(const Target& target, const TracePlan& plan) {
  std::vector<uint64_t> lives;
  for (const PlannedProbe& probe : plan.probes) {
    if (!probe.head) continue;
    const auto live = target.space.live_from_static(*plan.modules.at(probe.module_index).module, probe.static_va);
    if (live) lives.push_back(*live);
  }
  return lives;
}

nlohmann::json probe_sites_json(const std::vector<uint64_t>& lives) {
  std::set<uint64_t> distinct(lives.begin(), lives.end());
  distinct.erase(0);
  nlohmann::json sites = nlohmann::json::array();
  for (uint64_t live : distinct) sites.push_back(hex_value(live));
  return sites;
}

std::optional<nlohmann::json> SessionManager::release(const ReleaseRequest& release, const nlohmann::json& request_id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mutex_);
    const auto found = sessions_.find(release.session);
    if (found == sessions_.end()) {
      return error_response(request_id, protocol_error("unknown_session", "no session " + std::to_string(release.session),
                                                       "the sessions method lists the running ones"));
    }
    session = found->second;
  }
  std::lock_guard lock(session->mutex);
  if (session->ended) {
    // Its probes are all out already.
    return result_response(request_id, {{"session", session->id}, {"released", nlohmann::json::array()},
                                        {"reason", release.reason}, {"ended", true}});
  }
  PendingRelease pending{request_id, release.addresses, release.reason};
  const bool there = std::any_of(release.addresses.begin(), release.addresses.end(), [&](uint64_t address) {
    return std::find(session->probe_sites.begin(), session->probe_sites.end(), address) != session->probe_sites.end();
  });
  if (!there) {
    return result_response(request_id, {{"session", session->id}, {"released", nlohmann::json::array()},
                                        {"reason", release.reason}, {"ended", false}});
  }
  if (session->command == "probe" || session->command == "watch") {
    session->releases.push_back(std::move(pending));
    session->request_drain();
    return std::nullopt;
  }
  // A trace session's windows need every probe: it ends, answered after session_ended.
  session->releases_at_end.push_back(std::move(pending));
  if (session->release_reason.empty()) session->release_reason = release.reason;
  if (session->state != "ended") session->state = "stopping";
  session->cancel();
  return std::nullopt;
}

SiteReleases::SiteReleases(std::vector<uint64_t> site_lives) : site_lives_(std::move(site_lives)) {}
SiteReleases::~SiteReleases() = default;

std::vector<SiteReleases::Ask> SiteReleases::take(Session& session) {
  std::vector<PendingRelease> taken;
  {
    std::lock_guard lock(session.mutex);
    taken.swap(session.releases);
  }
  std::vector<Ask> asks;
  for (PendingRelease& pending : taken) {
    Ask ask;
    ask.reason = pending.reason;
    for (uint32_t site = 0; site < site_lives_.size(); ++site) {
      const bool named = std::find(pending.addresses.begin(), pending.addresses.end(), site_lives_[site]) !=
                         pending.addresses.end();
      if (site_lives_[site] != 0 && named && out_.insert(site).second) ask.sites.push_back(site);
    }
    asked_.push_back(std::move(pending));
    asks.push_back(std::move(ask));
  }
  return asks;
}

PendingRelease SiteReleases::next() {
  PendingRelease pending = std::move(asked_.front());
  asked_.erase(asked_.begin());
  return pending;
}

nlohmann::json release_result(uint64_t session, nlohmann::json sites, const std::string& reason, uint64_t gap_us,
                              bool process_stopped, bool hits_may_be_lost) {
  return {{"session", session},
          {"released", std::move(sites)},
          {"reason", reason},
          {"ended", false},
          // The sites left were out meanwhile (a link is replaced whole): a
          // hit then was missed only if the process ran.
          {"gap_us", gap_us},
          {"process_stopped", process_stopped},
          {"hits_may_be_lost", hits_may_be_lost}};
}

std::shared_ptr<SiteReleases> SessionManager::start_releases(Session& session, std::vector<uint64_t> site_lives) {
  {
    std::lock_guard lock(session.mutex);
    session.probe_sites = site_lives;
  }
  return std::make_shared<SiteReleases>(std::move(site_lives));
}

void SessionManager::answer_release(Session& session, SiteReleases& releasing, bool failed, const nlohmann::json& sites,
                                    uint64_t gap_us, bool process_stopped) {
  PendingRelease pending = releasing.next();
  if (failed) {
    // The backend cannot take one site out: the run ends, and this answers after it.
    std::lock_guard lock(session.mutex);
    session.releases_at_end.push_back(std::move(pending));
    return;
  }
  const bool may_lose = !sites.empty() && releasing.others_left() && !process_stopped;
  writer_.write(result_response(pending.request_id,
                                release_result(session.id, sites, pending.reason, gap_us, process_stopped, may_lose)));
}

void SessionManager::hook_probe_releases(Session& session, const ProbePlan& plan, std::vector<uint64_t> site_lives,
                                         ProbeCallbacks& callbacks) {
  // The releases handed to run_probe, answered in that order; the sites out.
  auto releasing = start_releases(session, std::move(site_lives));
  callbacks.take_releases = [&session, releasing] {
    std::vector<ProbeReleaseAsk> asks;
    for (SiteReleases::Ask& ask : releasing->take(session)) asks.push_back({std::move(ask.sites), std::move(ask.reason)});
    return asks;
  };
  callbacks.released = [this, &session, &plan, releasing](const ProbeRun&, const ProbeReleaseDone& done) {
    nlohmann::json sites = nlohmann::json::array();
    for (const ReleasedSite& released : done.sites) {
      const ProbeSite& site = plan.sites[released.site];
      const ProbeAddress& address = plan.addresses[site.address];
      sites.push_back({{"address", address.given},
                       {"function", address.function.demangled},
                       {"probe_live", hex_value(releasing->site_lives()[released.site])},
                       {"ret_site", site.ret},
                       {"at_ms", released.at_ms},
                       {"hits", released.counts.hits},
                       {"passed", released.counts.passed}});
    }
    answer_release(session, *releasing, done.error.has_value(), sites, done.gap_us, done.process_stopped);
  };
  callbacks.drain_waiting = [&session] { return session.drain_waiting(); };
}

void SessionManager::answer_releases_at_end(Session& session, const StopAnswer& answer) {
  std::vector<PendingRelease> waiting;
  {
    std::lock_guard lock(session.mutex);
    waiting.swap(session.releases_at_end);
    waiting.insert(waiting.end(), session.releases.begin(), session.releases.end());
    session.releases.clear();
  }
  for (const PendingRelease& pending : waiting) {
    if (const auto* result = std::get_if<nlohmann::json>(&answer)) {
      nlohmann::json ended = *result;
      ended["released"] = nlohmann::json::array();
      ended["reason"] = pending.reason;
      ended["ended"] = true;
      writer_.write(result_response(pending.request_id, ended));
    } else {
      writer_.write(error_response(pending.request_id, std::get<ProtocolError>(answer)));
    }
  }
}

}  // namespace xref::serve
