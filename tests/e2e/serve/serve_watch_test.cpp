// A `watch` session of `xref serve` (docs/protocol.md, "watch in a
// debugger"): the helper asks the front end to evaluate the expressions
// (prepare.evaluate), takes the addresses and sizes it answers
// (prepared.evaluated), watches while the process runs, prints the writes
// at each stop and the summary at the end. The test plays the debugger: its
// answers are the addresses watch_target prints, and the writes must equal
// the target's own record.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve_client.h"
#include "watch_harness.h"

namespace xref::test {
namespace {

void hello(ServeClient& helper, bool names = false) {
  ASSERT_EQ(helper.read()["protocol"], 2);
  const auto answer = helper.request("hello", {{"protocol", 2}, {"client", "serve_watch_test"}, {"names", names}});
  ASSERT_EQ(answer["result"]["protocol"], 2) << answer.dump();
}

// A debugger that holds no debug register.
nlohmann::json run(ServeClient& helper, const std::vector<std::string>& words, pid_t pid,
                   nlohmann::json extra = nlohmann::json::object()) {
  return run_words(helper, words, pid, std::move(extra), {{"debug_registers_used", 0}});
}

std::string text_of(const nlohmann::json& answer) {
  std::string text;
  for (const auto& line : answer["result"].value("text", nlohmann::json::array())) text += line.get<std::string>() + "\n";
  return text;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(value));
  return text;
}

// The document of the session's end, as `show --json` gives it once ended.
nlohmann::json ended_document(ServeClient& helper, pid_t pid) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    const auto answer = run(helper, {"show", "--json", "--all"}, pid, {{"peek", true}});
    if (!answer.contains("result")) {
      ADD_FAILURE() << answer.dump();
      return nullptr;
    }
    for (const auto& line : answer["result"].value("text", nlohmann::json::array())) {
      const auto parsed = nlohmann::json::parse(line.get<std::string>());
      if (parsed.contains("document")) return parsed["document"];
    }
    usleep(10000);
  }
  return nullptr;
}

