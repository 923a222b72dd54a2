// Where a session's uprobes are, as live addresses: what a front end
// compares with its debugger's breakpoint locations before it asks for
// session.release (docs/protocol.md).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

#include "probe/plan.h"
#include "process/target.h"
#include "trace/plan.h"

namespace xref::serve {

// Each site's live address, in the plan's order (0 where the module is not mapped).
std::vector<uint64_t> probe_site_lives(const Target& target, const ProbePlan& plan);
// Every attached trace probe's live address (one per address: roles share it).
std::vector<uint64_t> trace_probe_lives(const Target& target, const TracePlan& plan);
// The start answer's `probe_sites`: the distinct ones, as hex strings.
nlohmann::json probe_sites_json(const std::vector<uint64_t>& lives);

struct Session;
struct PendingRelease;

// A session's releases as its thread takes them (probe and watch): each
// pending session.release as the plan sites it names that are not out yet,
// queued for its answer in the order taken.
class SiteReleases {
 public:
  explicit SiteReleases(std::vector<uint64_t> site_lives);
  ~SiteReleases();
  struct Ask {
    std::vector<uint32_t> sites;  // plan site indexes
    std::string reason;
  };
  std::vector<Ask> take(Session& session);
  // The oldest release taken, not yet answered.
  PendingRelease next();
  // Some sites are still in.
  bool others_left() const { return out_.size() < site_lives_.size(); }
  const std::vector<uint64_t>& site_lives() const { return site_lives_; }

 private:
  std::vector<uint64_t> site_lives_;
  std::vector<PendingRelease> asked_;
  std::set<uint32_t> out_;
};

// A release's answer once its uprobes are out: `sites` what it released.
nlohmann::json release_result(uint64_t session, nlohmann::json sites, const std::string& reason, uint64_t gap_us,
                              bool process_stopped, bool hits_may_be_lost);

}  // namespace xref::serve
