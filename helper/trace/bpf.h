// The trace BPF program's lifecycle: open the embedded skeleton, configure
// it (target, bounds, ring buffer size), load, fill the probe table and the
// start filter, attach every probe with one uprobe_multi link (or one perf
// uprobe per address where the kernel lacks it), and detach. Destroying the
// object detaches everything.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attach/uprobe_attach.h"
#include "result.h"
#include "trace/counters.h"
#include "trace/plan.h"

struct trace_bpf;

namespace xref {

struct TraceBpfOptions {
  pid_t pid = 0;
  std::vector<std::string> module_paths;  // per plan module: the file its probes sit in
  uint64_t max_events = 0;
  uint64_t max_windows = 0;
  uint64_t ringbuf_bytes = 4u << 20;
  std::string backend = "auto";  // auto, uprobe_multi, perf_uprobe
};

class TraceBpf {
 public:
  static Result<std::unique_ptr<TraceBpf>> start(const TracePlan& plan, const TraceBpfOptions& options);
  ~TraceBpf();
  TraceBpf(const TraceBpf&) = delete;
  TraceBpf& operator=(const TraceBpf&) = delete;

  const std::string& backend() const { return backend_; }
  int ringbuf_fd() const;
  TraceCounters counters() const;
  // The windows whose end record did not come: the open ones (from the
  // thread map) and those whose end record the ring buffer refused (the
  // results map), with their loss count and end status.
  std::map<uint64_t, xref_window_result> window_results() const;
  // Stops every probe from recording (the BPF program returns at once),
  // then removes them: nothing fires half-removed.
  void detach();
  // Lets start probes open windows; called once every probe is attached.
  void arm();
  // Puts an open window into the thread map, as the start probe would have
  // (the thread is stopped by a debugger, so nothing races): window id,
  // sequence 1 next (0 is the opening entry user space makes), the frame.
  Result<uint64_t> open_window(uint32_t tid, uint64_t entry_sp, uint32_t function_id, uint64_t start_ns);
  // The thread map: every open window's state, by thread.
  std::vector<std::pair<uint32_t, xref_thread_window>> thread_windows() const;
  // Writes a stopped thread's window state back (nothing races a stopped
  // thread), or ends its window, whose end record the caller delivers (the
  // thread's entry goes, the closed count goes up).
  void put_thread_window(uint32_t tid, const xref_thread_window& window);
  void end_thread_window(uint32_t tid);

 private:
  TraceBpf() = default;
  trace_bpf* skeleton_ = nullptr;
  UprobeLink link_;
  std::string backend_;
};

}  // namespace xref
