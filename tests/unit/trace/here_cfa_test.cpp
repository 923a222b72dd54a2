#include "trace/planning/here_cfa.h"

#include <gtest/gtest.h>

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
