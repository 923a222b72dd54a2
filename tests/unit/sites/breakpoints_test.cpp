// bp:N references and the breakpoint-collision guard, over a debugger
// context as the front ends send it.
#include "sites/breakpoints.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

DebuggerContext two_breakpoints() {
  DebuggerContext debugger;
  debugger.present = true;
  debugger.breakpoints.push_back({1, true, {{"1.1", 0x5000, true}, {"1.2", 0x6000, true}}});
  debugger.breakpoints.push_back({2, true, {{"2.1", 0x7000, true}}});
  return debugger;
}

TEST(BreakpointReference, ParsesOnlyBpColonNumber) {
  EXPECT_EQ(breakpoint_reference("bp:3"), 3u);
  EXPECT_EQ(breakpoint_reference("bp:0x10"), 16u);
  EXPECT_FALSE(breakpoint_reference("bp:"));
  EXPECT_FALSE(breakpoint_reference("bp:0"));
  EXPECT_FALSE(breakpoint_reference("bp:x"));
  EXPECT_FALSE(breakpoint_reference("handle_request"));
  EXPECT_FALSE(breakpoint_reference("libc.so.6:malloc"));
}

TEST(BreakpointCollisions, ProbeOnAnEnabledLocationIsRefusedWithBothNamed) {
  const auto result = check_breakpoint_collisions({{0x4000, "entry of a"}, {0x6000, "call site of b"}},
                                                  two_breakpoints(), {});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::breakpoint_collision);
  EXPECT_NE(result.error().message.find("call site of b"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("breakpoint 1.2"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().hint.find("--allow-breakpoint-collision"), std::string::npos);
  EXPECT_EQ(error_exit_status(result.error().code), 14);
}

TEST(BreakpointCollisions, DisabledOrExemptBreakpointsDoNotCollide) {
  DebuggerContext debugger = two_breakpoints();
  const std::vector<LiveProbe> probes = {{0x5000, "entry of a"}, {0x7000, "ret of c"}};
  EXPECT_FALSE(check_breakpoint_collisions(probes, debugger, {}));
  // Breakpoint 1 is the --start bp:1 being disabled; breakpoint 2 is off.
  debugger.breakpoints[1].enabled = false;
  EXPECT_TRUE(check_breakpoint_collisions(probes, debugger, {1}));
  // A disabled location of an enabled breakpoint does not collide either.
  debugger.breakpoints[1].enabled = true;
  debugger.breakpoints[1].locations[0].enabled = false;
  EXPECT_TRUE(check_breakpoint_collisions(probes, debugger, {1}));
  EXPECT_FALSE(check_breakpoint_collisions(probes, debugger, {2}));
}

}  // namespace
}  // namespace xref
