// The x86 rules of `xref watch --backend hw`, checked before any breakpoint
// is opened, and the refusal where debug registers do not fire: the live
// self-test decides it here (it is testable on every host: hw either
// starts, or is refused with the self-test's own count).
#include <linux/hw_breakpoint.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include "attach/breakpoint_self_test.h"
#include "watch/engine.h"
#include "watch/hw_engine.h"
#include "watch/hw_rules.h"

namespace xref {
namespace {

WatchRange range_at(uint64_t address, uint32_t length, std::string spelled = {}) {
  WatchRange range;
  range.address = address;
  range.length = length;
  range.spelled = std::move(spelled);
  return range;
}

WatchPlan plan_of(std::vector<WatchRange> ranges) {
  WatchPlan plan;
  plan.pid = getpid();
  plan.ranges = std::move(ranges);
  return plan;
}

TEST(HwRules, AccessWriteAndReadWriteButNeverReadAlone) {
  EXPECT_EQ(*hw_breakpoint_type("write"), static_cast<uint32_t>(HW_BREAKPOINT_W));
  EXPECT_EQ(*hw_breakpoint_type("rw"), static_cast<uint32_t>(HW_BREAKPOINT_RW));
  const auto read = hw_breakpoint_type("read");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::debug_register_rule);
  EXPECT_EQ(error_exit_status(read.error().code), 20);
  EXPECT_EQ(read.error().message,
            "--access read: x86 debug registers cannot watch reads alone (they trap on writes, or on reads and "
            "writes)");
  EXPECT_EQ(hw_breakpoint_type("exec").error().code, ErrorCode::invalid_argument);
}

TEST(HwRules, LengthsOneTwoFourEightAligned) {
  EXPECT_EQ(*hw_breakpoint_length(range_at(0x1000, 1), 0), static_cast<uint32_t>(HW_BREAKPOINT_LEN_1));
  EXPECT_EQ(*hw_breakpoint_length(range_at(0x1002, 2), 0), static_cast<uint32_t>(HW_BREAKPOINT_LEN_2));
  EXPECT_EQ(*hw_breakpoint_length(range_at(0x1004, 4), 0), static_cast<uint32_t>(HW_BREAKPOINT_LEN_4));
  EXPECT_EQ(*hw_breakpoint_length(range_at(0x1008, 8), 0), static_cast<uint32_t>(HW_BREAKPOINT_LEN_8));
  EXPECT_EQ(*hw_breakpoint_length(range_at(0x1003, 1), 0), static_cast<uint32_t>(HW_BREAKPOINT_LEN_1));

  const auto three = hw_breakpoint_length(range_at(0x1000, 3, "g_config+0x10"), 2);
  ASSERT_FALSE(three);
  EXPECT_EQ(three.error().code, ErrorCode::debug_register_rule);
  EXPECT_EQ(three.error().message, "range [2] g_config+0x10: 3 bytes; an x86 debug register watches 1, 2, 4 or 8");
  EXPECT_EQ(hw_breakpoint_length(range_at(0x1000, 16), 0).error().code, ErrorCode::debug_register_rule);
  EXPECT_EQ(hw_breakpoint_length(range_at(0x1000, 0), 0).error().code, ErrorCode::debug_register_rule);

  const auto unaligned = hw_breakpoint_length(range_at(0x1004, 8), 0);
  ASSERT_FALSE(unaligned);
  EXPECT_EQ(unaligned.error().code, ErrorCode::debug_register_rule);
  EXPECT_EQ(unaligned.error().message,
            "range [0] 0x1004: 0x1004 is not aligned to its 8 bytes; an x86 debug register needs an aligned address");
  EXPECT_FALSE(hw_breakpoint_length(range_at(0x1001, 2), 0));
  EXPECT_FALSE(hw_breakpoint_length(range_at(0x1002, 4), 0));
}

TEST(HwRules, FourSlotsPerThreadLessTheDebuggers) {
  EXPECT_TRUE(check_hw_slots(4, 0));
  EXPECT_TRUE(check_hw_slots(3, 1));
  EXPECT_TRUE(check_hw_slots(0, 4));

  const auto five = check_hw_slots(5, 0);
  ASSERT_FALSE(five);
  EXPECT_EQ(five.error().code, ErrorCode::debug_registers_exhausted);
  EXPECT_EQ(error_exit_status(five.error().code), 21);
  EXPECT_EQ(five.error().message, "4 debug registers per thread: 4 free, 5 ranges asked");

  const auto debugger = check_hw_slots(5, 1);
  ASSERT_FALSE(debugger);
  EXPECT_EQ(debugger.error().message, "4 debug registers per thread, the debugger uses 1: 3 free, 5 ranges asked");
  EXPECT_EQ(check_hw_slots(1, 4).error().message,
            "4 debug registers per thread, the debugger uses 4: 0 free, 1 range asked");
  EXPECT_EQ(check_hw_slots(2, 9).error().message,
            "4 debug registers per thread, the debugger uses 4: 0 free, 2 ranges asked");
}

TEST(HwRules, TheWholePlanRangesFirstThenSlots) {
  WatchRequest request;
  EXPECT_TRUE(check_hw_rules(plan_of({range_at(0x1000, 8), range_at(0x1008, 4)}), request));
  // A --follow slot and its target take a register each.
  WatchRange target = range_at(0, 8);
  target.follow_slot = 0;
  WatchRange slot = range_at(0x2000, 8);
  slot.is_slot = true;
  request.debugger_hw_slots = 2;
  EXPECT_TRUE(check_hw_rules(plan_of({slot, target}), request));
  request.debugger_hw_slots = 3;
  EXPECT_EQ(check_hw_rules(plan_of({slot, target}), request).error().message,
            "4 debug registers per thread, the debugger uses 3: 1 free, 2 ranges asked");
  // A bad range is named before the slots are counted.
  request.debugger_hw_slots = 0;
  const auto bad = check_hw_rules(
      plan_of({range_at(0x1000, 8), range_at(0x1000, 8), range_at(0x1000, 8), range_at(0x1000, 8),
               range_at(0x1001, 8)}),
      request);
  EXPECT_EQ(bad.error().code, ErrorCode::debug_register_rule);
  request.access = "read";
  EXPECT_EQ(check_hw_rules(plan_of({range_at(0x1000, 8)}), request).error().code, ErrorCode::debug_register_rule);
}

TEST(HwRules, TheRefusalNamesTheSelfTestsCount) {
  BreakpointSelfTest silent;
  silent.opened = true;
  silent.counted = 0;
  silent.expected = 100;
  silent.counted_text = "counted 0 of 100 writes";
  const auto refused = check_hw_fires(silent);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::debug_registers_do_not_fire);
  EXPECT_EQ(error_exit_status(refused.error().code), 19);
  EXPECT_EQ(refused.error().message, "debug registers do not fire on this host: doctor's self-test counted 0 of 100 writes");
  EXPECT_EQ(refused.error().hint,
            "use --backend stores (no debug registers needed); `xref doctor` shows the self-test");

