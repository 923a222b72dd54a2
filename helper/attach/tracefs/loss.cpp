#include "attach/tracefs/loss.h"

namespace xref {

void LossTimeline::update(const RingLoss& totals, uint64_t now_ns) {
  if (totals.total() > totals_.total()) intervals_.emplace_back(checked_ns_, now_ns);
  totals_ = totals;
  checked_ns_ = now_ns;
}

bool LossTimeline::during(uint64_t from_ns, uint64_t to_ns) const {
  for (const auto& [lost_from, lost_to] : intervals_) {
    if (lost_from <= to_ns && lost_to >= from_ns) return true;
  }
  return false;
}

}  // namespace xref
