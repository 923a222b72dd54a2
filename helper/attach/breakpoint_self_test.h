// Whether x86 debug registers fire on this host, found by trying: a write
// breakpoint (perf_event_open(PERF_TYPE_BREAKPOINT)) on a variable of the
// helper, written 100 times, must count 100. Some hypervisors accept the
// breakpoint and never deliver the debug exception (the counter stays at
// 0), so opening the event proves nothing. `xref doctor` prints this
// answer; `xref watch` decides with it whether its `hw` engine can run.
#pragma once

#include <cstdint>
#include <string>

namespace xref {

struct BreakpointSelfTest {
  bool opened = false;      // perf_event_open of the breakpoint succeeded
  int open_errno = 0;       // why it did not
  bool fires = false;       // every write was counted
  uint64_t counted = 0;
  uint64_t expected = 0;
  std::string counted_text;  // "counted 0 of 100 writes" (empty when the event did not open)
  std::string line;          // doctor's detail line: what was tried and what happened
  std::string hint;          // doctor's hint when it does not fire (empty when it does)
};

// The self-test, run once per helper process: later calls (a serve
// session's watch after doctor, every watch of one helper) get the first
// answer. Thread-safe.
const BreakpointSelfTest& breakpoint_self_test();

// The test itself, not cached.
BreakpointSelfTest run_breakpoint_self_test();

}  // namespace xref
