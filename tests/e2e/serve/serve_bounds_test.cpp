// xref serve stays bounded however long it runs and whatever its front end
// does: thousands of session starts under a small descriptor limit leave no
// descriptor or memory behind, ended sessions are freed once the front end
// has read their end, sessions at once are capped (and each costs little),
// and a front end that stops reading costs bounded memory and still gets
// the helper gone, every probe out, within the grace docs/protocol.md
// promises after SIGTERM.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "held_probes.h"
#include "run_xref.h"
#include "sample_target.h"
#include "serve_client.h"
#include "trace_harness.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

void handshake(ServeClient& helper) {
  ASSERT_EQ(helper.read()["type"], "hello");
  ASSERT_EQ(helper.request("hello", {{"protocol", 1}})["result"]["protocol"], 1);
}

std::vector<std::string> service_command() {
  return {XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", "2000"};
}

// A field of /proc/PID/status in kB (VmRSS, VmHWM).
uint64_t status_kb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  return 0;
}

size_t open_descriptors(pid_t pid) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++count;
  }
  return count;
}

// What the front end has not looked at: gone, like a front end's absorb.
void forget_events(ServeClient& helper) {
  helper.take_queued([](const nlohmann::json& message) { return message.value("type", "") == "event"; });
}

bool link_exists(uint64_t id) {
  return std::system(("bpftool link show id " + std::to_string(id) + " >/dev/null 2>&1").c_str()) == 0;
}

// A helper, past its handshake, beside a sample service that runs until
// the test ends.
struct ServedService {
  explicit ServedService(const std::vector<std::string>& serve_arguments = {}) : helper({}, serve_arguments) {
    handshake(helper);
  }
  TargetProcess service{service_command()};
  ServeClient helper;
};

nlohmann::json probe_start(ServeClient& helper, pid_t pid, std::vector<std::string> words) {
  nlohmann::json argv = {"probe"};
  for (auto& word : words) argv.push_back(word);
  return helper.request("session.start", {{"argv", argv}, {"context", {{"pid", pid}}}});
}

