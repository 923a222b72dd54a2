// xref's private ftrace instance, instances/xref-<helper pid>-<start>: its own
// per-CPU ring buffers, clock and switches, so the global trace buffer and
// other tracers are never touched. Events defined in uprobe_events appear
// in every instance; only the ones enabled here record into it.
#pragma once

#include <cstdint>
#include <string>

#include "attach/tracefs/fs.h"
#include "result.h"

namespace xref {

struct RingLoss {
  uint64_t overrun = 0;         // overwritten before being read (overwrite mode)
  uint64_t commit_overrun = 0;  // lost to nested writes on a full page
  uint64_t dropped_events = 0;  // refused because the buffer was full
  uint64_t total() const { return overrun + commit_overrun + dropped_events; }
};

// Sums "overrun:", "commit overrun:" and "dropped events:" of per-CPU stats texts.
RingLoss parse_ring_stats(const std::string& stats);

class TracefsInstance {
 public:
  // mkdir instances/NAME, then: trace_clock mono (the clock of
  // bpf_ktime_get_ns), buffer_size_kb per CPU, overwrite off (a full buffer
  // refuses new events, as a BPF ring buffer does), record-tgid on,
  // tracing off until start(). An instance of that name must not exist.
  static Result<TracefsInstance> create(const Tracefs& tracefs, const std::string& name, uint64_t buffer_kb_per_cpu);

  const std::string& name() const { return name_; }
  std::string relative() const { return "instances/" + name_; }
  std::string directory() const { return tracefs_.path(relative()); }
  size_t page_size() const { return page_size_; }

  Result<void> enable_group(const std::string& group, bool enable) const;
  Result<void> set_tracing(bool on) const;
  Result<RingLoss> loss() const;
  // rmdir; fails while a file of the instance is open.
  Result<void> remove() const;

 private:
  TracefsInstance(Tracefs tracefs, std::string name) : tracefs_(std::move(tracefs)), name_(std::move(name)) {}
  Result<void> configure(uint64_t buffer_kb_per_cpu);
  Tracefs tracefs_;
  std::string name_;
  size_t page_size_ = 4096;
};

}  // namespace xref
