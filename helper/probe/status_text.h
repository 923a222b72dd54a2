// The status line of `xref probe` on a terminal (output/status_line.h):
// "xref: 4.2 s  12,480 hits (2,950/s)  lost 0  (stops at 1.0 s or Ctrl-C)",
// the hits of every address together, with the rate over the last second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/status_line.h"
#include "probe/plan.h"
#include "probe/request.h"

namespace xref {

class ProbeStatus {
 public:
  ProbeStatus(const ProbePlan& plan, const ProbeRequest& request) : plan_(plan), request_(request) {}
  std::string text(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites);

 private:
  const ProbePlan& plan_;
  const ProbeRequest& request_;
  RecentRate rate_;
};

}  // namespace xref