// 2,000 session starts, failed and successful, probe and trace, one after
// another under a 256-descriptor limit (the helper used to keep two
// eventfds of each for good, and every ended session): descriptors and
// memory stay where they were after the first 200, and a probe still starts
// at the end and counts exactly what its target records.
TEST(ServeBounds, ThousandsOfStartsUnderADescriptorLimitLeaveNothingBehind) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess service(service_command());
  ServeClient helper;
  handshake(helper);
  const rlimit limit{256, 256};
  ASSERT_EQ(prlimit(helper.pid(), RLIMIT_NOFILE, &limit, nullptr), 0);

  constexpr int kStarts = 2000;
  size_t descriptors_early = 0;
  uint64_t rss_early_kb = 0;
  int succeeded = 0;
  for (int i = 0; i < kStarts; ++i) {
    SCOPED_TRACE("start " + std::to_string(i));
    const pid_t pid = service.pid();
    switch (i % 8) {
      case 0: {  // a probe, stopped
        const auto started = probe_start(helper, pid, {"validate", "--duration-ms", "0"});
        ASSERT_TRUE(started.contains("result")) << "start " << i << ": " << started.dump();
        const auto stopped = helper.request("session.stop", {{"session", started["result"]["session"]}});
        ASSERT_EQ(stopped["result"]["stop_reason"], "stopped") << stopped.dump();
        ++succeeded;
        break;
      }
      case 1: {  // a trace, stopped
        const auto started = helper.request(
            "session.start",
            {{"argv", {"trace", "--start", "handle_request", "--functions", "validate"}}, {"context", {{"pid", pid}}}});
        ASSERT_TRUE(started.contains("result")) << "start " << i << ": " << started.dump();
        const auto stopped = helper.request("session.stop", {{"session", started["result"]["session"]}});
        ASSERT_EQ(stopped["result"]["stop_reason"], "stopped") << stopped.dump();
        ++succeeded;
        break;
      }
      case 2: {  // a probe that ends by itself, read through a drain
        const auto started = probe_start(helper, pid, {"validate", "--duration-ms", "1"});
        ASSERT_TRUE(started.contains("result")) << "start " << i << ": " << started.dump();
        helper.await_event("session_ended", started["result"]["session"]);
        ASSERT_EQ(helper.request("drain")["result"]["drained"], true);
        ++succeeded;
        break;
      }
      case 3:
      case 4: {  // a function the target does not have
        const auto refused = probe_start(helper, pid, {"no_such_function"});
        ASSERT_EQ(refused["error"]["code"], "invalid_argument") << "start " << i << ": " << refused.dump();
        break;
      }
      case 5: {
        const auto refused = helper.request(
            "session.start", {{"argv", {"trace", "--start", "no_such_function"}}, {"context", {{"pid", pid}}}});
        ASSERT_EQ(refused["error"]["code"], "invalid_argument") << "start " << i << ": " << refused.dump();
        break;
      }
      default: {  // a process that is not there
        const auto refused = probe_start(helper, pid, {"validate", "--pid", "999999999"});
        ASSERT_TRUE(refused.contains("error")) << refused.dump();
        ASSERT_NE(refused["error"]["code"], "internal") << "start " << i << ": " << refused.dump();
      }
    }
    forget_events(helper);
    if (i % 50 == 49) {
      const auto listed = helper.request("sessions");
      ASSERT_TRUE(listed["result"]["sessions"].empty()) << "after start " << i << ": " << listed.dump();
    }
    if (i == 199) {
      descriptors_early = open_descriptors(helper.pid());
      rss_early_kb = status_kb(helper.pid(), "VmRSS");
    }
  }
  EXPECT_EQ(succeeded, kStarts / 8 * 3);
  const size_t descriptors = open_descriptors(helper.pid());
  const uint64_t rss_kb = status_kb(helper.pid(), "VmRSS");
  EXPECT_LE(descriptors, descriptors_early + 2) << "descriptors after 200 starts: " << descriptors_early;
  // Heap pages freed by the sessions stay with the allocator: some growth is
  // its arenas settling, not a session kept.
  EXPECT_LE(rss_kb, rss_early_kb + 16 * 1024) << "RSS after 200 starts: " << rss_early_kb << " kB";
  std::cout << "[ measured ] after 200 starts: " << descriptors_early << " descriptors, " << rss_early_kb
            << " kB RSS; after " << kStarts << ": " << descriptors << " descriptors, " << rss_kb << " kB RSS\n";

  // Still good for a probe whose counts equal the target's record.
  const RecordFile record_file("serve-bounds");
  TargetProcess target(target_command(record_file.path, {"--requests", "30", "--interval-us", "1000"}));
  const auto started = probe_start(helper, target.pid(), {"svc::validate", "--duration-ms", "0"});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  record_file.release();
  const auto ended = helper.await_event("session_ended", started["result"]["session"]);
  uint64_t recorded = 0;
  for (const auto& [key, events] : read_record(record_file.path)) {
    for (const auto& event : events) recorded += event.kind == '>' && event.function == "validate";
  }
  EXPECT_EQ(recorded, 30u);
  EXPECT_EQ(ended["document"]["addresses"][0]["hits"].get<uint64_t>(), recorded) << ended.dump();
}

// An ended session's summary answers session.stop until the front end has
// read its session_ended event, i.e. until the helper answered a drain or
// sessions request read after that event; then it is forgotten.
TEST(ServeBounds, AnEndedSessionIsKeptUntilTheFrontEndHasReadItsEnd) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ServedService served;
  auto& [service, helper] = served;
  const auto started = probe_start(helper, service.pid(), {"validate", "--duration-ms", "50"});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["stop_reason"], "duration");
  for (int again = 0; again < 2; ++again) {
    const auto stopped = helper.request("session.stop", {{"session", session}});
    ASSERT_TRUE(stopped.contains("result")) << stopped.dump();
    EXPECT_EQ(stopped["result"]["stop_reason"], "duration");
    EXPECT_EQ(stopped["result"]["summary"], ended["summary"]);
  }
  EXPECT_TRUE(helper.request("sessions")["result"]["sessions"].empty());
  const auto forgotten = helper.request("session.stop", {{"session", session}});
  EXPECT_EQ(forgotten["error"]["code"], "unknown_session") << forgotten.dump();
  EXPECT_NE(forgotten["error"]["message"].get<std::string>().find("is over"), std::string::npos) << forgotten.dump();
  const auto never = helper.request("session.stop", {{"session", session + 100}});
  EXPECT_EQ(never["error"]["message"], "no session " + std::to_string(session + 100)) << never.dump();
}

