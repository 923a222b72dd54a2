// Attaching one BPF program to many user-space addresses of one file,
// restricted to one process, with a cookie per address:
//  - uprobe_multi: one BPF_TRACE_UPROBE_MULTI link for all addresses (6.6+);
//    Debian's libbpf 1.1 has no API for it, so the link is made with bpf(2).
//  - perf_event: one perf uprobe event per address plus a BPF_PERF_EVENT
//    link carrying the cookie; works on older kernels.
// Closing the UprobeLink detaches everything it attached.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "result.h"

namespace xref {

// The kernel's enum bpf_attach_type value; Debian's 6.1 uapi headers lack it.
constexpr uint32_t kBpfTraceUprobeMulti = 48;

class UprobeLink {
 public:
  UprobeLink() = default;
  explicit UprobeLink(std::vector<int> fds) : fds_(std::move(fds)) {}
  UprobeLink(UprobeLink&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
  UprobeLink& operator=(UprobeLink&& other) noexcept;
  UprobeLink(const UprobeLink&) = delete;
  UprobeLink& operator=(const UprobeLink&) = delete;
  ~UprobeLink() { close(); }

  void close();
  bool attached() const { return !fds_.empty(); }
  // Takes over the other link's attachments too.
  void adopt(UprobeLink&& other);

 private:
  std::vector<int> fds_;
};

// `program_fd` must be loaded with expected_attach_type kBpfTraceUprobeMulti.
// `return_probes`: attach uretprobes (the probe fires when the function at
// each offset returns) instead of uprobes.
Result<UprobeLink> attach_uprobe_multi(int program_fd, const std::string& path,
                                       std::span<const uint64_t> file_offsets,
                                       std::span<const uint64_t> cookies, pid_t pid, bool return_probes = false);

Result<UprobeLink> attach_perf_uprobes(int program_fd, const std::string& path,
                                       std::span<const uint64_t> file_offsets,
                                       std::span<const uint64_t> cookies, pid_t pid, bool return_probes = false);

// The uprobes of one file (or, with `return_probes`, its return probes,
// which need a link of their own), each with its cookie.
struct UprobeSet {
  std::string path;
  bool return_probes = false;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> cookies;
};

// Every set through one link each: uprobe_multi links when `multi`, else
// perf uprobes; the first failure ends it (what was attached is closed).
Result<UprobeLink> attach_uprobe_sets(bool multi, int program_fd, pid_t pid, const std::vector<UprobeSet>& sets);

// `backend` is auto, uprobe_multi or perf_uprobe. `attach(true)` loads a
// program for uprobe_multi and attaches it, `attach(false)` for perf
// uprobes; each cleans up after itself when it fails. auto tries
// uprobe_multi first and falls back only when the kernel lacks it (an
// unsupported error); any other failure is final. Returns the backend used.
Result<std::string> attach_uprobe_backend(const std::string& backend,
                                          const std::function<Result<void>(bool uprobe_multi)>& attach);

// The dynamic PMU type of perf uprobes (/sys/bus/event_source/devices/uprobe/type).
Result<uint32_t> uprobe_pmu_type();

}  // namespace xref
