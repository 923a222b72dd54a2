// The plugin's LLDB-free parts: line framing, helper command lines, window
// text, and the protocol client against tests/lldb/fake_helper.py.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "helper_client.h"
#include "helper_process.h"
#include "json_lines.h"
#include "probe_render.h"
#include "window_render.h"

namespace xref::lldb_plugin {
namespace {

using namespace std::chrono_literals;

TEST(LineSplitter, SplitsAcrossChunksAndKeepsTheUnterminatedRest) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  splitter.append("{\"a\":1}\n{\"b\"", lines);
  splitter.append(":2}\n{\"c", lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(splitter.pending(), "{\"c");
}

TEST(LineSplitter, DropsAnOversizedLineWholeAndCountsIt) {
  LineSplitter splitter(8);
  std::vector<std::string> lines;
  splitter.append("short\n0123456", lines);
  splitter.append("789abcdef", lines);  // past 8 bytes: skipped up to its newline
  splitter.append("more\nnext\n", lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"short", "next"}));
  EXPECT_EQ(splitter.oversized_lines(), 1u);
}

TEST(HelperCommandLine, SplitsWordsWithQuotesAndEscapes) {
  EXPECT_EQ(*split_command_line("sudo -n /usr/local/bin/xref serve"),
            (std::vector<std::string>{"sudo", "-n", "/usr/local/bin/xref", "serve"}));
  EXPECT_EQ(*split_command_line("  '/opt/my tools/xref'  \"ser\\\"ve\" a\\ b "),
            (std::vector<std::string>{"/opt/my tools/xref", "ser\"ve", "a b"}));
  EXPECT_EQ(*split_command_line("x ''"), (std::vector<std::string>{"x", ""}));
  EXPECT_FALSE(split_command_line("xref 'serve").has_value());
}

TEST(HelperCommandLine, DefaultIsNextToThePluginThenTheBuildTreeThenPath) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / ("xref-lldb-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "lldb-plugin");
  std::filesystem::create_directories(root / "helper");
  const std::string plugin = (root / "lldb-plugin" / "libxref_lldb.so").string();
  auto make_executable = [](const std::filesystem::path& path) {
    std::ofstream(path) << "#!/bin/sh\n";
    chmod(path.c_str(), 0755);
  };
  EXPECT_EQ(default_helper_command(plugin).argv, (std::vector<std::string>{"xref", "serve"}));
  make_executable(root / "helper" / "xref");
  EXPECT_EQ(default_helper_command(plugin).argv, (std::vector<std::string>{(root / "helper" / "xref").string(), "serve"}));
  make_executable(root / "lldb-plugin" / "xref");
  EXPECT_EQ(default_helper_command(plugin).argv,
            (std::vector<std::string>{(root / "lldb-plugin" / "xref").string(), "serve"}));
  std::filesystem::remove_all(root);
}

TEST(HelperProcess, DescribesHowItEnded) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with status 3");
  EXPECT_EQ(describe_wait_status(SIGKILL), "was killed by signal 9 (SIGKILL)");
}

// Static VA -> name/line; live = static + bias. Records which addresses
// the renderer asked about.
class FakeSymbols : public AddressSymbols {
 public:
  static constexpr uint64_t kBias = 0x555555554000;
  std::map<uint64_t, CodePlace> places;  // by static VA (function start)
  std::map<uint64_t, uint32_t> breakpoints;
  std::vector<EventAddress> described;

  std::optional<uint64_t> live(const EventAddress& address) override {
    if (address.live) return address.live;
    if (address.static_va) return *address.static_va + kBias;
    return std::nullopt;
  }
  CodePlace describe(const EventAddress& address) override {
    described.push_back(address);
    const auto at = live(address);
    if (!at) return {};
    const uint64_t va = *at - kBias;
    auto found = places.upper_bound(va);
    if (found == places.begin()) return {};
    --found;
    CodePlace place = found->second;
    place.offset = va - found->first;
    return place;
  }
  std::vector<uint32_t> breakpoints_at(uint64_t live_address) override {
    auto found = breakpoints.find(live_address);
    if (found == breakpoints.end()) return {};
    return {found->second};
  }
};

