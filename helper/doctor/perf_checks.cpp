// Doctor checks on perf events: is there a hardware PMU, do software clocks
// count, and do hardware breakpoints fire (on some VMs perf_event_open of a
// breakpoint succeeds but the counter never moves).
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "doctor/checks.h"

namespace xref {
namespace {

// The self-test writes this variable; a working breakpoint counts each write.
volatile uint64_t breakpoint_self_test_word = 0;
constexpr int kBreakpointWrites = 100;

long open_counter(perf_event_attr& attr) {
  attr.size = sizeof attr;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

uint64_t read_counter(int fd) {
  uint64_t value = 0;
  if (read(fd, &value, sizeof value) != sizeof value) return 0;
  return value;
}

void busy_work() {
  volatile uint64_t sum = 0;
  for (int i = 0; i < 2000000; ++i) sum = sum + static_cast<uint64_t>(i);
}

}  // namespace

void check_perf_events(DoctorReport& report) {
  perf_event_attr cycles;
  std::memset(&cycles, 0, sizeof cycles);
  cycles.type = PERF_TYPE_HARDWARE;
  cycles.config = PERF_COUNT_HW_CPU_CYCLES;
  const long hardware = open_counter(cycles);
  if (hardware >= 0) {
    close(static_cast<int>(hardware));
    report.checks.push_back({"hardware_perf_events", CheckStatus::ok, "the cycles event opens: a hardware PMU is present", ""});
  } else {
    report.checks.push_back({"hardware_perf_events", CheckStatus::missing,
                             std::string("perf_event_open(cycles) failed: ") + std::strerror(errno) +
                                 " (no hardware PMU, common in VMs)",
                             "profiles use the cpu-clock software event instead"});
  }

  perf_event_attr clock;
  std::memset(&clock, 0, sizeof clock);
  clock.type = PERF_TYPE_SOFTWARE;
  clock.config = PERF_COUNT_SW_TASK_CLOCK;
  const long software = open_counter(clock);
  if (software < 0) {
    report.checks.push_back({"software_perf_events", CheckStatus::failed,
                             std::string("perf_event_open(task-clock) failed: ") + std::strerror(errno),
                             "check /proc/sys/kernel/perf_event_paranoid and run as root"});
    return;
  }
  const int fd = static_cast<int>(software);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  busy_work();
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  const uint64_t nanoseconds = read_counter(fd);
  close(fd);
  report.checks.push_back({"software_perf_events", nanoseconds > 0 ? CheckStatus::ok : CheckStatus::failed,
                           "task-clock counted " + std::to_string(nanoseconds) + " ns of a busy loop",
                           nanoseconds > 0 ? "" : "software perf events do not count here"});
}

void check_hardware_breakpoints(DoctorReport& report) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = reinterpret_cast<uint64_t>(&breakpoint_self_test_word);
  attr.bp_len = HW_BREAKPOINT_LEN_8;
  const long opened = open_counter(attr);
  if (opened < 0) {
    report.checks.push_back({"hardware_breakpoints", CheckStatus::missing,
                             std::string("perf_event_open(PERF_TYPE_BREAKPOINT) failed: ") + std::strerror(errno),
                             "xref watch cannot use debug registers on this host"});
    return;
  }
  const int fd = static_cast<int>(opened);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  for (int i = 0; i < kBreakpointWrites; ++i) breakpoint_self_test_word = breakpoint_self_test_word + 1;
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  const uint64_t hits = read_counter(fd);
  close(fd);
  const std::string counted = "a write breakpoint on the helper's own variable counted " + std::to_string(hits) +
                              " of " + std::to_string(kBreakpointWrites) + " writes";
  if (hits == static_cast<uint64_t>(kBreakpointWrites)) {
    report.checks.push_back({"hardware_breakpoints", CheckStatus::ok, counted, ""});
  } else {
    report.checks.push_back({"hardware_breakpoints", CheckStatus::failed,
                             counted + ": perf_event_open succeeds but hardware breakpoints do not fire "
                                       "(typical of a VM whose hypervisor does not pass debug registers through)",
                             "xref watch cannot rely on hardware watchpoints here"});
  }
}

}  // namespace xref
