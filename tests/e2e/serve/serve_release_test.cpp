// session.release over the protocol, as a front end sends it before a
// debugger's breakpoint goes where a session has a uprobe: a probe session
// takes that site out of the target (its byte reads as the file's again)
// and keeps observing the others; the released site keeps the counts it
// had; a trace session ends instead, its windows kept.
#include <signal.h>

#include <fstream>

#include "held_probes.h"
#include "serve_client.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

void greet(ServeClient& helper) {
  ASSERT_EQ(helper.read()["type"], "hello");
  ASSERT_TRUE(helper.request("hello", {{"protocol", 1}, {"client", "serve_release_test"}}).contains("result"));
}

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

uint64_t recorded_entries(const std::string& record, const std::string& function) {
  uint64_t entries = 0;
  for (const auto& [key, events] : read_record(record)) {
    for (const auto& event : events) entries += event.kind == '>' && event.function == function;
  }
  return entries;
}

TEST(ServeRelease, ProbeSessionTakesOneSiteOutAndKeepsItsCounts) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-release");
  TargetProcess target(target_command(record_file.path, {"--requests", "60", "--interval-us", "1000"}));
  ServeClient helper;
  greet(helper);
  const auto started = helper.request(
      "session.start", {{"argv", {"probe", "svc::validate", "svc::compute_price", "--duration-ms", "0"}},
                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  const std::string validate = started["result"]["addresses"][0]["probe_live"];
  const auto& sites = started["result"]["probe_sites"];
  EXPECT_EQ(sites.size(), 2u) << started.dump();
  EXPECT_NE(std::find(sites.begin(), sites.end(), validate), sites.end()) << started.dump();
  const HeldProbes before = held_probes(helper.pid(), target.pid());
  ASSERT_EQ(before.offsets.size(), 2u);

  // An address the session does not probe: nothing to do.
  const auto elsewhere =
      helper.request("session.release", {{"session", session}, {"addresses", {"0x1000"}}, {"reason", "breakpoint 3"}});
  EXPECT_EQ(elsewhere["result"]["released"], nlohmann::json::array()) << elsewhere.dump();
  EXPECT_EQ(elsewhere["result"]["ended"], false);

  // Some requests run, then the process stops, as at a debugger prompt.
  record_file.release();
  while (recorded_entries(record_file.path, "validate") < 10) usleep(2000);
  ASSERT_EQ(kill(target.pid(), SIGSTOP), 0);
  while (process_state(target.pid()) != 'T') usleep(1000);
  const uint64_t recorded_at_stop = recorded_entries(record_file.path, "validate");
  const auto released =
      helper.request("session.release", {{"session", session}, {"addresses", {validate}}, {"reason", "breakpoint 4"}});
  ASSERT_TRUE(released.contains("result")) << released.dump();
  const auto& answer = released["result"];
  ASSERT_EQ(answer["released"].size(), 1u) << released.dump();
  EXPECT_EQ(answer["released"][0]["address"], "svc::validate");
  EXPECT_EQ(answer["released"][0]["probe_live"], validate);
  EXPECT_EQ(answer["reason"], "breakpoint 4");
  EXPECT_EQ(answer["ended"], false);
  EXPECT_EQ(answer["process_stopped"], true) << "every thread was stopped";
  EXPECT_EQ(answer["hits_may_be_lost"], false);
  const uint64_t hits_at_release = answer["released"][0]["hits"];
  // The record is written at the end of each request: the stopped one may
  // have called validate already.
  EXPECT_GE(hits_at_release, recorded_at_stop);
  EXPECT_LE(hits_at_release, recorded_at_stop + 1);

  // Out of the target: validate's byte is the file's, compute_price keeps its probe.
  const HeldProbes after = held_probes(helper.pid(), target.pid());
  ASSERT_EQ(after.offsets.size(), 1u);
  const CodeBytes bytes = code_bytes(target.pid(), before.path, before.offsets);
  for (size_t at = 0; at < before.offsets.size(); ++at) {
    if (before.offsets[at] == after.offsets[0]) {
      EXPECT_NE(bytes.in_memory[at], bytes.in_file[at]) << "compute_price is still probed";
    } else {
      EXPECT_EQ(bytes.in_memory[at], bytes.in_file[at]) << "validate's site reads as its file again";
    }
  }
  ASSERT_EQ(kill(target.pid(), SIGCONT), 0);

  // The target runs to its end: validate counted nothing more, compute_price every call.
  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["stop_reason"], "target_exited") << ended.dump();
  const auto& addresses = ended["document"]["addresses"];
  EXPECT_EQ(addresses[0]["hits"].get<uint64_t>(), hits_at_release);
  EXPECT_EQ(addresses[0]["released"]["reason"], "breakpoint 4") << ended.dump();
  EXPECT_EQ(addresses[0]["released"]["hits"].get<uint64_t>(), hits_at_release);
  EXPECT_TRUE(addresses[1]["released"].is_null());
  EXPECT_EQ(recorded_entries(record_file.path, "validate"), 60u);
  EXPECT_LT(hits_at_release, 60u);
  EXPECT_EQ(addresses[1]["hits"].get<uint64_t>(), recorded_entries(record_file.path, "compute_price"));
  EXPECT_EQ(ended["document"]["summary"]["sites_released"], 1);
}

TEST(ServeRelease, TraceSessionEndsWithItsWindowsKept) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-release-trace");
  TargetProcess target(target_command(record_file.path, {"--requests", "400", "--interval-us", "1000"}));
  ServeClient helper;
  greet(helper);
  const auto started = helper.request("session.start", {{"argv", {"trace", "--start", "svc::handle_request"}},
                                                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  const std::string start = started["result"]["start"]["live"];
  const auto& sites = started["result"]["probe_sites"];
  EXPECT_NE(std::find(sites.begin(), sites.end(), start), sites.end()) << started.dump();
  const HeldProbes held = held_probes(helper.pid(), target.pid());
  record_file.release();
  helper.await_event("window", session);

  const auto released =
      helper.request("session.release", {{"session", session}, {"addresses", {start}}, {"reason", "breakpoint 1"}});
  ASSERT_TRUE(released.contains("result")) << released.dump();
  EXPECT_EQ(released["result"]["ended"], true);
  EXPECT_EQ(released["result"]["stop_reason"], "released");
  EXPECT_EQ(released["result"]["reason"], "breakpoint 1");
  EXPECT_GE(released["result"]["summary"]["windows"].get<uint64_t>(), 1u);
  ASSERT_TRUE(helper.queued([&](const nlohmann::json& message) {
    return message.value("event", "") == "session_ended" && message.value("session", uint64_t{0}) == session;
  }))
      << "session_ended comes before the answer";
  EXPECT_EQ(helper.await_event("session_ended", session)["stop_reason"], "released");
  const CodeBytes bytes = code_bytes(target.pid(), held.path, held.offsets);
  EXPECT_EQ(bytes.in_memory, bytes.in_file) << "a probed instruction still differs from the file";
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

}  // namespace
}  // namespace xref::test
