// CLOCK_MONOTONIC in nanoseconds: the clock of bpf_ktime_get_ns() and of the
// tracefs instance's `mono` trace_clock, so helper-side times compare with
// event timestamps.
#pragma once

#include <time.h>

#include <cstdint>

namespace xref {

inline uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace xref
