#include "trace/tracefs/merge.h"

#include <algorithm>

namespace xref {

void HitMerger::release(uint64_t limit, const std::function<void(const ProbeHit&)>& take) {
  // Stable: hits of one CPU keep their order, even with equal stamps.
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const ProbeHit& a, const ProbeHit& b) { return a.timestamp_ns < b.timestamp_ns; });
  const auto end = limit == everything
                       ? pending_.end()
                       : std::lower_bound(pending_.begin(), pending_.end(), limit,
                                          [](const ProbeHit& hit, uint64_t bound) { return hit.timestamp_ns < bound; });
  for (auto it = pending_.begin(); it != end; ++it) take(*it);
  pending_.erase(pending_.begin(), end);
}

}  // namespace xref
