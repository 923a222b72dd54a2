// What x86 debug registers can watch, checked before any breakpoint is
// opened: 4 per thread (DR0-DR3), less those a debugger holds; each watches
// 1, 2, 4 or 8 bytes at an address aligned to that length; they trap on a
// write, or on a read or write, never on a read alone. And whether they
// fire on this host at all (attach/breakpoint_self_test).
#pragma once

#include <cstdint>
#include <string>

#include "attach/breakpoint_self_test.h"
#include "result.h"
#include "watch/plan.h"
#include "watch/request.h"

namespace xref {

inline constexpr uint32_t kDebugRegistersPerThread = 4;

// The bp_type of the breakpoints: HW_BREAKPOINT_W for "write", _RW for
// "rw"; anything else (`read`) is a debug_register_rule error.
Result<uint32_t> hw_breakpoint_type(const std::string& access);
// HW_BREAKPOINT_LEN_* for a range, or a debug_register_rule error naming it.
Result<uint32_t> hw_breakpoint_length(const WatchRange& range, uint32_t index);
// Every range and the access, then the slots: debug_register_rule or
// debug_registers_exhausted ("4 debug registers per thread, the debugger
// uses 1: 3 free, 5 ranges asked").
Result<void> check_hw_rules(const WatchPlan& plan, const WatchRequest& request);
// The slots alone: `ranges` breakpoints per thread when the debugger holds
// `debugger_slots`.
Result<void> check_hw_slots(size_t ranges, uint32_t debugger_slots);
// --backend hw where the self-test says they do not fire: a
// debug_registers_do_not_fire error naming what it counted.
Result<void> check_hw_fires(const BreakpointSelfTest& test);
// The self-test's result in the words the refusal and `auto`'s reason use:
// "doctor's self-test counted 0 of 100 writes".
std::string self_test_words(const BreakpointSelfTest& test);

}  // namespace xref
