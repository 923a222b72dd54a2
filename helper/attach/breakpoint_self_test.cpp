#include "attach/breakpoint_self_test.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xref {
namespace {

// The self-test writes this variable; a working breakpoint counts each write.
volatile uint64_t breakpoint_self_test_word = 0;
constexpr int kBreakpointWrites = 100;

}  // namespace

BreakpointSelfTest run_breakpoint_self_test() {
  BreakpointSelfTest test;
  test.expected = kBreakpointWrites;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = reinterpret_cast<uint64_t>(&breakpoint_self_test_word);
  attr.bp_len = HW_BREAKPOINT_LEN_8;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long opened = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (opened < 0) {
    test.open_errno = errno;
    test.line = std::string("perf_event_open(PERF_TYPE_BREAKPOINT) failed: ") + std::strerror(test.open_errno);
    test.hint = "xref watch cannot use debug registers on this host";
    return test;
  }
  test.opened = true;
  const int fd = static_cast<int>(opened);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  for (int i = 0; i < kBreakpointWrites; ++i) breakpoint_self_test_word = breakpoint_self_test_word + 1;
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  uint64_t hits = 0;
  if (read(fd, &hits, sizeof hits) != sizeof hits) hits = 0;
  close(fd);
  test.counted = hits;
  test.fires = hits == test.expected;
  test.counted_text = "counted " + std::to_string(hits) + " of " + std::to_string(test.expected) + " writes";
  test.line = "a write breakpoint on the helper's own variable " + test.counted_text;
  if (!test.fires) {
    test.line += ": perf_event_open succeeds but hardware breakpoints do not fire "
                 "(typical of a VM whose hypervisor does not pass debug registers through)";
    test.hint = "xref watch cannot rely on hardware watchpoints here";
  }
  return test;
}

const BreakpointSelfTest& breakpoint_self_test() {
  static const BreakpointSelfTest answer = run_breakpoint_self_test();
  return answer;
}

}  // namespace xref
