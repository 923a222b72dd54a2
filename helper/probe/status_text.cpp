#include "probe/status_text.h"

namespace xref {

std::string ProbeStatus::text(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
  uint64_t hits = 0, passed = 0, lost = 0;
  for (size_t site = 0; site < sites.size() && site < plan_.sites.size(); ++site) {
    lost += sites[site].records_lost;
    if (plan_.sites[site].ret) continue;  // a function's rets count no hits of their own
    hits += sites[site].hits;
    passed += sites[site].passed;
  }
  rate_.add(elapsed_ms, hits);
  std::string line = "xref: " + status_seconds(elapsed_ms) + "  " + grouped_number(hits) + " hits (" +
                     grouped_number(static_cast<uint64_t>(rate_.per_second() + 0.5)) + "/s)";
  if (!request_.filter.empty()) line += "  " + grouped_number(passed) + " passed";
  std::vector<std::string> bounds;
  if (request_.until_hits > 0) bounds.push_back(grouped_number(request_.until_hits) + " passing hits");
  return line + "  lost " + grouped_number(lost) + "  " + status_stop_text(request_.duration_ms, bounds);
}

}  // namespace xref
