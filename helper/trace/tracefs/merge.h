// Merging the per-CPU streams of probe hits into one, by timestamp.
//
// Per thread, timestamp order is program order: a thread runs on one CPU at
// a time and the trace clock (mono) is monotonic across CPUs. The catch is
// reading: the buffers are read one CPU after the other, so a round can see
// a thread's later hit (on a CPU read late) without its earlier one (on a
// CPU read before that hit was committed). That earlier hit was committed
// before the later one was, so the next round has it. Hence hits are
// released only up to the start time of the previous round: everything
// stamped before that was committed before this round began reading
// (a probe's record is written with preemption off, microseconds, far less
// than the 20 ms between rounds).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "trace/window_machine.h"

namespace xref {

class HitMerger {
 public:
  static constexpr uint64_t everything = std::numeric_limits<uint64_t>::max();

  void add(const ProbeHit& hit) { pending_.push_back(hit); }
  // Hands over, in timestamp order, every pending hit stamped before `limit`.
  void release(uint64_t limit, const std::function<void(const ProbeHit&)>& take);
  size_t pending() const { return pending_.size(); }

 private:
  std::vector<ProbeHit> pending_;  // per CPU in read order, CPUs one after the other
};

}  // namespace xref
