// Addresses as a debugger prints them, typed in the CLI, on Debian's
// redis-server (stripped, dynamic symbols only): `sym+off` probes that
// instruction (its static VA is nm -D's plus the offset); one inside an
// instruction is refused with the starts on either side, from objdump; a
// live address (from /proc/PID/maps) is refused with its static VA spelt
// out; a misspelt name's hint says `nm -D`, as plain nm finds no symbols.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "redis_target.h"
#include "sample_target.h"
#include "run_xref.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

constexpr const char* kFunction = "setCommand";

// setCommand's instruction starts past its first; at least three.
std::vector<uint64_t> set_command_instructions() {
  auto starts = RedisTarget::instructions(kFunction);
  if (starts.size() < 4) throw std::runtime_error("objdump listed too few instructions of setCommand");
  return starts;
}

// The first instruction of setCommand longer than one byte: an offset
// inside it is no instruction start.
size_t wide_instruction(const std::vector<uint64_t>& starts) {
  for (size_t index = 0; index + 1 < starts.size(); ++index) {
    if (starts[index + 1] - starts[index] > 1) return index;
  }
  throw std::runtime_error("no instruction of setCommand is wider than one byte");
}

std::string module_name() { return RedisTarget::executable().substr(RedisTarget::executable().rfind('/') + 1); }

TEST(ProbeAddresses, SymbolPlusOffsetProbesThatInstruction) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RedisTarget redis;
  const uint64_t start = RedisTarget::nm_dynamic(kFunction);
  const auto starts = set_command_instructions();
  const uint64_t offset = starts[2] - start;
  // SETs until the probe has seen ten of them; the probe stops itself there.
  struct Sender {
    std::atomic<bool> done{false};
    std::thread thread;
    ~Sender() {
      done = true;
      thread.join();
    }
  } sender;
  sender.thread = std::thread([&] {
    while (!sender.done) redis.sets(5);
  });
  for (const std::string& typed : {std::string(kFunction) + "+" + hex(offset),
                                   module_name() + ":" + kFunction + "+" + std::to_string(offset)}) {
    SCOPED_TRACE(typed);
    const XrefRun run = run_xref({"probe", "--pid", redis.pid_text(), typed, "--until-hits", "10", "--json"});
    ASSERT_EQ(run.exit_status, 0) << run.err;
    const auto document = run.json();
    const auto& address = document["addresses"][0];
    EXPECT_EQ(address["address"], typed) << "named as typed";
    EXPECT_EQ(address["static_va"], hex(start + offset));
    EXPECT_EQ(address["probe_va"], hex(start + offset));
    EXPECT_EQ(address["function"], kFunction);
    EXPECT_EQ(address["at_entry"], false);
    EXPECT_EQ(address["hits"], 10);
  }
}

TEST(ProbeAddresses, SymbolPlusOffsetInsideAnInstructionNamesTheStarts) {
  RedisTarget redis;
  const uint64_t start = RedisTarget::nm_dynamic(kFunction);
  const auto starts = set_command_instructions();
  const size_t wide = wide_instruction(starts);
  const uint64_t inside = starts[wide] + 1 - start;
  const std::string typed = std::string(kFunction) + "+" + std::to_string(inside);
  const XrefRun run = run_xref({"probe", "--pid", redis.pid_text(), typed, "--json"});
  EXPECT_EQ(run.exit_status, 13) << run.out;
  const auto error = run.json()["error"];
  EXPECT_EQ(error["code"], "not_an_instruction");
  const std::string message = error["message"];
  EXPECT_EQ(message.rfind("probe " + typed + ": " + hex(start + inside) + " is inside the " +
                              std::to_string(starts[wide + 1] - starts[wide]) + "-byte instruction at " +
                              hex(starts[wide]),
                          0),
            0u)
      << message;
  EXPECT_EQ(error["hint"], "use the instruction start " + std::string(kFunction) + "+" + hex(starts[wide] - start) +
                               " or the next one, " + kFunction + "+" + hex(starts[wide + 1] - start));
  // Past the function's end.
  const XrefRun past = run_xref({"probe", "--pid", redis.pid_text(), std::string(kFunction) + "+0x100000", "--json"});
  EXPECT_EQ(past.exit_status, 2) << past.out;
  EXPECT_NE(past.json()["error"]["message"].get<std::string>().find("is past its end"), std::string::npos) << past.out;
}