// The window both front ends' render tests use (tests/gdb/window_text_test.py too).
nlohmann::json sample_window() {
  std::ifstream file(XREF_SAMPLE_WINDOW);
  return nlohmann::json::parse(file);
}

TEST(WindowRender, OneLinePerEventWithReferencesDepthAndTheDebuggersNames) {
  FakeSymbols symbols;
  symbols.places[0x1c20] = {"svc::handle_request(request*)", 0, "service.cc:170"};
  symbols.places[0x1d10] = {"worker_main", 0, "service.cc:231"};
  symbols.places[0x1960] = {"apply_fee", 0, "service.cc:60"};
  symbols.places[0x1a10] = {"price_order", 0, "service.cc:66"};
  symbols.places[0x1b70] = {"settle", 0, "service.cc:139"};
  symbols.breakpoints[0x555555555c20] = 1;
  symbols.breakpoints[0x1b70 + FakeSymbols::kBias] = 4;
  const auto lines = render_window(sample_window(), 2, symbols);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], "window 3 (session 2)  tid 4243  complete  6 events  lost 0  0.353 ms  req=0x7f00");
  EXPECT_EQ(lines[1], "  3:0   > svc::handle_request(request*)  from worker_main+0xa2 service.cc:231  [bp 1]");
  EXPECT_EQ(lines[2], "  3:1     > apply_fee  from price_order+0x9c service.cc:66 (unverified)  price=0x3e80 delta=-1");
  EXPECT_EQ(lines[3], "  3:2     < apply_fee  fee=<unreadable: EFAULT>");
  EXPECT_EQ(lines[4], "  3:3     > settle [tail]  from svc::handle_request(request*)+0xd0 service.cc:170  [bp 4]");
  EXPECT_EQ(lines[5], "  3:10    ~ settle [unwound]");
  EXPECT_EQ(lines[6], "  3:11  < svc::handle_request(request*)");
}

TEST(WindowRender, PrefersLiveAddressesAndFallsBackToStaticOnes) {
  FakeSymbols symbols;
  render_window(sample_window(), 1, symbols);
  ASSERT_FALSE(symbols.described.empty());
  EXPECT_EQ(symbols.described[0].live, std::optional<uint64_t>(0x555555555c20));  // target_live
  bool static_only = false;
  for (const auto& address : symbols.described) static_only |= !address.live && address.static_va == 0x1960u;
  EXPECT_TRUE(static_only);  // apply_fee has no target_live: its static VA is passed on
}

