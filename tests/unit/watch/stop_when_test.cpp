// --stop-when's condition over value and old, lowered as the BPF program
// runs it (evaluate_program is the same loop), and the debugger's
// expressions of a watch: which words are evaluated and how their answers
// become ranges.
#include <gtest/gtest.h>

#include "filter_program.h"
#include "watch/debugger_expressions.h"
#include "watch/stop_when.h"

namespace xref {
namespace {

TEST(WatchStopWhen, ConditionOverValueAndOld) {
  WatchRequest request;
  request.stop_when = "value == 5001 && old != 0";
  auto program = compile_watch_stop(request);
  ASSERT_TRUE(program) << program.error().message;
  ASSERT_TRUE(program->has_value());
  const uint64_t holds[] = {5001, 1};
  const uint64_t old_zero[] = {5001, 0};
  const uint64_t other[] = {4001, 1};
  EXPECT_TRUE(evaluate_program(**program, holds));
  EXPECT_FALSE(evaluate_program(**program, old_zero));
  EXPECT_FALSE(evaluate_program(**program, other));
  request.stop_when.clear();
  auto none = compile_watch_stop(request);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST(WatchStopWhen, ANameOtherThanValueOrOldIsRefusedNamingTheOption) {
  WatchRequest request;
  request.stop_when = "amount > 3";
  auto program = compile_watch_stop(request);
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().message.rfind("--stop-when: ", 0), 0u) << program.error().message;
}

WatchRequest in_debugger(std::vector<std::string> addresses, std::vector<std::string> follows = {}) {
  WatchRequest request;
  request.addresses = std::move(addresses);
  request.follows = std::move(follows);
  request.debugger.present = true;
  return request;
}

TEST(WatchDebuggerExpressions, LiteralAddressesStayAndEverythingElseIsEvaluated) {
  WatchRequest request = in_debugger({"0x7f0000001000:4", "order->amount", "*buf@64"}, {"cfg->items->+8:16"});
  auto expressions = watch_expressions(request);
  ASSERT_TRUE(expressions) << expressions.error().message;
  ASSERT_EQ(expressions->size(), 3u);
  EXPECT_EQ((*expressions)[0].expression, "order->amount");
  EXPECT_EQ((*expressions)[0].index, 0u);
  EXPECT_EQ((*expressions)[1].expression, "*buf");
  EXPECT_EQ((*expressions)[1].count, 64u);
  EXPECT_EQ((*expressions)[2].expression, "cfg->items");
  EXPECT_TRUE((*expressions)[2].follow);
  std::vector<EvaluatedExpression> evaluated = {{0, 0x5000, 8, "long", std::nullopt},
                                                {1, 0x6000, 1, "char", std::nullopt},
                                                {2, 0x7000, 8, "struct item *", std::nullopt}};
  ASSERT_TRUE(apply_evaluations(request, *expressions, evaluated));
  EXPECT_EQ(request.addresses, (std::vector<std::string>{"0x7f0000001000:4", "0x5000:8", "0x6000:64"}));
  EXPECT_EQ(request.address_labels, (std::vector<std::string>{"", "order->amount", "*buf@64"}));
  EXPECT_EQ(request.follows, (std::vector<std::string>{"0x7000->+8:16"}));
  EXPECT_EQ(request.follow_labels, (std::vector<std::string>{"cfg->items->+8:16"}));
}

TEST(WatchDebuggerExpressions, SizeLocationAndErrors) {
  WatchRequest request = in_debugger({"p"});
  request.location = true;
  auto expressions = watch_expressions(request);
  ASSERT_TRUE(expressions);
  // -l with no pointee size: 8 bytes.
  ASSERT_TRUE(apply_evaluations(request, *expressions, {{0, 0x9000, 0, "long", std::nullopt}}));
  EXPECT_EQ(request.addresses[0], "0x9000:8");
  WatchRequest sized = in_debugger({"x"});
  sized.size = 2;
  auto sized_expressions = watch_expressions(sized);
  ASSERT_TRUE(apply_evaluations(sized, *sized_expressions, {{0, 0xa000, 8, "long", std::nullopt}}));
  EXPECT_EQ(sized.addresses[0], "0xa000:2");
  WatchRequest failing = in_debugger({"nosuch"});
  auto failing_expressions = watch_expressions(failing);
  auto failed = apply_evaluations(failing, *failing_expressions, {{0, 0, 0, "", std::string("No symbol \"nosuch\".")}});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "watch \"nosuch\": No symbol \"nosuch\"");
  EXPECT_FALSE(watch_expressions(in_debugger({"buf@0"})));
  WatchRequest plain;
  plain.addresses = {"g_total"};
  EXPECT_TRUE(watch_expressions(plain)->empty());
}

}  // namespace
}  // namespace xref
