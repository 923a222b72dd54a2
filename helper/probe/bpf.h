// The probe BPF program's lifecycle: open the embedded skeleton, configure
// it (target, sampling, bounds, ring buffer size), load, fill the site
// table and the filter, attach every site (one uprobe_multi link per file,
// or perf uprobes), arm; at the end stop counting, detach, and read the
// counts and aggregation maps back.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attach/uprobe_attach.h"
#include "probe/plan.h"
#include "probe_abi.h"
#include "result.h"

struct probe_bpf;

namespace xref {

struct ProbeBpfOptions {
  pid_t pid = 0;
  std::string backend = "auto";  // auto, uprobe_multi, perf_uprobe
  uint64_t every = 1;
  uint64_t first = 0;
  uint64_t until_hits = 0;
  uint64_t max_records = 0;
  uint64_t ringbuf_bytes = 1u << 20;
  uint32_t stack_depth = 0;       // --stacks: frames kept per user stack (0: no stacks)
  int stop_signal = 0;            // with the plan's stop filter: the signal that stops the thread
  uint64_t stop_skip = 0;
};

// What the maps held when read: per site.
struct ProbeCounts {
  std::vector<xref_probe_counts> sites;                                  // summed over CPUs
  std::map<uint32_t, std::map<uint64_t, uint64_t>> callers;             // site -> return address -> hits
  std::map<uint32_t, std::map<uint64_t, uint64_t>> threads;             // site -> tid -> passing hits
  std::map<uint32_t, std::map<uint64_t, uint64_t>> groups;              // site -> key -> hits
  // --group-by a :string fetch: site -> (string, cut at its bound) -> hits
  std::map<uint32_t, std::map<std::pair<std::string, bool>, uint64_t>> string_groups;
  std::map<uint32_t, std::map<uint64_t, uint64_t>> stacks;              // site -> stack key (probe_abi.h) -> hits
  std::map<uint32_t, std::vector<uint64_t>> stack_frames;               // stack id -> live frames, innermost first
};

class ProbeBpf {
 public:
  static Result<std::unique_ptr<ProbeBpf>> start(const ProbePlan& plan, const ProbeBpfOptions& options);
  ~ProbeBpf();
  ProbeBpf(const ProbeBpf&) = delete;
  ProbeBpf& operator=(const ProbeBpf&) = delete;

  const std::string& backend() const { return backend_; }
  int ringbuf_fd() const;
  void arm();
  // Stops counting first, then closes the links: probes fire while they are
  // removed, and those hits would not cover every site.
  void detach();
  // Takes the uprobes of `sites` (cookies) out for good, the others staying:
  // a uprobe_multi link cannot lose one address, so the link is closed and
  // one for the sites left is attached (perf uprobes the same way). Their
  // counts so far stay in the maps. Between the two, no site is observed.
  Result<void> release(const std::vector<uint32_t>& sites);
  bool until_hits_reached() const;
  // --stop-when: the hit that stopped its thread, once it did.
  std::optional<xref_probe_stop> stop() const;
  // Sampled hits past --max-events, kept by no record.
  uint64_t samples_over_limit() const;
  ProbeCounts counts(size_t sites) const;
  // Only the per-site counts (summed over CPUs): cheap enough for heartbeats.
  std::vector<xref_probe_counts> site_counts(size_t sites) const;

 private:
  ProbeBpf() = default;
  probe_bpf* skeleton_ = nullptr;
  UprobeLink link_;
  std::string backend_;
  // What release() attaches again: every file's sites, the program, the process.
  std::vector<UprobeSet> sets_;
  int program_fd_ = -1;
  pid_t pid_ = 0;
  uint16_t group_string_bound_ = 0;  // --group-by a :string fetch: its bound
};

}  // namespace xref
