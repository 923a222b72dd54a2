// Merging the per-CPU streams of uprobe event records into one, by
// timestamp, for every tracefs engine (trace's hits, probe's site hits).
//
// Per thread, timestamp order is program order: a thread runs on one CPU at
// a time and the trace clock (mono) is monotonic across CPUs. The catch is
// reading: the buffers are read one CPU after the other, so a round can see
// a thread's later hit (on a CPU read late) without its earlier one (on a
// CPU read before that hit was committed). That earlier hit was committed
// before the later one was, so the next round has it. Hence hits are
// released only up to the start time of the previous round (the limit
// TracefsRecording::drain returns): everything stamped before that was
// committed before this round began reading (a probe's record is written
// with preemption off, microseconds, far less than the 20 ms between
// rounds).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace xref {

// `Hit` has a uint64_t timestamp_ns.
template <typename Hit>
class HitMerger {
 public:
  static constexpr uint64_t everything = std::numeric_limits<uint64_t>::max();

  void add(const Hit& hit) { pending_.push_back(hit); }
  // Hands over, in timestamp order, every pending hit stamped before `limit`.
  void release(uint64_t limit, const std::function<void(const Hit&)>& take) {
    // Stable: hits of one CPU keep their order, even with equal stamps.
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const Hit& a, const Hit& b) { return a.timestamp_ns < b.timestamp_ns; });
    const auto end = limit == everything
                         ? pending_.end()
                         : std::lower_bound(pending_.begin(), pending_.end(), limit,
                                            [](const Hit& hit, uint64_t bound) { return hit.timestamp_ns < bound; });
    for (auto it = pending_.begin(); it != end; ++it) take(*it);
    pending_.erase(pending_.begin(), end);
  }
  size_t pending() const { return pending_.size(); }

 private:
  std::vector<Hit> pending_;  // per CPU in read order, CPUs one after the other
};

}  // namespace xref
