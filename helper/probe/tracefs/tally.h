// What bpf/probe.bpf.c counts at each hit (on_hit), ported to C++ for the
// tracefs backend, which gets every hit as a record: hits, the filter's
// verdict (passed, unfiltered), --until-hits, threads, callers, groups
// (ret, caller, tid, a fetched value), the histogram, and samples by
// --every, --first and --max-events, into the very ProbeCounts the BPF
// maps are read into, with the maps' bounds. Keep it in step with
// probe.bpf.c: every rule below names what it mirrors there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "probe/bpf.h"
#include "probe/engine.h"
#include "probe/plan.h"
#include "probe/tracefs/records.h"

namespace xref {

struct ProbeTallyOptions {
  uint64_t every = 1;
  uint64_t first = 0;
  uint64_t until_hits = 0;
  uint64_t max_records = 0;  // --max-events; 0: unbounded
};

class ProbeTally {
 public:
  ProbeTally(const ProbePlan& plan, const ProbeTallyOptions& options);

  // One hit (probe_hit and on_hit). Hits must come in the order they ran
  // (timestamp order); a sample goes to `sample`.
  void hit(const SiteHit& hit, const ProbeRecordSink& sample);
  // --until-hits was reached: later hits count nowhere (`stopped`).
  bool stopped() const { return stopped_; }
  // When the hit that reached it ran.
  uint64_t stopped_at() const { return stopped_at_; }

  const ProbeCounts& counts() const { return counts_; }
  // Sampled hits past --max-events (records_total past max_records).
  uint64_t samples_not_kept() const;

 private:
  // count_key: one more for (site, value); false when the map is full.
  bool count_key(std::map<uint32_t, std::map<uint64_t, uint64_t>>& map, size_t& entries, size_t capacity,
                 uint32_t site, uint64_t value);
  void emit_record(const SiteHit& hit, xref_probe_counts& count, uint64_t number, const ProbeRecordSink& sample);

  const ProbePlan& plan_;
  ProbeTallyOptions options_;
  ProbeCounts counts_;
  std::vector<uint64_t> site_passed_;  // passing hits per site: a hit's number
  uint64_t passed_total_ = 0;
  uint64_t records_total_ = 0;
  bool stopped_ = false;
  uint64_t stopped_at_ = 0;
  // Entries of each BPF hash map, which all sites share.
  size_t callers_entries_ = 0;
  size_t threads_entries_ = 0;
  size_t groups_entries_ = 0;
  size_t string_groups_entries_ = 0;
};

}  // namespace xref
