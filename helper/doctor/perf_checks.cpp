// Doctor checks on perf events: is there a hardware PMU, do software clocks
// count, and do hardware breakpoints fire (on some VMs perf_event_open of a
// breakpoint succeeds but the counter never moves: attach/breakpoint_self_test,
// which xref watch asks too).
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "attach/breakpoint_self_test.h"
#include "doctor/checks.h"

namespace xref {
namespace {

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
  const BreakpointSelfTest& test = breakpoint_self_test();
  const CheckStatus status = !test.opened ? CheckStatus::missing : test.fires ? CheckStatus::ok : CheckStatus::failed;
  report.checks.push_back({"hardware_breakpoints", status, test.line, test.hint});
}

}  // namespace xref