TEST(WindowRender, TailExitsAndStops) {
  FakeSymbols symbols;
  symbols.places[0x1c20] = {"forward", 0, "t.cc:10"};
  const auto window = nlohmann::json::parse(R"({"window_id": 1, "tid": 7, "status": "complete", "lost_events": 0,
    "events": [
      {"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c20", "fetches": []},
      {"seq": 1, "kind": "tail_exit", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c30", "fetches": []},
      {"seq": 2, "kind": "stop", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c28", "fetches": []}]})");
  const auto lines = render_window(window, 1, symbols);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "  1:0  > forward  t.cc:10");
  EXPECT_EQ(lines[2], "  1:1  < forward [tail]");
  EXPECT_EQ(lines[3], "  1:2  | stop at forward+0x8 t.cc:10");
}

TEST(WindowRender, SaysWhyAWindowIsIncomplete) {
  nlohmann::json window = sample_window();
  window["status"] = "target_exited";
  EXPECT_EQ(window_status_text(window), "incomplete (the process exited)");
  window["status"] = "complete";
  window["possible_loss"] = true;
  window["lost_events"] = nullptr;
  EXPECT_EQ(window_status_text(window), "incomplete (events may be missing)");
  window["status"] = "incomplete";  // the start call returned, but events were lost
  EXPECT_EQ(window_status_text(window), "incomplete (events may be missing)");
  window["status"] = "unknown";
  EXPECT_EQ(window_status_text(window), "incomplete (ended, but its end record was lost, events may be missing)");
  FakeSymbols symbols;
  EXPECT_NE(render_window(window, 1, symbols)[0].find("lost ?"), std::string::npos);
}

// A probe session's stop text: what changed since the previous stop, in the
// debugger's names (tests/gdb/window_text_test.py checks the same text).
TEST(ProbeRender, ChangesAtAStopNameCallersSamplesAndGroups) {
  FakeSymbols symbols;
  symbols.places[0x1200] = {"svc::validate(unsigned long, unsigned long)", 0, "t.cc:45"};
  symbols.places[0x1c00] = {"svc::handle_request(svc::Request*)", 0, "t.cc:80"};
  symbols.places[0x2000] = {};  // code the debugger has no name for
  const auto answered = nlohmann::json::parse(R"([{"address": "svc::validate", "static_va": "0x1200",
    "live": "0x555555555200"}, {"address": "0x1c40", "static_va": "0x1c40", "live": "0x555555555c40"}])");
  const auto changes = nlohmann::json::parse(R"({"elapsed_ms": 1530, "since_ms": 1130, "hits_added": 120,
    "lost_events": 0, "lost_added": 0, "addresses": [
      {"address": "svc::validate", "hits": 520, "hits_added": 120, "passed": 500, "passed_added": 100,
       "threads": 4, "new_threads": [4243],
       "callers": {"method": "exact", "sites": [{"hits": 420, "hits_added": 100, "new": true,
          "return_live": "0x555555555c34", "call_site_live": "0x555555555c2f"},
         {"hits": 100, "hits_added": 20, "new": false, "return_live": "0x555555556010"}]},
       "groups": {"by": "tid", "values": [{"key": "0x1093", "hits": 260, "hits_added": 60, "new": false}]},
       "samples": [{"hit": 12, "tid": 4242, "fetches": [{"name": "amount", "value": "0x5"}],
                    "return_live": "0x555555555c34", "call_site_live": "0x555555555c2f"}],
       "records_lost_added": 3},
      {"address": "0x1c40", "hits": 7, "hits_added": 0, "passed": 7, "passed_added": 0, "threads": 1,
       "new_threads": [], "samples": []}]})");
  const auto lines = render_probe_changes(changes, answered, 2, symbols);
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[0], "xref: probe session 2 at 1.53 s (+0.40 s): 120 new hits, 0 lost");
  EXPECT_EQ(lines[1], "  svc::validate  svc::validate(unsigned long, unsigned long) at t.cc:45  hits 520 (+120)  "
                      "passed 500 (+100)  threads 4, new 4243");
  EXPECT_EQ(lines[2], "    callers (exact):");
  EXPECT_EQ(lines[3], "      +100  svc::handle_request(svc::Request*)+0x2f at t.cc:80  (420 in all)  new");
  EXPECT_EQ(lines[4], "      +20  0x555555556010 (return address)  (100 in all)");
  EXPECT_EQ(lines[5], "    by tid:");
  EXPECT_EQ(lines[6], "      +60  4243  (260 in all)");
  EXPECT_EQ(lines[7], "    sample hit 12  tid 4242  amount=0x5  from svc::handle_request(svc::Request*)+0x2f at t.cc:80");
  EXPECT_EQ(lines[8], "    lost 3 samples (ring buffer full)");
  EXPECT_EQ(lines[9], "  0x1c40  svc::handle_request(svc::Request*)+0x40 at t.cc:80  hits 7 (no new hits)");
}

