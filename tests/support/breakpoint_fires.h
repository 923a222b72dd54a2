// A test's own look at whether x86 debug registers fire here, independent
// of xref's self-test (helper/attach/breakpoint_self_test): a write
// breakpoint on a variable of the test, written `writes` times, must count
// every write. The doctor and watch tests compare xref's verdict with it.
#pragma once

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace xref::test {

inline volatile uint64_t breakpoint_test_word = 0;

inline bool breakpoints_fire_here(int writes = 100) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = reinterpret_cast<uint64_t>(&breakpoint_test_word);
  attr.bp_len = HW_BREAKPOINT_LEN_8;
  attr.exclude_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  for (int i = 0; i < writes; ++i) breakpoint_test_word = breakpoint_test_word + 1;
  uint64_t count = 0;
  const bool read_ok = read(static_cast<int>(fd), &count, sizeof count) == sizeof count;
  close(static_cast<int>(fd));
  return read_ok && count == static_cast<uint64_t>(writes);
}

}  // namespace xref::test
