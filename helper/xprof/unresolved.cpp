#include "xprof/unresolved.h"

#include <algorithm>

namespace xref {

std::vector<UnresolvedSamples> unresolved_rows(const std::map<std::string, uint64_t>& by_reason) {
  std::vector<UnresolvedSamples> rows;
  for (const auto& [reason, samples] : by_reason) rows.push_back({reason, samples});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const UnresolvedSamples& a, const UnresolvedSamples& b) { return a.samples > b.samples; });
  return rows;
}

}  // namespace xref
