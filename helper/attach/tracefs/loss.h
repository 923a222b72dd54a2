// When the kernel's ring buffers lost events. The per-CPU stats say how
// many, never which: a window open while the count grew may miss any of its
// events, so it is marked possible_loss; the number lost in it is unknown.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "attach/tracefs/instance.h"

namespace xref {

class LossTimeline {
 public:
  explicit LossTimeline(uint64_t start_ns) : checked_ns_(start_ns) {}

  // The totals read at `now_ns`; growth since the last check is a loss
  // somewhere in between.
  void update(const RingLoss& totals, uint64_t now_ns);
  // Whether loss may have happened while [from_ns, to_ns] was open.
  bool during(uint64_t from_ns, uint64_t to_ns) const;
  const RingLoss& totals() const { return totals_; }

 private:
  RingLoss totals_;
  uint64_t checked_ns_;
  std::vector<std::pair<uint64_t, uint64_t>> intervals_;
};

}  // namespace xref