// At most --max-sessions at once: the next start is refused in one line that
// says what to do; stopping one makes room.
TEST(ServeBounds, SessionsBeyondTheCapAreRefusedUntilOneStops) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ServedService served({"--max-sessions", "3"});
  auto& [service, helper] = served;
  std::vector<uint64_t> sessions;
  for (int i = 0; i < 3; ++i) {
    const auto started = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0"});
    ASSERT_TRUE(started.contains("result")) << started.dump();
    sessions.push_back(started["result"]["session"]);
  }
  const auto refused = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0"});
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_EQ(refused["error"]["code"], "too_many_sessions");
  EXPECT_EQ(refused["error"]["message"], "3 sessions already run in this helper, its limit (xref serve --max-sessions 3)");
  EXPECT_NE(refused["error"]["hint"].get<std::string>().find("xref stop N"), std::string::npos) << refused.dump();
  EXPECT_EQ(helper.request("session.stop", {{"session", sessions[1]}})["result"]["stop_reason"], "stopped");
  const auto room = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0"});
  EXPECT_TRUE(room.contains("result")) << room.dump();
}

TEST(ServeBounds, AMaxSessionsOfZeroIsAUsageError) {
  const auto run = run_xref({"serve", "--max-sessions", "0"});
  EXPECT_EQ(run.exit_status, 2) << run.err;
  EXPECT_NE(run.err.find("--max-sessions"), std::string::npos) << run.err;
}

// The default cap, 64 probe sessions at once, and what each costs the
// helper: 2.5 MB before its ring buffer was sized to the samples it can
// hold (docs/performance.md).
TEST(ServeBounds, SixtyFourSessionsByDefaultEachCheap) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ServedService served;
  auto& [service, helper] = served;
  const auto first = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0"});
  ASSERT_TRUE(first.contains("result")) << first.dump();
  const uint64_t rss_one_kb = status_kb(helper.pid(), "VmRSS");
  for (int i = 1; i < 64; ++i) {
    const auto started = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0", "--callers"});
    ASSERT_TRUE(started.contains("result")) << "session " << i + 1 << ": " << started.dump();
  }
  ASSERT_EQ(helper.request("drain")["result"]["drained"], true);
  forget_events(helper);
  const uint64_t rss_all_kb = status_kb(helper.pid(), "VmRSS");
  const auto refused = probe_start(helper, service.pid(), {"validate", "--duration-ms", "0"});
  EXPECT_EQ(refused["error"]["code"], "too_many_sessions") << refused.dump();
  EXPECT_EQ(helper.request("sessions")["result"]["sessions"].size(), 64u);
  const uint64_t per_session_kb = (rss_all_kb - rss_one_kb) / 63;
  std::cout << "[ measured ] RSS with 1 probe session: " << rss_one_kb << " kB, with 64: " << rss_all_kb << " kB, "
            << per_session_kb << " kB per session\n";
  EXPECT_LE(per_session_kb, 2048u);
}

// The helper's own account of its exit (stderr): how long the detach took
// and how long it then waited for the front end.
struct ExitAccount {
  int64_t detach_ms = -1;
  int64_t grace_ms = -1;
  int64_t grace_limit_ms = -1;
  uint64_t superseded = 0;
};

