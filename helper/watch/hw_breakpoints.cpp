#include "watch/hw_breakpoints.h"

#include <bpf/libbpf.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attach/libbpf_log.h"
#include "hex.h"

namespace xref {
namespace {

// The attr of every breakpoint, opened and modified alike: the kernel
// refuses a PERF_EVENT_IOC_MODIFY_ATTRIBUTES whose attr differs in anything
// but bp_addr, bp_len, bp_type and disabled.
perf_event_attr breakpoint_attr(const HwBreakpointSpec& spec, bool disabled) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_type = spec.type;
  attr.bp_addr = spec.address;
  attr.bp_len = spec.length;
  attr.sample_period = 1;  // every hit overflows: the program runs at each one
  // The time enabled sums over the inherited copies too: how the tests see
  // that threads created later hold the breakpoint.
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.disabled = disabled ? 1 : 0;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.inherit = 1;
  attr.inherit_thread = 1;
  attr.remove_on_exec = 1;
  return attr;
}

Error open_error(int error, uint32_t tid, uint32_t range, const HwBreakpointSpec& spec) {
  const std::string what = "perf_event_open(PERF_TYPE_BREAKPOINT) of range [" + std::to_string(range) + "] at " +
                           to_hex(spec.address) + " on thread " + std::to_string(tid) + " failed: " +
                           std::strerror(error);
  switch (error) {
    case ENOSPC:
      return make_error(ErrorCode::debug_registers_exhausted,
                        what + " (every debug register of that thread is taken: a debugger's watchpoint?)",
                        "remove the debugger's hardware watchpoints or breakpoints, or use --backend stores");
    case EACCES:
    case EPERM:
      return make_error(ErrorCode::permission_denied, what, "run xref as root (CAP_PERFMON and CAP_SYS_PTRACE)");
    case EINVAL:
      return make_error(ErrorCode::debug_register_rule, what,
                        "the kernel refused this breakpoint: check the address and length, or use --backend stores");
    default:
      return make_error(ErrorCode::unsupported, what, "use --backend stores");
  }
}

}  // namespace

Result<bool> HwBreakpoints::open(uint32_t tid, uint32_t range, const HwBreakpointSpec& spec,
                                 const bpf_program* program) {
  perf_event_attr attr = breakpoint_attr(spec, true);
  const long opened = syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (opened < 0) {
    if (errno == ESRCH) return false;
    return open_error(errno, tid, range, spec);
  }
  Event event{tid, range, static_cast<int>(opened), nullptr, spec};
  bpf_perf_event_opts options{};
  options.sz = sizeof options;
  options.bpf_cookie = static_cast<uint64_t>(range) + 1;
  event.link = bpf_program__attach_perf_event_opts(program, event.fd, &options);
  if (event.link == nullptr) {
    const int error = -errno;
    ::close(event.fd);
    return make_error(ErrorCode::unsupported,
                      "attaching the watch program to thread " + std::to_string(tid) + "'s breakpoint failed: " +
                          libbpf_message(error),
                      "use --backend stores");
  }
  events_.push_back(event);
  return true;
}

void HwBreakpoints::enable_all() {
  for (const Event& event : events_) ioctl(event.fd, PERF_EVENT_IOC_ENABLE, 0);
}

void HwBreakpoints::disable_range(uint32_t range) {
  for (const Event& event : events_) {
    if (event.range == range) ioctl(event.fd, PERF_EVENT_IOC_DISABLE, 0);
  }
}

Result<void> HwBreakpoints::move(uint32_t range, uint64_t address) {
  for (Event& event : events_) {
    if (event.range != range) continue;
    HwBreakpointSpec spec = event.spec;
    spec.address = address;
    perf_event_attr attr = breakpoint_attr(spec, false);
    if (ioctl(event.fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr) != 0) {
      const int error = errno;
      // A thread that exited keeps its event until the descriptor closes;
      // the kernel may refuse to move it (ESRCH): nothing to watch there.
      if (error == ESRCH) continue;
      return make_error(ErrorCode::debug_register_rule,
                        "moving range [" + std::to_string(range) + "]'s breakpoint on thread " +
                            std::to_string(event.tid) + " to " + to_hex(address) +
                            " failed (PERF_EVENT_IOC_MODIFY_ATTRIBUTES): " + std::strerror(error),
                        "use --backend stores for this --follow");
    }
    event.spec = spec;
  }
  return {};
}

void HwBreakpoints::close_all() {
  // Destroying a perf link closes its perf event descriptor too.
  for (Event& event : events_) {
    if (event.link != nullptr) {
      bpf_link__destroy(event.link);
    } else if (event.fd >= 0) {
      ::close(event.fd);
    }
  }
  events_.clear();
}

size_t HwBreakpoints::events_of(uint32_t range) const {
  size_t count = 0;
  for (const Event& event : events_) count += event.range == range ? 1 : 0;
  return count;
}

}  // namespace xref
