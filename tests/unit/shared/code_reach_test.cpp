// Reachability over a function's instructions (shared/code_reach.h), on
// hand-made flows: what a jump skips, what follows a ret, a loop, and code
// that only another function's branch enters.
#include "code_reach.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

TEST(CodeReach, FallthroughAndDirectBranchesFromTheEntry) {
  const std::vector<FlowStep> steps = {
      {0x10, Flow::jump, 0x14},              // jmp over the next step
      {0x12, Flow::next, 0},                 // skipped
      {0x14, Flow::conditional_jump, 0x14},  // a loop on itself, then falls through
      {0x16, Flow::stop, 0},                 // ret
      {0x17, Flow::next, 0},                 // after the ret: nothing leads here
      {0x19, Flow::indirect_jump, 0},        // reached only from another function (below)
      {0x1b, Flow::next, 0},                 // after an indirect jump: not by fallthrough
  };
  EXPECT_EQ(reachable_steps(steps, {}), (std::vector<bool>{true, false, true, true, false, false, false}));
  const std::vector<uint64_t> entries = {0x8, 0x13, 0x19, 0x40};  // 0x13 is inside a step: no entry
  EXPECT_EQ(reachable_steps(steps, entries), (std::vector<bool>{true, false, true, true, false, true, false}));
}

TEST(CodeReach, ABranchIntoTheMiddleOfAnInstructionReachesNothing) {
  const std::vector<FlowStep> steps = {{0x10, Flow::jump, 0x13}, {0x12, Flow::next, 0}, {0x15, Flow::stop, 0}};
  EXPECT_EQ(reachable_steps(steps, {}), (std::vector<bool>{true, false, false}));
}

}  // namespace
}  // namespace xref