ExitAccount exit_account(const std::string& stderr_text) {
  static const std::regex line(
      R"(every session detached in (\d+) ms, then (\d+) ms of the (\d+) ms grace for the front end to read; \d+ lines \(\d+ bytes\) unsent; (\d+) drain updates superseded unsent)");
  std::smatch match;
  ExitAccount account;
  if (!std::regex_search(stderr_text, match, line)) return account;
  account.detach_ms = std::stoll(match[1]);
  account.grace_ms = std::stoll(match[2]);
  account.grace_limit_ms = std::stoll(match[3]);
  account.superseded = std::stoull(match[4]);
  return account;
}

// A front end that sends drains and never reads what comes back (its end
// of the pipe stays open, unread): the helper's memory stays bounded (a
// newer drain update replaces the unsent one of its session, and input
// pauses while answers wait), and after SIGTERM every probe is out and the
// helper gone within its documented grace.
TEST(ServeBounds, AFrontEndThatStopsReadingCostsBoundedMemoryAndTheHelperStillExitsInTime) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  XREF_REQUIRE(tracefs_usable(), "tracefs mounted and writable");
  TargetProcess service({XREF_SAMPLE_SERVICE, "--threads", "2", "--requests", "0", "--interval-us", "200"});
  ServeClient helper;
  handshake(helper);
  const auto bpf = probe_start(helper, service.pid(), {"validate", "settle", "--callers", "--duration-ms", "0"});
  ASSERT_TRUE(bpf.contains("result")) << bpf.dump();
  const auto tracefs =
      probe_start(helper, service.pid(), {"price_order", "--callers", "--backend", "tracefs", "--duration-ms", "0"});
  ASSERT_TRUE(tracefs.contains("result")) << tracefs.dump();
  const HeldProbes held = held_probes(helper.pid(), service.pid());
  ASSERT_FALSE(held.link_ids.empty());
  ASSERT_FALSE(events_of(helper.pid()).empty()) << "the tracefs session's uprobe events";
  const uint64_t rss_before_kb = status_kb(helper.pid(), "VmRSS");

  // From here on nothing is read. Drains go in until 200,000 were sent or
  // the helper has taken none for 1,000 tries in a row.
  const std::string drain = "{\"id\":0,\"method\":\"drain\"}\n";
  uint64_t sent = 0;
  for (int refused_in_a_row = 0; sent < 200000 && refused_in_a_row < 1000;) {
    if (helper.try_send_raw(drain)) {
      ++sent;
      refused_in_a_row = 0;
    } else {
      ++refused_in_a_row;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const uint64_t rss_after_kb = status_kb(helper.pid(), "VmRSS");
  std::cout << "[ measured ] " << sent << " drains sent unread: helper RSS " << rss_before_kb << " kB before, "
            << rss_after_kb << " kB after\n";
  EXPECT_GT(sent, 1000u);
  EXPECT_LE(rss_after_kb, rss_before_kb + 32 * 1024);

  const pid_t helper_pid = helper.pid();
  kill(helper_pid, SIGTERM);
  EXPECT_EQ(helper.wait(), 0);
  const ExitAccount account = exit_account(helper.stderr_text());
  ASSERT_GE(account.grace_ms, 0) << "no exit line on stderr: " << helper.stderr_text();
  std::cout << "[ measured ] after SIGTERM: detached in " << account.detach_ms << " ms, then waited "
            << account.grace_ms << " ms; " << account.superseded << " drain updates superseded\n";
  EXPECT_EQ(account.grace_limit_ms, 2000);
  // The grace is the wait for a reader; stopping the writer after it takes
  // no wait of its own.
  EXPECT_LE(account.grace_ms, account.grace_limit_ms + 100);
  EXPECT_GT(account.superseded, 0u) << "drain updates of a front end that does not read replace each other";

  for (uint64_t id : held.link_ids) EXPECT_FALSE(link_exists(id)) << "link " << id << " is still there";
  const CodeBytes bytes = code_bytes(service.pid(), held);
  EXPECT_EQ(bytes.in_memory, bytes.in_file) << "a probed instruction still differs from the file";
  EXPECT_TRUE(events_of(helper_pid).empty()) << uprobe_events();
  EXPECT_EQ(kill(service.pid(), 0), 0) << "the target runs on";
}

}  // namespace
}  // namespace xref::test
