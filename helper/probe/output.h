// A probe's result as the live_probe JSON document (docs/json.md, schema
// version 1, the envelope of live_trace): per address its hits, threads,
// rate, callers, groups, histogram and samples. Each figure says whether it
// was observed or inferred. Its text is rendered from the document
// (render/probe_text.h).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "mark/follower.h"
#include "probe/plan.h"
#include "probe/session.h"
#include "process/symbolizer.h"
#include "process/target.h"
#include "render/helper_names.h"

namespace xref {

class ProbeRenderer {
 public:
  // Names the plan's addresses at once, while the process runs: the text
  // comes at the end, when the process may be gone.
  ProbeRenderer(const Target& target, const ProbePlan& plan, const ProbeRequest& request);

  // --mark-file: samples and heartbeats are stamped from this follower.
  void set_marks(MarkFollower* marks) { marks_ = marks; }

  nlohmann::json document(const ProbeRun& run);
  void print_text(std::ostream& out, const ProbeRun& run);
  // A progress line: the counts so far per address, their rate since the
  // previous heartbeat, samples lost; as JSON ({"type": "heartbeat", ...})
  // or text.
  nlohmann::json heartbeat_json(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites);
  std::string heartbeat_text(const nlohmann::json& heartbeat) const;

 private:
  nlohmann::json address_json(size_t address, const ProbeRun& run);
  nlohmann::json record_json(const ProbeRecord& record);
  nlohmann::json released_json(size_t address, const ProbeRun& run) const;
  nlohmann::json stop_json(const ProbeRun& run);
  nlohmann::json stacks_json(uint32_t site, const ProbeRun& run);
  nlohmann::json frame_json(uint64_t live, bool pc);
  void never_hit_warnings(const ProbeRun& run, std::vector<std::string>& warnings) const;
  void map_full_warnings(const ProbeRun& run, std::vector<std::string>& warnings) const;

  const Target& target_;
  const ProbePlan& plan_;
  const ProbeRequest& request_;
  Symbolizer symbolizer_;
  render::HelperNames names_;
  MarkFollower* marks_ = nullptr;
  uint64_t last_heartbeat_ms_ = 0;
  std::vector<uint64_t> last_passed_;
};

}  // namespace xref