// --stacks: frames by the debugger's names, the call before each return
// address (tests/gdb/probe_text_test.py checks the same text).
TEST(ProbeRender, StacksAtAStopAndInShow) {
  FakeSymbols symbols;
  symbols.places[0x1200] = {"settle(unsigned long)", 0, "t.cc:20"};
  symbols.places[0x1c00] = {"handle_request(Request*)", 0, "t.cc:80"};
  const auto answered = nlohmann::json::parse(R"([{"address": "settle", "static_va": "0x1200", "live": "0x555555555200"}])");
  const auto stack = nlohmann::json::parse(R"({"key": "0x1", "hits": 6, "hits_added": 2, "new": false, "frames": [
    {"live": "0x555555555200", "kind": "pc"},
    {"live": "0x555555555259", "kind": "return", "call_site_live": "0x555555555254"},
    {"live": "0x555555555c50", "kind": "return", "call_site_live": "0x555555555c4b"}]})");
  nlohmann::json changes = {{"elapsed_ms", 100}, {"since_ms", 0}, {"hits_added", 2}, {"lost_events", 0},
                            {"addresses", {{{"address", "settle"}, {"hits", 6}, {"hits_added", 2}, {"passed", 6},
                                            {"threads", 1}, {"new_threads", nlohmann::json::array()},
                                            {"stacks", {{"method", "frame_pointers"}, {"stacks", nlohmann::json::array({stack})}}},
                                            {"samples", nlohmann::json::array()}}}}};
  const auto lines = render_probe_changes(changes, answered, 1, symbols);
  ASSERT_EQ(lines.size(), 7u) << changes.dump();
  EXPECT_EQ(lines[2], "    stacks (frame_pointers):");
  EXPECT_EQ(lines[3], "      +2  (6 in all)");
  EXPECT_EQ(lines[4], "          settle(unsigned long) at t.cc:20");
  EXPECT_EQ(lines[5], "          settle(unsigned long)+0x54 at t.cc:20");
  EXPECT_EQ(lines[6], "          handle_request(Request*)+0x4b at t.cc:80");
  nlohmann::json document = {{"backend", "uprobe_multi"}, {"summary", {{"duration_ms", 100}}},
                             {"addresses", {{{"address", "settle"}, {"hits", 6}, {"passed", 6}, {"rate_per_s", 60.0},
                                             {"threads", nlohmann::json::array()},
                                             {"stacks", {{"method", "frame_pointers"}, {"keys", 1}, {"unread", 0},
                                                         {"stacks", nlohmann::json::array({stack})}}},
                                             {"samples", nlohmann::json::array()}}}}};
  const auto shown = render_probe_document(document, answered, 1, "running", symbols);
  ASSERT_EQ(shown.size(), 7u);
  EXPECT_EQ(shown[2], "    stacks (frame_pointers, 1 distinct stack, 0 unread):");
  EXPECT_EQ(shown[3], "      6");
  EXPECT_EQ(shown[5], "          settle(unsigned long)+0x54 at t.cc:20");
}

TEST(ProbeRender, EndLineSaysHitsSamplesAndLoss) {
  const auto summary = nlohmann::json::parse(R"({"hits": 5, "passed": 5, "records_received": 5, "lost_events": 0})");
  EXPECT_EQ(probe_end_line(3, "until_hits", summary, nullptr),
            "xref: session 3 ended (until_hits): 5 hits, 5 passed, 5 samples, lost 0");
  EXPECT_EQ(probe_end_line(3, "target_exited", summary, {{"message", "process 9 exited during the probe"}}),
            "xref: session 3 ended (target_exited): 5 hits, 5 passed, 5 samples, lost 0; process 9 exited during the "
            "probe");
}

// After session.release: the lines gdb-python/xref/release_text.py prints
// (tests/gdb/probe_text_test.py checks the same strings).
TEST(ProbeRender, ReleaseSaysWhichSiteSinceWhenAndWhy) {
  auto released = nlohmann::json::parse(R"({"session": 1, "reason": "breakpoint 2", "ended": false, "gap_us": 830,
      "process_stopped": true, "hits_may_be_lost": false,
      "released": [{"address": "tally", "function": "tally", "probe_live": "0x555555555250", "ret_site": false,
                    "at_ms": 41, "hits": 3, "passed": 3}]})");
  EXPECT_EQ(render_release(1, released, {0x555555555250}),
            std::vector<std::string>{"xref: session 1 no longer observes tally at 0x555555555250 since 41 ms "
                                     "(breakpoint 2 there): 3 hits counted up to then"});
  released["hits_may_be_lost"] = true;
  EXPECT_EQ(render_release(1, released, {0x555555555250}).at(1),
            "xref: warning: session 1's other sites were out for 830 us while the process ran: hits then were not "
            "counted");
  EXPECT_EQ(render_release(2, {{"reason", "breakpoint 4"}, {"ended", true}, {"released", nlohmann::json::array()}},
                           {0x555555555250}),
            std::vector<std::string>{"xref: session 2 ended (released): breakpoint 4 is at its probe site "
                                     "0x555555555250; what it recorded is kept"});
  EXPECT_TRUE(render_release(2, {{"reason", "breakpoint 4"}, {"ended", false}, {"released", nlohmann::json::array()}},
                             {1})
                  .empty());
}

