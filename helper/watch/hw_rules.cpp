#include "watch/hw_rules.h"

#include <linux/hw_breakpoint.h>

#include <cstring>

#include "hex.h"

namespace xref {
namespace {

std::string range_name(const WatchRange& range, uint32_t index) {
  std::string name = "range [" + std::to_string(index) + "] ";
  name += range.spelled.empty() ? to_hex(range.address) : range.spelled;
  return name;
}

}  // namespace

Result<uint32_t> hw_breakpoint_type(const std::string& access) {
  if (access == "write") return static_cast<uint32_t>(HW_BREAKPOINT_W);
  if (access == "rw") return static_cast<uint32_t>(HW_BREAKPOINT_RW);
  if (access == "read") {
    return make_error(ErrorCode::debug_register_rule,
                      "--access read: x86 debug registers cannot watch reads alone (they trap on writes, or on "
                      "reads and writes)",
                      "use --access rw to see reads and writes, or --access write");
  }
  return make_error(ErrorCode::invalid_argument, "--access " + access + ": not write or rw",
                    "use --access write or --access rw");
}

Result<uint32_t> hw_breakpoint_length(const WatchRange& range, uint32_t index) {
  uint32_t length = 0;
  switch (range.length) {
    case 1: length = HW_BREAKPOINT_LEN_1; break;
    case 2: length = HW_BREAKPOINT_LEN_2; break;
    case 4: length = HW_BREAKPOINT_LEN_4; break;
    case 8: length = HW_BREAKPOINT_LEN_8; break;
    default:
      return make_error(ErrorCode::debug_register_rule,
                        range_name(range, index) + ": " + std::to_string(range.length) +
                            " bytes; an x86 debug register watches 1, 2, 4 or 8",
                        "use --backend stores for a range of any length, or watch aligned pieces of 1, 2, 4 or 8 "
                        "bytes");
  }
  if (range.address % range.length != 0) {
    return make_error(ErrorCode::debug_register_rule,
                      range_name(range, index) + ": " + to_hex(range.address) + " is not aligned to its " +
                          std::to_string(range.length) + " bytes; an x86 debug register needs an aligned address",
                      "use --backend stores, or a length the address is aligned to");
  }
  return length;
}

Result<void> check_hw_slots(size_t ranges, uint32_t debugger_slots) {
  const uint32_t used = debugger_slots > kDebugRegistersPerThread ? kDebugRegistersPerThread : debugger_slots;
  const uint32_t free = kDebugRegistersPerThread - used;
  if (ranges <= free) return {};
  std::string message = std::to_string(kDebugRegistersPerThread) + " debug registers per thread";
  if (used > 0) message += ", the debugger uses " + std::to_string(used);
  message += ": " + std::to_string(free) + " free, " + std::to_string(ranges) + (ranges == 1 ? " range" : " ranges") +
             " asked";
  return make_error(ErrorCode::debug_registers_exhausted, message,
                    "watch fewer ranges (a --follow counts its slot and its target), or use --backend stores, "
                    "which has no slot limit");
}

Result<void> check_hw_rules(const WatchPlan& plan, const WatchRequest& request) {
  if (auto type = hw_breakpoint_type(request.access); !type) return type.error();
  for (uint32_t index = 0; index < plan.ranges.size(); ++index) {
    // A --follow target parked at a null pointer has no address yet; its
    // length must still fit a register.
    WatchRange range = plan.ranges[index];
    if (range.parked || (range.follow_slot && range.address == 0)) range.address = range.length;
    if (auto length = hw_breakpoint_length(range, index); !length) return length.error();
  }
  return check_hw_slots(plan.ranges.size(), request.debugger_hw_slots);
}

std::string self_test_words(const BreakpointSelfTest& test) {
  if (!test.opened) {
    return std::string("doctor's self-test could not open a breakpoint (perf_event_open: ") +
           std::strerror(test.open_errno) + ")";
  }
  return "doctor's self-test " + test.counted_text;
}

Result<void> check_hw_fires(const BreakpointSelfTest& test) {
  if (test.fires) return {};
  return make_error(ErrorCode::debug_registers_do_not_fire,
                    "debug registers do not fire on this host: " + self_test_words(test),
                    "use --backend stores (no debug registers needed); `xref doctor` shows the self-test");
}

}  // namespace xref