  BreakpointSelfTest firing = silent;
  firing.fires = true;
  firing.counted = 100;
  EXPECT_TRUE(check_hw_fires(firing));
}

// The live self-test, once per process, and what `--backend hw` and `auto`
// make of it on this host: never a skip.
TEST(HwRules, BackendHwFollowsTheLiveSelfTest) {
  const BreakpointSelfTest& test = breakpoint_self_test();
  EXPECT_EQ(&test, &breakpoint_self_test()) << "the answer is cached per helper process";
  EXPECT_EQ(test.expected, 100u);
  ASSERT_TRUE(test.opened) << test.line;
  EXPECT_EQ(test.fires, test.counted == test.expected);
  EXPECT_EQ(test.counted_text,
            "counted " + std::to_string(test.counted) + " of " + std::to_string(test.expected) + " writes");

  static uint64_t watched = 0;
  const WatchPlan plan = plan_of({range_at(reinterpret_cast<uint64_t>(&watched), 8, "watched")});
  WatchRequest request;
  std::string words;
  EXPECT_EQ(hardware_breakpoints_fire(words), test.fires);
  EXPECT_EQ(words, "doctor's self-test " + test.counted_text);
  request.backend = "auto";
  const auto automatic = choose_watch_backend(plan, request);
  ASSERT_TRUE(automatic) << automatic.error().message;
  request.backend = "hw";
  const auto hw = choose_watch_backend(plan, request);
  if (test.fires) {
    EXPECT_EQ(automatic->backend, "hw");
    EXPECT_EQ(automatic->reason, "debug registers fire here - doctor's self-test counted 100 of 100 writes");
    ASSERT_TRUE(hw) << hw.error().message;
    EXPECT_EQ(hw->backend, "hw");
  } else {
    std::printf("hardware_breakpoints self-test here: %s\n", test.line.c_str());
    EXPECT_EQ(automatic->backend, "stores");
    EXPECT_EQ(automatic->reason, "debug registers do not fire here - doctor's self-test " + test.counted_text);
    ASSERT_FALSE(hw);
    EXPECT_EQ(hw.error().code, ErrorCode::debug_registers_do_not_fire);
    EXPECT_EQ(hw.error().message, "debug registers do not fire on this host: doctor's self-test " + test.counted_text);
    EXPECT_EQ(hw_registers_fire().error().message, hw.error().message);
  }
  // The x86 rules come first, on any host: a 3-byte range is named as such.
  const WatchPlan odd = plan_of({range_at(reinterpret_cast<uint64_t>(&watched), 3, "watched")});
  EXPECT_EQ(choose_watch_backend(odd, request).error().code, ErrorCode::debug_register_rule);
  request.backend = "auto";
  const auto fallback = choose_watch_backend(odd, request);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->backend, "stores");
}

}  // namespace
}  // namespace xref
