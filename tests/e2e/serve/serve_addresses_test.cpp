// Addresses as the debugger shows them, in requests that carry a debugger's
// context, on Debian's redis-server: a bare 0xVA is live (its static VA is
// the one /proc/PID/maps and nm -D give), in `probe`, trace's --start and
// --functions; a live address inside an instruction, outside any module, or
// a static VA typed where a live one is meant, is refused with what to type.
#include <gtest/gtest.h>

#include <sstream>

#include "redis_target.h"
#include "sample_target.h"
#include "serve_client.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

constexpr const char* kFunction = "setCommand";

void handshake(ServeClient& helper) {
  const auto hello = helper.read();
  ASSERT_EQ(hello["type"], "hello") << hello.dump();
  const auto answer = helper.request("hello", {{"protocol", 1}, {"client", "serve_addresses_test"}});
  ASSERT_TRUE(answer.contains("result")) << answer.dump();
}

std::string module_name() { return RedisTarget::executable().substr(RedisTarget::executable().rfind('/') + 1); }

// The start of the process's [stack], from /proc/PID/maps.
uint64_t stack_start(const RedisTarget& redis) {
  for (const std::string& line : command_lines("cat /proc/" + redis.pid_text() + "/maps")) {
    if (line.find("[stack]") != std::string::npos) return std::stoull(line.substr(0, line.find('-')), nullptr, 16);
  }
  throw std::runtime_error("no [stack] in /proc/" + redis.pid_text() + "/maps");
}

class ServeAddresses : public ::testing::Test {
 protected:
  nlohmann::json start(const std::vector<std::string>& argv) {
    return helper_.request("session.start", {{"argv", argv}, {"context", {{"pid", redis_.pid()}}}});
  }
  void stop(const nlohmann::json& started) {
    EXPECT_TRUE(helper_.request("session.stop", {{"session", started["result"]["session"]}}).contains("result"));
  }
  void SetUp() override { handshake(helper_); }

  RedisTarget redis_;
  ServeClient helper_;
  const uint64_t function_ = RedisTarget::nm_dynamic(kFunction);
  const std::vector<uint64_t> starts_ = RedisTarget::instructions(kFunction);
};

TEST_F(ServeAddresses, BareAddressFromADebuggerIsLive) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ASSERT_GE(starts_.size(), 4u);
  const uint64_t static_va = starts_[2];
  const std::string live = hex(redis_.live(static_va));
  const auto probed = start({"probe", live, "--duration-ms", "0"});
  ASSERT_TRUE(probed.contains("result")) << probed.dump();
  const auto& address = probed["result"]["addresses"][0];
  EXPECT_EQ(address["address"], live) << "named as typed";
  EXPECT_EQ(address["static_va"], hex(static_va));
  EXPECT_EQ(address["live"], live);
  EXPECT_EQ(address["function"], kFunction);
  EXPECT_EQ(address["module"], module_name());
  stop(probed);

  // A window opening at that instruction, and setCommand traced by its live start.
  const auto traced = start({"trace", "--start", live, "--functions", hex(redis_.live(function_))});
  ASSERT_TRUE(traced.contains("result")) << traced.dump();
  stop(traced);

  // module:0xVA names a file: static, in a debugger too.
  const auto by_module = start({"probe", module_name() + ":" + hex(static_va), "--duration-ms", "0"});
  ASSERT_TRUE(by_module.contains("result")) << by_module.dump();
  EXPECT_EQ(by_module["result"]["addresses"][0]["live"], live);
  stop(by_module);
}

TEST_F(ServeAddresses, LiveAddressesThatCannotBeProbedSayWhy) {
  ASSERT_GE(starts_.size(), 4u);
  size_t wide = 0;
  while (wide + 1 < starts_.size() && starts_[wide + 1] - starts_[wide] < 2) ++wide;
  ASSERT_LT(wide + 1, starts_.size());
  const uint64_t slide = redis_.live(0);
  const std::string inside = hex(slide + starts_[wide] + 1);
  const auto mid = start({"probe", inside, "--duration-ms", "0"});
  ASSERT_TRUE(mid.contains("error")) << mid.dump();
  EXPECT_EQ(mid["error"]["code"], "not_an_instruction");
  EXPECT_NE(mid["error"]["message"].get<std::string>().find(
                "probe " + inside + " (" + module_name() + ":" + hex(starts_[wide] + 1) + ", " + kFunction + "+" +
                hex(starts_[wide] + 1 - function_) + "): " + hex(starts_[wide] + 1) + " is inside the"),
            std::string::npos)
      << mid.dump();
  // The starts on either side, as live addresses: what the user types here.
  EXPECT_EQ(mid["error"]["hint"], "use the instruction start " + hex(slide + starts_[wide]) + " or the next one, " +
                                      hex(slide + starts_[wide + 1]));

  const std::string stack = hex(stack_start(redis_));
  const auto anonymous = start({"probe", stack, "--duration-ms", "0"});
  ASSERT_TRUE(anonymous.contains("error")) << anonymous.dump();
  EXPECT_EQ(anonymous["error"]["code"], "address_unmapped");
  EXPECT_NE(anonymous["error"]["message"].get<std::string>().find(stack + " is not in file-backed code of the process"),
            std::string::npos)
      << anonymous.dump();

  // A static VA typed where a live address is meant.
  const uint64_t static_va = starts_[2];
  const auto mixed = start({"probe", hex(static_va), "--duration-ms", "0"});
  ASSERT_TRUE(mixed.contains("error")) << mixed.dump();
  EXPECT_EQ(mixed["error"]["code"], "address_unmapped");
  const std::string symbolic = std::string(kFunction) + "+" + hex(static_va - function_);
  EXPECT_NE(mixed["error"]["message"].get<std::string>().find(
                hex(static_va) + " is no live address of this process (unmapped); as a static VA of " + module_name() +
                " it is " + symbolic),
            std::string::npos)
      << mixed.dump();
  EXPECT_EQ(mixed["error"]["hint"], "in a debugger a bare address is live: for the static VA write " + module_name() +
                                        ":" + hex(static_va) + " or " + symbolic);

  // --functions takes functions: a live address inside one is refused.
  const auto listed = start({"trace", "--start", kFunction, "--functions", hex(slide + starts_[2])});
  ASSERT_TRUE(listed.contains("error")) << listed.dump();
  EXPECT_NE(listed["error"]["message"].get<std::string>().find("is inside " + std::string(kFunction) + " (starts at " +
                                                               hex(slide + function_) + "), not at a function start"),
            std::string::npos)
      << listed.dump();
}

}  // namespace
}  // namespace xref::test