// Three expressions, evaluated by "the debugger" (this test): a global, a
// struct field through a pointer, and gdb's artificial array `*buf@16`.
TEST(ServeWatch, ExpressionsAreEvaluatedByTheFrontEndAndTheWritesEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "12"});
  ServeClient helper;
  hello(helper);
  const std::vector<std::string> words = {"watch", "g_total", "cfg->limit", "*buf@16"};
  const auto prepare = run(helper, words, target.pid());
  ASSERT_TRUE(prepare["result"].contains("prepare")) << prepare.dump();
  const nlohmann::json expected = {
      {{"index", 0}, {"expression", "g_total"}, {"location", false}, {"count", 1}, {"for", "address"}},
      {{"index", 1}, {"expression", "cfg->limit"}, {"location", false}, {"count", 1}, {"for", "address"}},
      {{"index", 2}, {"expression", "*buf"}, {"location", false}, {"count", 16}, {"for", "address"}}};
  EXPECT_EQ(prepare["result"]["prepare"]["evaluate"], expected);
  EXPECT_FALSE(prepare["result"]["prepare"].contains("stop_signal"));

  const uint64_t config = target.startup().object("g_config").address;
  const nlohmann::json evaluated = {
      {{"index", 0}, {"address", target.address("g_total")}, {"size", 8}, {"type", "uint64_t"}, {"error", nullptr}},
      {{"index", 1}, {"address", hex(config + 8)}, {"size", 8}, {"type", "uint64_t"}, {"error", nullptr}},
      {{"index", 2}, {"address", target.address("buf")}, {"size", 1}, {"type", "uint8_t"}, {"error", nullptr}}};
  const auto started = run(helper, words, target.pid(), {{"prepared", {{"evaluated", evaluated}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const std::string start = text_of(started);
  EXPECT_NE(start.find("watching PID " + std::to_string(target.pid()) + ": 3 ranges (stores"), std::string::npos) << start;
  EXPECT_NE(start.find("[0] g_total  " + target.address("g_total") + "  8 bytes"), std::string::npos) << start;
  EXPECT_NE(start.find("[1] cfg->limit  " + hex(config + 8) + "  8 bytes"), std::string::npos) << start;
  EXPECT_NE(start.find("[2] *buf@16  " + target.address("buf") + "  16 bytes"), std::string::npos) << start;
  const nlohmann::json session = started["result"]["session"];
  EXPECT_EQ(session["command"], "watch");
  EXPECT_FALSE(session["probe_sites"].empty());

  const auto listed = run(helper, {"sessions"}, target.pid());
  EXPECT_NE(text_of(listed).find("watch g_total cfg->limit *buf@16"), std::string::npos) << text_of(listed);

  const pid_t pid = target.pid();
  target.go();
  ASSERT_EQ(target.finish(), 0);
  const nlohmann::json document = ended_document(helper, pid);
  ASSERT_TRUE(document.is_object());
  EXPECT_EQ(document["result"]["lost"], 0);
  EXPECT_EQ(document["result"]["ranges"][1]["spelled"], "cfg->limit");

  // Per thread, the record's writes of those bytes, in order.
  ThreadWrites recorded;
  for (const wt::Write& write : target.record()) {
    for (const auto& [object, offset, length] : std::vector<std::tuple<std::string, uint64_t, uint64_t>>{
             {"g_total", 0, 8}, {"g_config", 8, 8}, {"buf", 0, 16}}) {
      auto part = wt::clip(write, object, offset, length);
      if (!part) continue;
      recorded[write.tid].push_back({object, part->offset, wt::hex_of(part->old_bytes), wt::hex_of(part->new_bytes),
                                     write.function});
    }
  }
  expect_writes_equal(recorded, watched_writes(document, {"g_total", "g_config", "buf"}, nullptr, {0, 8, 0}));

  // At a stop, at most 20 writes, then how many more; the summary once ended.
  const auto shown = run(helper, {"show"}, pid, {{"at_stop", true}});
  const std::string text = text_of(shown);
  EXPECT_NE(text.find("new writes"), std::string::npos) << text;
  EXPECT_NE(text.find("more new writes: `xref show` prints them"), std::string::npos) << text;
  EXPECT_NE(text.find("total_store+0x"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] cfg->limit: "), std::string::npos) << text;
  EXPECT_NE(text.find("ended (target_exited)"), std::string::npos) << text;
  size_t write_lines = 0;
  for (size_t at = text.find("  (watch_target)  "); at != std::string::npos; at = text.find("  (watch_target)  ", at + 1)) {
    ++write_lines;
  }
  EXPECT_LE(write_lines, 20u) << text;
}

// An expression the debugger could not evaluate: one line naming it, and
// nothing attached.
TEST(ServeWatch, AnExpressionTheDebuggerCannotEvaluateIsRefusedNamingIt) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "1"});
  ServeClient helper;
  hello(helper);
  const std::vector<std::string> words = {"watch", "nosuch->field"};
  const nlohmann::json evaluated = {
      {{"index", 0}, {"address", nullptr}, {"size", 0}, {"error", "No symbol \"nosuch\" in current context."}}};
  const auto answer = run(helper, words, target.pid(), {{"prepared", {{"evaluated", evaluated}}}});
  ASSERT_TRUE(answer.contains("error")) << answer.dump();
  EXPECT_EQ(answer["error"]["code"], "invalid_argument");
  EXPECT_EQ(answer["error"]["exit_status"], 2);
  EXPECT_EQ(answer["error"]["message"], "watch \"nosuch->field\": No symbol \"nosuch\" in current context");
  EXPECT_EQ(text_of(run(helper, {"sessions"}, target.pid())),
            "xref: no sessions; start one with `xref trace`, `xref probe` or `xref watch`\n");
  // EXPR@N needs a count.
  const auto bad = run(helper, {"watch", "*buf@x"}, target.pid());
  ASSERT_TRUE(bad.contains("error")) << bad.dump();
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("'@' takes a count"), std::string::npos) << bad.dump();
  // A malformed answer is the front end's fault.
  const auto malformed = run(helper, {"watch", "g_total"}, target.pid(), {{"prepared", {{"evaluated", 3}}}});
  ASSERT_TRUE(malformed.contains("error")) << malformed.dump();
  EXPECT_EQ(malformed["error"]["code"], "invalid_request");
}

