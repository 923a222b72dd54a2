// The sampling events of a capture: which event (named, or the default:
// cycles where a hardware PMU exists, else cpu-clock), the host's bounds
// on it (perf_event_max_sample_rate, last-branch records), and one event
// per thread of the target with the profile program attached.
//
// Threads created later: every event is opened with inherit and
// inherit_thread, so a thread created by a sampled thread gets a copy of
// its event in the kernel from its first instruction, with the same
// program (the copy writes its records into the parent's ring). Forked
// processes get none (inherit_thread), an exec'd target keeps none
// (remove_on_exec). Every event dies with its descriptor: however the
// helper exits, SIGKILL included, nothing stays attached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "result.h"

struct bpf_link;
struct bpf_program;

namespace xref {

struct SamplingEvent {
  std::string name;  // as perf names it: cpu-clock, cycles, ...
  uint32_t type = 0;  // PERF_TYPE_*
  uint64_t config = 0;
  std::string reason;  // "named by --event", or why the default
  bool clock = false;  // cpu-clock/task-clock: a sample stands for 1e9 / freq ns of CPU
};

// The event --event names (or the default when empty), checked by opening
// it once on the helper itself: event_unavailable when the host lacks it.
Result<SamplingEvent> choose_sampling_event(const std::string& named);
// The names --event takes.
const std::vector<std::string>& sampling_event_names();
// frequency_too_high above /proc/sys/kernel/perf_event_max_sample_rate.
Result<void> check_sampling_frequency(uint64_t frequency_hz);
// --callers lbr: event_unavailable where the host has no last-branch
// records (a PERF_SAMPLE_BRANCH_STACK event cannot be opened), else
// unsupported (the lbr walk is not built).
Error lbr_refusal();

// What one event counted (read(2) with TOTAL_TIME_*): its own count plus
// those of the copies inherited into threads it created.
struct EventCount {
  uint64_t value = 0;
  uint64_t enabled_ns = 0;
  uint64_t running_ns = 0;
};

class SamplingEvents {
 public:
  SamplingEvents(SamplingEvent event, uint64_t frequency_hz) : event_(std::move(event)), frequency_hz_(frequency_hz) {}
  ~SamplingEvents() { close_all(); }
  SamplingEvents(const SamplingEvents&) = delete;
  SamplingEvents& operator=(const SamplingEvents&) = delete;

  // Opens thread `tid`'s event, disabled, with its throttle ring, and
  // attaches `program`. A thread that exited meanwhile (ESRCH): false.
  Result<bool> open(uint32_t tid, const bpf_program* program);
  void enable_all();
  void disable_all();
  // PERF_RECORD_THROTTLE records in the rings since the last call.
  uint64_t take_throttles();
  uint64_t lost_records() const { return lost_; }
  // Sum of every event's count (all threads sampled, inherited copies included).
  EventCount total() const;
  void close_all();
  size_t size() const { return events_.size(); }

 private:
  struct Event {
    uint32_t tid = 0;
    int fd = -1;
    bpf_link* link = nullptr;
    void* ring = nullptr;  // 1 metadata page + 1 data page
  };
  void drain_ring(Event& event);

  SamplingEvent event_;
  uint64_t frequency_hz_ = 0;
  std::vector<Event> events_;
  uint64_t throttles_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace xref
