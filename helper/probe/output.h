// A probe's result as the live_probe JSON document (docs/json.md, schema
// version 1, the envelope of live_trace) and as text: per address its hits,
// threads, rate, callers, groups, histogram and first samples. Each figure
// says whether it was observed or inferred.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "probe/plan.h"
#include "probe/session.h"
#include "process/symbolizer.h"
#include "process/target.h"

namespace xref {

class ProbeRenderer {
 public:
  ProbeRenderer(const Target& target, const ProbePlan& plan)
      : target_(target), plan_(plan), symbolizer_(target.space, plan.modules[0].module) {}

  nlohmann::json document(const ProbeRun& run);
  void print_text(std::ostream& out, const ProbeRun& run);

 private:
  nlohmann::json address_json(size_t address, const ProbeRun& run);
  nlohmann::json record_json(const ProbeRecord& record);

  const Target& target_;
  const ProbePlan& plan_;
  Symbolizer symbolizer_;
};

}  // namespace xref