// -l: the value is the address (its pointee's size, or -s); a literal live
// address is no expression; --stop-when asks for the stop signal.
TEST(ServeWatch, LocationSizeAndLiteralAddresses) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "1"});
  ServeClient helper;
  hello(helper);
  const std::vector<std::string> words = {"watch", "-l", "-s", "4", "cfg", target.address("g_total"),
                                          "--stop-when", "value == 7"};
  const auto prepare = run(helper, words, target.pid());
  ASSERT_TRUE(prepare["result"].contains("prepare")) << prepare.dump();
  ASSERT_EQ(prepare["result"]["prepare"]["evaluate"].size(), 1u) << prepare.dump();
  EXPECT_EQ(prepare["result"]["prepare"]["evaluate"][0]["expression"], "cfg");
  EXPECT_EQ(prepare["result"]["prepare"]["evaluate"][0]["location"], true);
  EXPECT_EQ(prepare["result"]["prepare"]["stop_signal"], 63);
  const nlohmann::json evaluated = {
      {{"index", 0}, {"address", target.address("g_config")}, {"size", 144}, {"type", "struct config *"}, {"error", nullptr}}};
  const auto started = run(helper, words, target.pid(), {{"prepared", {{"evaluated", evaluated}, {"stop_signal", {{"by", "catchpoint 1"}}}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const std::string start = text_of(started);
  EXPECT_NE(start.find("[0] cfg  " + target.address("g_config") + "  4 bytes"), std::string::npos) << start;
  EXPECT_NE(start.find("[1] " + target.address("g_total") + "  " + target.address("g_total") + "  8 bytes"),
            std::string::npos)
      << start;
  EXPECT_NE(start.find("stops its thread with signal 63"), std::string::npos) << start;
  EXPECT_EQ(started["result"]["session"]["stop_signal"], 63);
  const auto stopped = run(helper, {"stop"}, target.pid());
  EXPECT_NE(text_of(stopped).find("ended (stopped)"), std::string::npos) << text_of(stopped);
  // Without a debugger, -l and -s are refused.
  ServeClient plain;
  hello(plain);
  const auto refused = plain.request("run", {{"argv", {"watch", "--pid", std::to_string(target.pid()), "-s", "4", "g_total"}}});
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("-s/--size"), std::string::npos) << refused.dump();
}

// A --follow's SLOT is an expression too: the debugger gives the slot's
// address, the dependent range follows the pointer it holds.
TEST(ServeWatch, AFollowSlotIsEvaluatedByTheFrontEnd) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "1"});
  ServeClient helper;
  hello(helper);
  const std::vector<std::string> words = {"watch", "--follow", "holder->slot->+16:8"};
  const auto prepare = run(helper, words, target.pid());
  ASSERT_TRUE(prepare["result"].contains("prepare")) << prepare.dump();
  const nlohmann::json expected = {
      {{"index", 0}, {"expression", "holder->slot"}, {"location", false}, {"count", 1}, {"for", "follow"}}};
  EXPECT_EQ(prepare["result"]["prepare"]["evaluate"], expected);
  const nlohmann::json evaluated = {
      {{"index", 0}, {"address", target.address("moving_slot")}, {"size", 8}, {"type", "struct moving *"}, {"error", nullptr}}};
  const auto started = run(helper, words, target.pid(), {{"prepared", {{"evaluated", evaluated}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const std::string start = text_of(started);
  EXPECT_NE(start.find("[0] holder->slot  " + target.address("moving_slot") + "  8 bytes"), std::string::npos) << start;
  EXPECT_NE(start.find("[1] holder->slot->+16:8  " + hex(target.startup().object("moving").address + 16) + "  8 bytes"),
            std::string::npos)
      << start;
  const auto stopped = run(helper, {"stop"}, target.pid());
  EXPECT_NE(text_of(stopped).find("ended (stopped)"), std::string::npos) << text_of(stopped);
}

// Protocol 1: session.start asks for the same preparation; session.release
// at a store site takes its uprobe out.
TEST(ServeWatch, SessionStartPreparesAndReleasesAStoreSite) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "1"});
  ServeClient helper;
  ASSERT_EQ(helper.read()["protocol"], 2);
  ASSERT_EQ(helper.request("hello", {{"protocol", 1}, {"client", "serve_watch_test"}})["result"]["protocol"], 1);
  const nlohmann::json context = {{"pid", target.pid()}, {"debug_registers_used", 2}};
  // The store engine named: auto takes the debug registers where they fire.
  const nlohmann::json argv = {"watch", "g_total", "--backend", "stores"};
  const auto prepare = helper.request("session.start", {{"argv", argv}, {"context", context}});
  ASSERT_TRUE(prepare["result"].contains("prepare")) << prepare.dump();
  const nlohmann::json evaluated = {{{"index", 0}, {"address", target.address("g_total")}, {"size", 8}, {"error", nullptr}}};
  const auto started = helper.request(
      "session.start", {{"argv", argv}, {"context", context}, {"prepared", {{"evaluated", evaluated}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  EXPECT_EQ(started["result"]["ranges"][0]["spelled"], "g_total");
  ASSERT_FALSE(started["result"]["probe_sites"].empty());
  const std::string site = started["result"]["probe_sites"][0];
  const auto released = helper.request(
      "session.release", {{"session", started["result"]["session"]}, {"addresses", {site}}, {"reason", "breakpoint 3"}});
  ASSERT_TRUE(released.contains("result")) << released.dump();
  ASSERT_EQ(released["result"]["released"].size(), 1u) << released.dump();
  EXPECT_EQ(released["result"]["released"][0]["probe_live"], site);
  EXPECT_EQ(released["result"]["released"][0]["store"], true);
  const auto bad = helper.request("session.start", {{"argv", {"watch", "g_total"}},
                                                    {"context", {{"pid", target.pid()}, {"debug_registers_used", "two"}}}});
  EXPECT_EQ(bad["error"]["code"], "invalid_request") << bad.dump();
  const auto stopped = helper.request("session.stop", {{"session", started["result"]["session"]}});
  ASSERT_TRUE(stopped.contains("result")) << stopped.dump();
  EXPECT_EQ(stopped["result"]["stop_reason"], "stopped");
}

}  // namespace
}  // namespace xref::test
