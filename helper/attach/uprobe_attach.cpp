#include "attach/uprobe_attach.h"

#include <bpf/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "hex.h"

namespace xref {
namespace {

// bpf(BPF_LINK_CREATE) attribute layout for uprobe_multi, as in the kernel's
// union bpf_attr (include/uapi/linux/bpf.h, 6.6+). Padded with zeros: the
// kernel rejects non-zero bytes it does not know.
struct UprobeMultiLinkAttr {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t count;
  uint32_t multi_flags;
  uint32_t pid;
  uint8_t padding[128 - 60];
};
static_assert(offsetof(UprobeMultiLinkAttr, path) == 16);
static_assert(offsetof(UprobeMultiLinkAttr, pid) == 56);
constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// The config bit that makes a perf uprobe a uretprobe
// (/sys/bus/event_source/devices/uprobe/format/retprobe reads "config:N").
uint64_t retprobe_config_bit() {
  std::ifstream file("/sys/bus/event_source/devices/uprobe/format/retprobe");
  std::string format;
  if (file >> format && format.rfind("config:", 0) == 0) return uint64_t{1} << std::stoul(format.substr(7));
  return 1;
}

Error errno_error(const std::string& what, int error_number) {
  if (error_number == 524) {  // ENOTSUPP, kernel-internal
    return make_error(ErrorCode::unsupported,
                      what + ": the kernel cannot place a uprobe on one of the instructions",
                      "trace fewer or other functions; `xref resolve` shows the instruction at an address");
  }
  if (error_number == ESRCH) {
    return make_error(ErrorCode::process_exited, what + ": the target process exited");
  }
  const ErrorCode code = (error_number == EPERM || error_number == EACCES) ? ErrorCode::permission_denied
                         : (error_number == EINVAL || error_number == EOPNOTSUPP || error_number == ENOENT)
                             ? ErrorCode::unsupported
                             : ErrorCode::internal;
  return make_error(code, what + ": " + std::strerror(error_number),
                    code == ErrorCode::permission_denied ? "run xref as root (CAP_BPF and CAP_PERFMON are needed)"
                                                         : "");
}

}  // namespace

UprobeLink& UprobeLink::operator=(UprobeLink&& other) noexcept {
  if (this != &other) {
    close();
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

void UprobeLink::adopt(UprobeLink&& other) {
  fds_.insert(fds_.end(), other.fds_.begin(), other.fds_.end());
  other.fds_.clear();
}

void UprobeLink::close() {
  // Links first (reverse order), so no program runs on a half-closed set.
  for (auto it = fds_.rbegin(); it != fds_.rend(); ++it) ::close(*it);
  fds_.clear();
}

Result<UprobeLink> attach_uprobe_multi(int program_fd, const std::string& path,
                                       std::span<const uint64_t> file_offsets,
                                       std::span<const uint64_t> cookies, pid_t pid, bool return_probes) {
  if (file_offsets.empty() || file_offsets.size() != cookies.size()) {
    return make_error(ErrorCode::internal, "uprobe_multi needs one cookie per offset");
  }
  UprobeMultiLinkAttr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_fd = static_cast<uint32_t>(program_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(file_offsets.data());
  attr.cookies = reinterpret_cast<uint64_t>(cookies.data());
  attr.count = static_cast<uint32_t>(file_offsets.size());
  attr.pid = static_cast<uint32_t>(pid);
  attr.multi_flags = return_probes ? kUprobeMultiReturn : 0;
  const long fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
  if (fd < 0) return errno_error("uprobe_multi link on " + path, errno);
  return UprobeLink({static_cast<int>(fd)});
}

Result<uint32_t> uprobe_pmu_type() {
  std::ifstream file("/sys/bus/event_source/devices/uprobe/type");
  uint32_t type = 0;
  if (!(file >> type)) {
    return make_error(ErrorCode::unsupported, "no perf uprobe PMU (/sys/bus/event_source/devices/uprobe/type)",
                      "the kernel needs CONFIG_UPROBE_EVENTS");
  }
  return type;
}

Result<UprobeLink> attach_perf_uprobes(int program_fd, const std::string& path,
                                       std::span<const uint64_t> file_offsets,
                                       std::span<const uint64_t> cookies, pid_t pid, bool return_probes) {
  if (file_offsets.size() != cookies.size()) return make_error(ErrorCode::internal, "one cookie per offset");
  auto pmu = uprobe_pmu_type();
  if (!pmu) return pmu.error();
  // Two descriptors per address: raise the soft limit to the hard one.
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  std::vector<int> fds;
  auto fail = [&](const std::string& what) {
    const int saved = errno;
    UprobeLink cleanup(std::move(fds));
    return errno_error(what, saved);
  };
  for (size_t i = 0; i < file_offsets.size(); ++i) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = *pmu;
    attr.config1 = reinterpret_cast<uint64_t>(path.c_str());
    attr.config2 = file_offsets[i];
    attr.config = return_probes ? retprobe_config_bit() : 0;
    attr.disabled = 1;
    // A uprobe event for one task filters by its mm, so every thread of the
    // process is covered.
    const long event = syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (event < 0) return fail("perf uprobe on " + path + " at file offset " + to_hex(file_offsets[i]));
    fds.push_back(static_cast<int>(event));
    bpf_link_create_opts options;
    std::memset(&options, 0, sizeof options);
    options.sz = sizeof options;
    options.perf_event.bpf_cookie = cookies[i];
    const int link = bpf_link_create(program_fd, static_cast<int>(event), BPF_PERF_EVENT, &options);
    if (link < 0) {
      errno = -link;
      return fail("BPF link on perf uprobe");
    }
    fds.push_back(link);
    if (ioctl(static_cast<int>(event), PERF_EVENT_IOC_ENABLE, 0) != 0) return fail("enable perf uprobe");
    // The BPF link holds the perf event; its own descriptor can go, so each
    // address costs one descriptor, and closing the link removes the probe.
    fds.erase(std::find(fds.begin(), fds.end(), static_cast<int>(event)));
    ::close(static_cast<int>(event));
  }
  return UprobeLink(std::move(fds));
}

Result<UprobeLink> attach_uprobe_sets(bool multi, int program_fd, pid_t pid, const std::vector<UprobeSet>& sets) {
  UprobeLink all;
  for (const UprobeSet& set : sets) {
    if (set.offsets.empty()) continue;
    auto link = multi ? attach_uprobe_multi(program_fd, set.path, set.offsets, set.cookies, pid, set.return_probes)
                      : attach_perf_uprobes(program_fd, set.path, set.offsets, set.cookies, pid, set.return_probes);
    if (!link) return link.error();
    all.adopt(std::move(*link));
  }
  return all;
}

Result<std::string> attach_uprobe_backend(const std::string& backend,
                                          const std::function<Result<void>(bool uprobe_multi)>& attach) {
  if (backend == "auto" || backend == "uprobe_multi") {
    auto attached = attach(true);
    if (attached) return std::string("uprobe_multi");
    if (backend == "uprobe_multi" || attached.error().code != ErrorCode::unsupported) return attached.error();
  }
  auto attached = attach(false);
  if (!attached) return attached.error();
  return std::string("perf_uprobe");
}

}  // namespace xref
