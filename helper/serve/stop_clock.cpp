#include "serve/stop_clock.h"

#include <algorithm>
#include <ctime>

namespace xref::serve {

uint64_t monotonic_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

void StopClock::stopped(pid_t pid, uint64_t at_ns) {
  std::lock_guard lock(mutex_);
  auto& stops = stops_[pid];
  if (!stops.empty() && stops.back().end_ns == kStillStopped) return;
  stops.push_back({at_ns, kStillStopped});
  while (stops.size() > kKeptIntervals) stops.pop_front();
  // The processes stopped longest ago are forgotten first.
  while (stops_.size() > kKeptProcesses) {
    auto oldest = std::min_element(stops_.begin(), stops_.end(), [](const auto& a, const auto& b) {
      const uint64_t a_last = a.second.empty() ? 0 : a.second.back().begin_ns;
      const uint64_t b_last = b.second.empty() ? 0 : b.second.back().begin_ns;
      return a_last < b_last;
    });
    stops_.erase(oldest);
  }
}

void StopClock::resumed(pid_t pid, uint64_t at_ns) {
  std::lock_guard lock(mutex_);
  for (auto& [stopped_pid, stops] : stops_) {
    if (pid != 0 && stopped_pid != pid) continue;
    if (!stops.empty() && stops.back().end_ns == kStillStopped) stops.back().end_ns = std::max(at_ns, stops.back().begin_ns);
  }
}

std::vector<StopClock::Interval> StopClock::within(pid_t pid, uint64_t begin_ns, uint64_t end_ns) const {
  std::vector<Interval> overlapping;
  std::lock_guard lock(mutex_);
  const auto found = stops_.find(pid);
  if (found == stops_.end()) return overlapping;
  for (const Interval& stop : found->second) {
    if (stop.end_ns <= begin_ns || stop.begin_ns >= end_ns) continue;
    overlapping.push_back({std::max(stop.begin_ns, begin_ns), std::min(stop.end_ns, end_ns)});
  }
  return overlapping;
}

}  // namespace xref::serve
