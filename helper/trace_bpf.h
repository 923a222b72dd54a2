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
#include <vector>

#include "result.h"
#include "trace_counters.h"
#include "trace_plan.h"
#include "uprobe_attach.h"

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
  // Every window the BPF side opened, with its loss count and end status.
  std::map<uint64_t, xref_window_result> window_results() const;
  void detach() { link_.close(); }

 private:
  TraceBpf() = default;
  trace_bpf* skeleton_ = nullptr;
  UprobeLink link_;
  std::string backend_;
};

}  // namespace xref
