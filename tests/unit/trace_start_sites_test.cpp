#include "trace/start_sites.h"

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
  const std::vector<ProbeAddress> probes = {{0x5000, "entry of a"}, {0x7000, "ret of c"}};
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

namespace xref {
namespace {

HereFrame here_at(uint64_t cfa, std::optional<uint64_t> sp) {
  HereFrame frame;
  frame.tid = 1;
  frame.pc = 0x401000;
  frame.cfa = cfa;
  frame.sp = sp;
  return frame;
}

constexpr StackRange kStack{0x7ffd0000'0000, 0x7ffd0002'0000};

TEST(HereCfa, TheDebuggersCfaStandsWhenTheRuleAgrees) {
  auto chosen = choose_here_cfa(here_at(0x7ffd0001'0010, 0x7ffd0001'0008), 0x7ffd0001'0010, kStack, "rsp+8");
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  EXPECT_EQ(chosen->cfa, 0x7ffd0001'0010u);
  EXPECT_TRUE(chosen->warning.empty());
}

// LLDB once gave a heap address at the first instruction of a function with
// a .cold part: the rule's CFA (rsp+8) wins, and the user is told.
TEST(HereCfa, TheUnwindRuleOverrulesAHeapAddress) {
  auto chosen = choose_here_cfa(here_at(0x55d0'1234'5000, 0x7ffd0001'0008), 0x7ffd0001'0010, kStack, "rsp+8");
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  EXPECT_EQ(chosen->cfa, 0x7ffd0001'0010u);
  EXPECT_NE(chosen->warning.find("disagrees with the .eh_frame rule"), std::string::npos) << chosen->warning;
  EXPECT_NE(chosen->warning.find("0x55d012345000"), std::string::npos) << chosen->warning;
  EXPECT_NE(chosen->warning.find("rsp+8 = 0x7ffd00010010"), std::string::npos) << chosen->warning;
}

TEST(HereCfa, WithoutARuleACfaOffTheStackIsRefused) {
  auto chosen = choose_here_cfa(here_at(0x55d0'1234'5000, 0x7ffd0001'0008), std::nullopt, kStack, "");
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(chosen.error().message.find("is not above its sp"), std::string::npos) << chosen.error().message;
  // Below sp is no better than off the stack.
  EXPECT_FALSE(choose_here_cfa(here_at(0x7ffd0001'0000, 0x7ffd0001'0008), std::nullopt, kStack, "").ok());
}

TEST(HereCfa, AFrontEndThatSendsNoSpIsTrusted) {
  auto chosen = choose_here_cfa(here_at(0x55d0'1234'5000, std::nullopt), std::nullopt, std::nullopt, "");
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->cfa, 0x55d0'1234'5000u);
}

}  // namespace
}  // namespace xref