// A live address typed in the shell: refused, with the static VA (and
// sym+off) the shell takes, computed here from /proc/PID/maps and nm -D.
TEST(ProbeAddresses, LiveAddressInTheCliIsConvertedForTheUser) {
  RedisTarget redis;
  const uint64_t start = RedisTarget::nm_dynamic(kFunction);
  const auto starts = set_command_instructions();
  const uint64_t static_va = starts[2];
  const uint64_t live = redis.live(static_va);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"probe", "--pid", redis.pid_text(), hex(live), "--json"},
        std::vector<std::string>{"trace", "--pid", redis.pid_text(), "--start", hex(live), "--json"}}) {
    const XrefRun run = run_xref(command);
    EXPECT_EQ(run.exit_status, 8) << run.out;
    const auto error = run.json()["error"];
    EXPECT_EQ(error["code"], "address_unmapped");
    const std::string static_text = module_name() + ":" + hex(static_va);
    const std::string symbolic = std::string(kFunction) + "+" + hex(static_va - start);
    const std::string message = error["message"];
    EXPECT_NE(message.find(hex(live) + " is a live address of this process: its static VA is " + static_text + " (" +
                           symbolic + ")"),
              std::string::npos)
        << message;
    EXPECT_EQ(error["hint"], "in the CLI write " + static_text + " or " + symbolic + ", or pass it from a debugger");
  }
  // The conversion works as said.
  const XrefRun converted = run_xref({"probe", "--pid", redis.pid_text(), module_name() + ":" + hex(static_va),
                                      "--duration-ms", "1", "--json"});
  EXPECT_EQ(converted.exit_status, 0) << converted.err;
}

// redis-server has no .symtab: `nm` prints "no symbols", `nm -D` the names.
TEST(ProbeAddresses, MisspeltNameHintSaysNmDOnlyForDynamicSymbols) {
  RedisTarget redis;
  EXPECT_NE(command_output("nm " + RedisTarget::executable() + " 2>&1 || true").find("no symbols"), std::string::npos);
  const XrefRun stripped = run_xref({"probe", "--pid", redis.pid_text(), "setComand", "--json"});
  EXPECT_EQ(stripped.exit_status, 2);
  EXPECT_NE(stripped.json()["error"]["hint"].get<std::string>().find("nm -D -C"), std::string::npos) << stripped.out;

  SampleTarget sample;
  const XrefRun full = run_xref({"probe", "--pid", sample.pid(), "no_such_function", "--json"});
  EXPECT_EQ(full.exit_status, 2);
  const std::string hint = full.json()["error"]["hint"];
  EXPECT_NE(hint.find("nm -C"), std::string::npos) << hint;
  EXPECT_EQ(hint.find("nm -D"), std::string::npos) << hint;
}

// A misspelt name: the nearest names of the module (edit distance), from
// nm -D's list, as a "did you mean".
TEST(ProbeAddresses, MisspeltNameGetsDidYouMean) {
  RedisTarget redis;
  (void)RedisTarget::nm_dynamic(kFunction);  // nm -D lists it
  const XrefRun run = run_xref({"probe", "--pid", redis.pid_text(), "setComand", "--json"});
  EXPECT_EQ(run.exit_status, 2) << run.out;
  const auto error = run.json()["error"];
  EXPECT_EQ(error["message"], "probe: no function named 'setComand'");
  const std::string hint = error["hint"];
  EXPECT_EQ(hint.rfind("did you mean setCommand", 0), 0u) << hint;
  // Nothing near: no guess.
  const XrefRun far = run_xref({"probe", "--pid", redis.pid_text(), "zzqqxxyy_no_such", "--json"});
  EXPECT_EQ(far.json()["error"]["hint"].get<std::string>().find("did you mean"), std::string::npos) << far.out;
}

// Started by its symlink /usr/bin/redis-server, the process runs
// redis-check-rdb: the document names both, and the module answers to the
// name it was started by.
TEST(ProbeAddresses, SymlinkedExecutableIsNamedAsStarted) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RedisTarget redis;
  ASSERT_NE(RedisTarget::executable(), kRedisServer) << "Debian's redis-server is a symlink";
  const XrefRun run = run_xref({"probe", "--pid", redis.pid_text(), std::string("redis-server:") + kFunction,
                                "--duration-ms", "1", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["process"]["exe_path"], RedisTarget::executable());
  EXPECT_EQ(document["process"]["started_as"], kRedisServer);
  EXPECT_EQ(document["addresses"][0]["static_va"], hex(RedisTarget::nm_dynamic(kFunction)));

  const XrefRun unknown = run_xref({"probe", "--pid", redis.pid_text(), "no-such-module:f", "--json"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_NE(unknown.json()["error"]["hint"].get<std::string>().find(
                module_name() + " (started as " + std::string(kRedisServer) + ")"),
            std::string::npos)
      << unknown.out;

  // Started by its own name, nothing more is said.
  SampleTarget sample;
  const XrefRun plain = run_xref({"maps", "--pid", sample.pid(), "--json"});
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
  EXPECT_TRUE(plain.json()["process"]["started_as"].is_null()) << plain.out;
}

}  // namespace
}  // namespace xref::test
