// xref watch on a program nobody here wrote: Debian's redis-server
// (stripped, dynamic symbols only), its command counter. `server` is an
// exported object (nm -D); which 8 bytes of it count commands is found from
// redis's own statistics (INFO stats: total_commands_processed), with no
// debug information. The watch's writes of that counter must be redis's
// count exactly: one +1 per command, from the value at attach to the one
// INFO reports, each by the store in `call` (nm -D).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "redis_target.h"
#include "watch_harness.h"

namespace xref::test {
namespace {

// An exported object's static VA and size (nm -D -S).
std::pair<uint64_t, uint64_t> dynamic_object(const std::string& name) {
  for (const std::string& line : command_lines("nm -D -S --defined-only " + RedisTarget::executable())) {
    std::istringstream fields(line);
    std::string address, size, type, symbol;
    if (fields >> address >> size >> type >> symbol && symbol == name) {
      return {std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
  }
  throw std::runtime_error("nm -D -S has no object " + name);
}

std::vector<uint8_t> read_memory(pid_t pid, uint64_t address, size_t length) {
  std::vector<uint8_t> bytes(length);
  const int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  const ssize_t got = fd < 0 ? -1 : pread(fd, bytes.data(), length, static_cast<off_t>(address));
  if (fd >= 0) close(fd);
  bytes.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return bytes;
}

uint64_t word_at(const std::vector<uint8_t>& bytes, size_t offset) {
  uint64_t value = 0;
  std::memcpy(&value, bytes.data() + offset, 8);
  return value;
}

TEST(WatchRedis, ItsCommandCounterEqualsRedisOwnCount) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RedisTarget redis;
  const auto [server_va, server_size] = dynamic_object("server");
  const uint64_t server = redis.live(server_va);
  // The 8 aligned bytes of `server` that hold INFO's count once INFO itself
  // was counted, round after round: SETs on one connection, INFO on
  // another, so the connection counter (which also grows) falls out.
  std::set<size_t> offsets;
  uint64_t counted = 0;
  for (int round = 0; round < 4; ++round) {
    redis.sets(3);
    counted = redis.info_stat("total_commands_processed") + 1;
    const std::vector<uint8_t> bytes = read_memory(redis.pid(), server, server_size);
    ASSERT_EQ(bytes.size(), server_size);
    std::set<size_t> holding;
    for (size_t offset = 0; offset + 8 <= bytes.size(); offset += 8) {
      if (word_at(bytes, offset) == counted && (round == 0 || offsets.count(offset))) holding.insert(offset);
    }
    offsets.swap(holding);
  }
  ASSERT_EQ(offsets.size(), 1u) << "no single counter in server tracks total_commands_processed";
  const size_t offset = *offsets.begin();
  std::ostringstream spec;
  spec << "server+0x" << std::hex << offset << ":8";

  BackgroundXref xref({"watch", "--pid", redis.pid_text(), "--backend", "stores", "--json", "--duration-ms", "0",
                       "--max-events", "0", spec.str()});
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const pid_t helper = xref.pid();
  redis.sets(25);
  const uint64_t before_info = redis.info_stat("total_commands_processed");  // INFO is counted after its reply
  kill(helper, SIGINT);
  const XrefRun run = xref.finish();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  const auto& result = document["result"];
  EXPECT_EQ(result["ranges"][0]["symbol"], spec.str().substr(0, spec.str().find(':'))) << result["ranges"][0].dump();
  EXPECT_EQ(result["lost"], 0);
  EXPECT_EQ(result["in_flight_full"], 0);
  // complete says whether a store in scope took no probe (redis has one the kernel refuses).
  EXPECT_EQ(result["complete"].get<bool>(), result["sites"]["refused"] == 0) << result["sites"].dump();
  EXPECT_TRUE(result["unobserved_changes"].empty()) << result["unobserved_changes"].dump();
  const auto& writes = result["writes"];
  ASSERT_EQ(writes.size(), before_info + 1 - counted) << "one write per command redis counted, INFO's included";
  EXPECT_GE(writes.size(), 26u);
  const uint64_t call_va = RedisTarget::nm_dynamic("call");
  uint64_t expected_old = counted;
  for (const auto& write : writes) {
    SCOPED_TRACE(write.dump());
    EXPECT_EQ(std::stoull(write["old"].get<std::string>(), nullptr, 16), expected_old);
    EXPECT_EQ(std::stoull(write["new"].get<std::string>(), nullptr, 16), expected_old + 1);
    EXPECT_EQ(write["tid"], redis.pid());  // the main thread runs commands
    EXPECT_EQ(write["writer"]["function"], "call");
    EXPECT_GE(hex_field(write["writer"]["static_va"]), call_va);
    ++expected_old;
  }
  EXPECT_EQ(redis.info_stat("total_commands_processed"), before_info + 1) << "redis runs on after the watch";
}

}  // namespace
}  // namespace xref::test
