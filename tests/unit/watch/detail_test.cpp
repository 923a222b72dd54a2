// watch/detail.h without a process: the filter's names (the fetches, then
// `value` and `old`) lowered as the BPF program runs them, and the rule that
// joins a write's CFA-rule caller to the kernel's frame-pointer walk.
#include <gtest/gtest.h>

#include <vector>

#include "watch/detail.h"

namespace xref {
namespace {

WatchPlan one_range(uint32_t length) {
  WatchPlan plan;
  WatchRange range;
  range.address = 0x1000;
  range.length = length;
  range.spelled = "g";
  plan.ranges.push_back(range);
  return plan;
}

// Slots: fetch 0 is `n`, then `value` (1) and `old` (2).
TEST(WatchDetail, ValueAndOldFollowTheFetchedNames) {
  WatchPlan plan = one_range(4);
  WatchRequest request;
  request.fetch = "n=%di:s32";
  request.filter = "value > old && n < 0";
  ASSERT_TRUE(plan_watch_detail(request, plan));
  ASSERT_TRUE(plan.filter);
  const uint64_t minus_one = static_cast<uint64_t>(-1);
  EXPECT_TRUE(evaluate_program(*plan.filter, std::vector<uint64_t>{minus_one, 5, 4}));
  EXPECT_FALSE(evaluate_program(*plan.filter, std::vector<uint64_t>{minus_one, 4, 5}));
  EXPECT_FALSE(evaluate_program(*plan.filter, std::vector<uint64_t>{1, 5, 4}));
}

TEST(WatchDetail, FourteenFetchesAtMostWithAFilter) {
  WatchPlan plan = one_range(8);
  WatchRequest request;
  for (int i = 0; i < 15; ++i) request.fetch += (i ? "," : "") + std::string("f") + std::to_string(i) + "=%di:u8";
  request.filter = "value == 1";
  auto refused = plan_watch_detail(request, plan);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().hint.find("at most 14"), std::string::npos) << refused.error().hint;
  request.filter.clear();
  EXPECT_TRUE(plan_watch_detail(request, plan));
}

// The walk agrees at frame 1: all of it; it does not (no frame pointers):
// the pc and the caller only; no caller read: the walk as it is; no walk:
// no stack.
TEST(WatchDetail, TheWalkIsKeptOnlyWhereItAgreesWithTheCaller) {
  EXPECT_EQ(watch_stack_frames({0x10, 0x20, 0x30}, 0x20), (std::vector<uint64_t>{0x10, 0x20, 0x30}));
  EXPECT_EQ(watch_stack_frames({0x10, 0x99, 0x30}, 0x20), (std::vector<uint64_t>{0x10, 0x20}));
  EXPECT_EQ(watch_stack_frames({0x10}, 0x20), (std::vector<uint64_t>{0x10, 0x20}));
  EXPECT_EQ(watch_stack_frames({0x10, 0x99}, 0), (std::vector<uint64_t>{0x10, 0x99}));
  EXPECT_TRUE(watch_stack_frames({}, 0x20).empty());
}

}  // namespace
}  // namespace xref