// The protocol client against the scripted helper.
HelperCommand fake_helper() { return {{XREF_FAKE_HELPER}}; }

TEST(HelperClient, HandshakeRequestsAndEvents) {
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  ASSERT_NE(client, nullptr) << error;
  EXPECT_EQ(client->tool_version(), "0.1.0-fake");
  HelperReply reply = client->request("command", {{"argv", {"doctor"}}}, 10s);
  ASSERT_TRUE(reply.ok) << reply.message;
  EXPECT_EQ(reply.result["document"]["operation"], "doctor");
  reply = client->request("no.such.method", nlohmann::json::object(), 10s);
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.code, "unknown_method");
  reply = client->request("session.start", {{"argv", {"trace", "--here"}}, {"context", {{"pid", getpid()}}}}, 10s);
  ASSERT_TRUE(reply.ok) << reply.message;
  ASSERT_TRUE(client->wait_for_event(10s));
  auto events = client->take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "window");
  EXPECT_EQ(events[0].session, 1u);
  // The session_ended event comes before the response to session.stop.
  reply = client->request("session.stop", {{"session", 1}}, 10s);
  ASSERT_TRUE(reply.ok) << reply.message;
  events = client->take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "session_ended");
  client->close(5s);
  EXPECT_EQ(client->ending(), "exited with status 0");  // stdin closed: the helper ends by itself
}

TEST(HelperClient, AMissingHelperIsOneClearError) {
  std::string error;
  auto client = HelperClient::start({{"/nonexistent/xref", "serve"}}, "test", 10s, error);
  EXPECT_EQ(client, nullptr);
  EXPECT_EQ(error, "cannot start the helper '/nonexistent/xref serve': No such file or directory; set it with "
                   "`xref helper PATH` (or XREF_HELPER)");
}

TEST(HelperClient, AProtocolVersionMismatchIsRefused) {
  setenv("FAKE_HELPER_PROTOCOL", "2", 1);
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  unsetenv("FAKE_HELPER_PROTOCOL");
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(error.find("speaks protocol 2, this plugin speaks protocol 1"), std::string::npos) << error;
}

TEST(HelperClient, AHelperThatDiesBeforeTheHandshakeIsReportedWithItsLastWords) {
  std::string error;
  auto client = HelperClient::start({{"/bin/sh", "-c", "echo 'sudo: a password is required' >&2; exit 1"}}, "test", 10s,
                                    error);
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(error.find("exited with status 1 before the handshake: sudo: a password is required"), std::string::npos)
      << error;
}

TEST(HelperClient, APendingRequestFailsWhenTheHelperIsKilled) {
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  ASSERT_NE(client, nullptr) << error;
  std::thread killer([pid = client->pid()] {
    std::this_thread::sleep_for(200ms);
    kill(pid, SIGKILL);
  });
  const auto started = std::chrono::steady_clock::now();
  const HelperReply reply = client->request("test.never_answers", nlohmann::json::object(), 60s);
  killer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.code, "helper_exited");
  EXPECT_NE(reply.message.find("was killed by signal 9 (SIGKILL)"), std::string::npos) << reply.message;
  EXPECT_FALSE(client->alive());
  // Later requests fail at once, no SIGPIPE.
  EXPECT_EQ(client->request("sessions", nlohmann::json::object(), 10s).code, "helper_exited");
}

}  // namespace
}  // namespace xref::lldb_plugin
