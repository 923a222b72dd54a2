// xref serve driven over pipes like a debugger front end: the handshake,
// protocol errors that leave the helper up, one-shot commands, trace
// sessions checked against the sample service's own record, several
// sessions at once, and no probe left behind however the helper ends.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "held_probes.h"
#include "sample_target.h"
#include "serve_client.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

const char* const kSampleFunctions = "validate,price_order,apply_fee,route_even,route_odd,settle";

void handshake(ServeClient& helper) {
  const auto hello = helper.read();
  ASSERT_EQ(hello["type"], "hello") << hello.dump();
  ASSERT_EQ(hello["protocol"], 2);
  ASSERT_EQ(hello["protocols"], nlohmann::json({1, 2}));
  ASSERT_EQ(hello["pid"], helper.pid());
  const auto answer = helper.request("hello", {{"protocol", 1}, {"client", "serve_cli_test"}});
  ASSERT_EQ(answer["result"]["protocol"], 1) << answer.dump();
}

std::vector<std::string> service_command(const std::string& record = {}) {
  std::vector<std::string> argv = {XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", "2000"};
  if (!record.empty()) argv.insert(argv.end(), {"--record", record});
  return argv;
}

nlohmann::json trace_start(ServeClient& helper, pid_t pid, std::vector<std::string> extra) {
  std::vector<std::string> argv = {"trace", "--start", "handle_request", "--fetch", "id=+0(%di):u64"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return helper.request("session.start", {{"argv", argv}, {"context", {{"pid", pid}}}});
}

bool link_exists(uint64_t id) {
  return std::system(("bpftool link show id " + std::to_string(id) + " >/dev/null 2>&1").c_str()) == 0;
}

// While attached the probed instructions are patched (int3, or a call on a
// 5-byte nop); afterwards every one reads back as the file has it and the
// links are gone.
void expect_attached(pid_t target, const HeldProbes& held) {
  ASSERT_FALSE(held.link_ids.empty()) << "no uprobe_multi link into PID " << target;
  ASSERT_FALSE(held.offsets.empty());
  const CodeBytes bytes = code_bytes(target, held.path, held.offsets);
  EXPECT_NE(bytes.in_memory, bytes.in_file) << "the probes should show in the target's code";
}

void expect_nothing_attached(pid_t target, const HeldProbes& held) {
  for (uint64_t id : held.link_ids) EXPECT_FALSE(link_exists(id)) << "link " << id << " is still there";
  const CodeBytes bytes = code_bytes(target, held.path, held.offsets);
  EXPECT_EQ(bytes.in_memory, bytes.in_file) << "a probed instruction still differs from the file";
  for (int byte : bytes.in_memory) EXPECT_NE(byte, 0xcc);
}

// A helper with one trace session running on its own sample service, its
// probes seen attached and its first window received: the start of every
// test of how a helper's end detaches.
struct RunningSession {
  TargetProcess target{service_command()};
  ServeClient helper;
  uint64_t session = 0;
  HeldProbes held;
};

void start_running(RunningSession& running, const std::string& functions) {
  handshake(running.helper);
  const auto started = trace_start(running.helper, running.target.pid(), {"--functions", functions});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  running.session = started["result"]["session"];
  running.held = held_probes(running.helper.pid(), running.target.pid());
  expect_attached(running.target.pid(), running.held);
  running.helper.await_event("window", running.session);
}

// The sample service's record for one request: the functions it called, in order.
std::vector<std::string> recorded_calls(const std::string& record, uint32_t tid, uint64_t request) {
  for (;;) {
    const auto requests = read_sample_record(record);
    // A request's lines are written together, after it returns.
    if (auto found = requests.find({tid, request}); found != requests.end()) return call_names(found->second);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::string> entries(const nlohmann::json& window) {
  std::vector<std::string> names;
  for (const auto& event : window["events"]) {
    if (event["kind"] == "entry") names.push_back(plain_name(event["symbol"]));
  }
  return names;
}

bool is_event(const nlohmann::json& message, const std::string& event, uint64_t session) {
  return message.value("type", "") == "event" && message["event"] == event && message["session"] == session;
}

TEST(ServeCli, HandshakeFirstAndProtocolErrorsKeepTheHelperUp) {
  ServeClient helper;
  const auto hello = helper.read();
  EXPECT_EQ(hello["type"], "hello");
  EXPECT_EQ(hello["tool"], "xref");
  EXPECT_EQ(hello["protocol"], 2);

  // Nothing runs before hello; a wrong version is refused and names both.
  EXPECT_EQ(helper.request("sessions")["error"]["code"], "not_ready");
  const auto mismatch = helper.request("hello", {{"protocol", 3}});
  EXPECT_EQ(mismatch["error"]["code"], "version_mismatch");
  EXPECT_NE(mismatch["error"]["message"].get<std::string>().find("protocol 3"), std::string::npos);
  EXPECT_NE(mismatch["error"]["message"].get<std::string>().find("protocols 1 to 2"), std::string::npos);
  EXPECT_EQ(helper.request("command", {{"argv", {"doctor"}}})["error"]["code"], "not_ready");
  EXPECT_EQ(helper.request("hello", {{"protocol", 1}})["result"]["protocol"], 1);

  // Each bad line gets its error, with the id when there was one.
  helper.send_raw("this is not json\n");
  EXPECT_EQ(helper.read()["error"]["code"], "parse_error");
  helper.send_raw("[1, 2, 3]\n");
  EXPECT_EQ(helper.read()["error"]["code"], "parse_error");
  helper.send_raw("{\"method\": \"sessions\"}\n");
  auto missing_id = helper.read();
  EXPECT_EQ(missing_id["error"]["code"], "invalid_request");
  EXPECT_TRUE(missing_id["id"].is_null());
  helper.send_raw("{\"id\": 41}\n");
  auto missing_method = helper.read();
  EXPECT_EQ(missing_method["error"]["code"], "invalid_request");
  EXPECT_EQ(missing_method["id"], 41);
  EXPECT_EQ(helper.request("session.show", {{"session", 1}})["error"]["code"], "unknown_method");
  EXPECT_EQ(helper.request("session.stop", {{"session", 99}})["error"]["code"], "unknown_session");
  EXPECT_EQ(helper.request("session.stop", {{"session", "one"}})["error"]["code"], "invalid_request");
  // Over 1 MiB: answered once, the rest of the line skipped, the next line read.
  helper.send_raw("{\"id\": 42, \"method\": \"sessions\", \"pad\": \"" + std::string(size_t{1} << 20, 'x') + "\"}\n");
  auto too_large = helper.read();
  EXPECT_EQ(too_large["error"]["code"], "message_too_large");
  EXPECT_TRUE(too_large["id"].is_null());

  EXPECT_EQ(helper.request("sessions")["result"]["sessions"], nlohmann::json::array());
  // shutdown answers, then the helper exits with its stdin still open.
  EXPECT_EQ(helper.request("shutdown")["result"], nlohmann::json::object());
  EXPECT_EQ(helper.read_to_end().size(), 0u);
  EXPECT_EQ(helper.wait(), 0);
}

// Nesting parses fine but copying and dumping recurse per level: ~300k
// levels in one line crashed the helper. Each such line is a parse_error
// now, and the helper answers the next request.
TEST(ServeCli, DeeplyNestedLinesAreAnsweredAndTheHelperGoesOn) {
  ServeClient helper;
  ASSERT_NO_FATAL_FAILURE(handshake(helper));
  auto objects = [](int levels) {
    std::string text;
    for (int level = 0; level < levels; ++level) text += "{\"a\":";
    return text;
  };
  const std::string arrays = std::string(300000, '[') + std::string(300000, ']');
  const std::vector<std::string> lines = {
      std::string(300000, '['), objects(200000),
      "{\"id\": 5, \"method\": \"sessions\", \"params\": {\"x\": " + arrays + "}}"};
  for (const std::string& line : lines) {
    helper.send_raw(line + "\n");
    const auto answer = helper.read();
    EXPECT_EQ(answer["error"]["code"], "parse_error") << answer.dump();
    EXPECT_TRUE(answer["id"].is_null());
    EXPECT_NE(answer["error"]["message"].get<std::string>().find("nested deeper than 256 levels"), std::string::npos);
    EXPECT_EQ(helper.request("sessions")["result"]["sessions"], nlohmann::json::array());
  }
  // 300k `{"a":` are 1.5 MB: over the line limit, answered as such.
  helper.send_raw(objects(300000) + "\n");
  EXPECT_EQ(helper.read()["error"]["code"], "message_too_large");
  EXPECT_EQ(helper.request("sessions")["result"]["sessions"], nlohmann::json::array());
  EXPECT_EQ(kill(helper.pid(), 0), 0);
  EXPECT_EQ(helper.request("shutdown")["result"], nlohmann::json::object());
  EXPECT_EQ(helper.wait(), 0);
}

TEST(ServeCli, CommandRunsOneShotCommandsLikeTheCli) {
  SampleTarget target;
  ServeClient helper;
  handshake(helper);
  const nlohmann::json context = {{"pid", target.process.pid()}};

  // context.pid fills in --pid; the document is the CLI's.
  const auto maps = helper.request("command", {{"argv", {"maps"}}, {"context", context}});
  ASSERT_TRUE(maps.contains("result")) << maps.dump();
  EXPECT_EQ(maps["result"]["exit_status"], 0);
  const auto& document = maps["result"]["document"];
  EXPECT_EQ(document["operation"], "live_maps");
  EXPECT_EQ(document["process"]["pid"], target.process.pid());
  const XrefRun cli = run_xref({"maps", "--pid", target.pid(), "--json"});
  ASSERT_EQ(cli.exit_status, 0);
  EXPECT_EQ(document["data"]["modules"], cli.json()["data"]["modules"]);
  const uint64_t slide = target.process.value("func", "settle") - target.nm.at("settle");
  bool main_seen = false;
  for (const auto& module : document["data"]["modules"]) {
    if (module["main_executable"] != true) continue;
    main_seen = true;
    EXPECT_EQ(module["load_bias"], hex(slide));
  }
  EXPECT_TRUE(main_seen);

  // --pid in the words wins over the context; --json is implied.
  const std::string settle = hex(target.process.value("func", "settle"));
  const auto resolve = helper.request("command", {{"argv", {"resolve", "--pid", target.pid(), settle}}});
  EXPECT_EQ(resolve["result"]["exit_status"], 0) << resolve.dump();
  EXPECT_EQ(resolve["result"]["document"]["data"]["addresses"][0]["candidates"][0]["static_va"], hex(target.nm.at("settle")));

  // Failures are the CLI's documents and statuses.
  const auto unmapped = helper.request("command", {{"argv", {"resolve", "0x10"}}, {"context", context}});
  EXPECT_EQ(unmapped["result"]["exit_status"], 8) << unmapped.dump();
  EXPECT_EQ(unmapped["result"]["document"]["error"]["code"], "address_unmapped");
  const auto usage = helper.request("command", {{"argv", {"maps", "--bogus"}}, {"context", context}});
  EXPECT_EQ(usage["result"]["exit_status"], 2);
  EXPECT_EQ(usage["result"]["document"]["operation"], "live_maps");
  EXPECT_EQ(usage["result"]["document"]["error"]["code"], "invalid_argument");
  const auto no_pid = helper.request("command", {{"argv", {"maps"}}});
  EXPECT_EQ(no_pid["result"]["exit_status"], 2);

  // --help returns CLI11's help text and runs nothing.
  const auto help = helper.request("command", {{"argv", {"resolve", "--help"}}, {"context", context}});
  EXPECT_FALSE(help["result"].contains("document"));
  EXPECT_NE(help["result"]["help"].get<std::string>().find("--pid"), std::string::npos);
  const auto overview = helper.request("command", {{"argv", nlohmann::json::array({"--help"})}});
  EXPECT_NE(overview["result"]["help"].get<std::string>().find("memscan"), std::string::npos) << overview.dump();

  // doctor takes no --pid: the context's is not forced on it.
  const auto doctor = helper.request("command", {{"argv", {"doctor"}}, {"context", context}});
  const XrefRun doctor_cli = run_xref({"doctor", "--json"});
  EXPECT_EQ(doctor["result"]["exit_status"], doctor_cli.exit_status) << doctor.dump();
  EXPECT_EQ(doctor["result"]["document"]["operation"], "doctor");
  std::vector<std::string> served_checks, cli_checks;
  for (const auto& check : doctor["result"]["document"]["data"]["checks"]) served_checks.push_back(check["name"]);
  const auto cli_document = doctor_cli.json();
  for (const auto& check : cli_document["data"]["checks"]) cli_checks.push_back(check["name"]);
  EXPECT_EQ(served_checks, cli_checks);

  // trace is a session, not a one-shot command.
  const auto trace = helper.request("command", {{"argv", {"trace", "--start", "handle_request"}}, {"context", context}});
  EXPECT_EQ(trace["error"]["code"], "invalid_argument");
  EXPECT_EQ(trace["error"]["exit_status"], 2);
  EXPECT_EQ(helper.request("command", {{"argv", nlohmann::json::array()}})["error"]["code"], "invalid_request");

  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
}

TEST(ServeCli, UnderSudoOnlyTheSudoUsersProcessesAreTargets) {
  SampleTarget target;
  const uid_t stranger = getuid() == 65534 ? 65533 : 65534;
  ServeClient helper({"SUDO_UID=" + std::to_string(stranger)});
  handshake(helper);
  const auto maps = helper.request("command", {{"argv", {"maps"}}, {"context", {{"pid", target.process.pid()}}}});
  EXPECT_EQ(maps["result"]["exit_status"], 18) << maps.dump();
  EXPECT_EQ(maps["result"]["document"]["error"]["code"], "sudo_user_cannot_ptrace");
  const auto trace = trace_start(helper, target.process.pid(), {});
  EXPECT_EQ(trace["error"]["code"], "sudo_user_cannot_ptrace") << trace.dump();
  EXPECT_EQ(trace["error"]["exit_status"], 18);
  EXPECT_EQ(trace["error"]["message"], "process " + target.pid() + " belongs to uid " + std::to_string(getuid()) +
                                           ": uid " + std::to_string(stranger) +
                                           ", who ran xref through sudo, could not ptrace it");
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
}

// Under sudo the files a session or a command names are opened with the
// sudo user's rights: /etc/shadow as --mark-file and a root-only --bin are
// refused, a log the user can read stamps the windows. The target runs as
// that user (under sudo, serve opens only the user's processes).
TEST(ServeCli, UnderSudoFilesAreOpenedWithTheSudoUsersRights) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr) << "no user nobody";
  const std::string uid = std::to_string(nobody->pw_uid), gid = std::to_string(nobody->pw_gid);
  std::vector<std::string> command = {"/usr/bin/setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups"};
  const auto service = service_command();
  command.insert(command.end(), service.begin(), service.end());
  TargetProcess target(command);
  char name[] = "/tmp/xref-serve-sudo-XXXXXX";
  const std::string directory = mkdtemp(name);
  chmod(directory.c_str(), 0755);
  const std::string log = directory + "/app.log";
  std::ofstream(log) << "request 7 accepted\n";
  chmod(log.c_str(), 0644);
  const std::string copy = directory + "/sample_service";
  std::filesystem::copy_file(XREF_SAMPLE_SERVICE, copy);
  chmod(copy.c_str(), 0600);

  ServeClient helper({"SUDO_UID=" + uid, "SUDO_GID=" + gid, "SUDO_USER=nobody"});
  handshake(helper);
  const auto shadow = trace_start(helper, target.pid(), {"--functions", "validate", "--mark-file", "/etc/shadow",
                                                         "--mark-regex", "^(root:[^:]*)"});
  EXPECT_EQ(shadow["error"]["code"], "permission_denied") << shadow.dump();
  EXPECT_EQ(shadow["error"]["exit_status"], 9);
  EXPECT_EQ(shadow["error"]["message"], "cannot read --mark-file /etc/shadow: Permission denied");
  const auto maps = helper.request("command", {{"argv", {"maps", "--bin", copy}}, {"context", {{"pid", target.pid()}}}});
  EXPECT_EQ(maps["result"]["exit_status"], 9) << maps.dump();
  EXPECT_EQ(maps["result"]["document"]["error"]["message"], copy + ": Permission denied");

  const auto started = trace_start(helper, target.pid(), {"--functions", "validate", "--max-windows", "1",
                                                          "--mark-file", log, "--mark-regex", "^request ([0-9]+)"});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const auto window = helper.await_event("window", started["result"]["session"].get<uint64_t>())["window"];
  EXPECT_EQ(window["mark_match"], "7") << window.dump();
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
  std::filesystem::remove_all(directory);
}

// A set-user-ID (or set-group-ID) copy of xref refuses to serve.
TEST(ServeCli, RefusesToRunSetuidOrSetgid) {
  XREF_REQUIRE(geteuid() == 0, "root, to make a set-user-ID copy owned by root");
  char dir_template[] = "/tmp/xref-serve-setuid-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  chmod(dir.c_str(), 0755);
  const std::string copy = dir + "/xref";
  std::filesystem::copy_file(XREF_BINARY, copy);
  for (mode_t mode : {mode_t{04755}, mode_t{02755}}) {
    ASSERT_EQ(chmod(copy.c_str(), mode), 0);
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    const pid_t child = fork();
    if (child == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(out[1], STDERR_FILENO);
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
      execl(copy.c_str(), copy.c_str(), "serve", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::string output;
    char buffer[4096];
    ssize_t count;
    while ((count = read(out[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<size_t>(count));
    close(out[0]);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 9) << std::oct << mode << ": " << output;
    EXPECT_NE(output.find("set-user-ID or set-group-ID"), std::string::npos) << output;
    EXPECT_EQ(output.find("\"hello\""), std::string::npos) << "no protocol line before the refusal";
  }
  std::filesystem::remove_all(dir);
}

TEST(ServeCli, TraceSessionWindowsEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-session");
  TargetProcess target(service_command(record_file.path));
  ServeClient helper;
  handshake(helper);
  const auto started = trace_start(helper, target.pid(), {"--functions", kSampleFunctions, "--max-windows", "2"});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const auto& result = started["result"];
  const uint64_t session = result["session"];
  EXPECT_EQ(result["backend"], "uprobe_multi");
  EXPECT_EQ(result["functions"], 7);
  EXPECT_GT(result["probes"].get<uint64_t>(), 7u);
  EXPECT_EQ(result["return_mode"], "ret_site_exact");
  const auto nm = nm_static_vas(XREF_SAMPLE_SERVICE);
  EXPECT_EQ(result["start"]["va"], hex(nm.at("handle_request")));
  EXPECT_EQ(result["start"]["live"], hex(target.value("func", "handle_request")));
  EXPECT_EQ(result["start"]["module"], "sample_service");

  std::vector<nlohmann::json> windows;
  for (int i = 0; i < 2; ++i) windows.push_back(helper.await_event("window", session)["window"]);
  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["stop_reason"], "max_windows");
  EXPECT_EQ(ended["summary"]["windows"], 2);
  EXPECT_EQ(ended["summary"]["lost"], 0);
  EXPECT_TRUE(ended["error"].is_null());
  for (const auto& open : ended["windows"]) EXPECT_NE(open["status"], "complete");

  for (const auto& window : windows) {
    EXPECT_EQ(window["status"], "complete");
    const uint64_t request = fetched(window["start_fetches"], "id");
    const auto recorded = recorded_calls(record_file.path, window["tid"].get<uint32_t>(), request);
    EXPECT_EQ(entries(window), recorded) << "request " << request;
    // Every traced call returned inside the window, back to depth 0.
    size_t returns = 0;
    for (const auto& event : window["events"]) returns += event["kind"] == "return";
    EXPECT_EQ(returns, recorded.size());
    EXPECT_EQ(window["events"].back()["depth"], 0);
  }
  EXPECT_EQ(helper.request("sessions")["result"]["sessions"], nlohmann::json::array());
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
}

// --mark-file through the protocol: the session's windows carry the log line
// of their own request; a regex that does not compile is refused at once.
TEST(ServeCli, SessionWindowsCarryTheirMark) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string log = "/tmp/xref-serve-mark-" + std::to_string(getpid()) + ".log";
  std::vector<std::string> command = service_command();
  command.insert(command.end(), {"--log", log});
  TargetProcess target(command);
  ServeClient helper;
  handshake(helper);
  const auto refused = trace_start(helper, target.pid(), {"--functions", "validate", "--mark-file", log,
                                                          "--mark-regex", "request ([0-9]+"});
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("does not compile"), std::string::npos);
  const auto started = trace_start(helper, target.pid(), {"--functions", "validate", "--max-windows", "3",
                                                          "--mark-file", log, "--mark-regex", "^request ([0-9]+) "});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  for (int i = 0; i < 3; ++i) {
    const auto window = helper.await_event("window", session)["window"];
    const uint64_t request = fetched(window["start_fetches"], "id");
    EXPECT_EQ(window["mark_status"], "matched") << window.dump();
    EXPECT_EQ(window["mark_match"], std::to_string(request)) << window.dump();
    EXPECT_EQ(window["mark_certain"], true);
  }
  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["summary"]["mark_file"]["clock"], "write_clock");
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
  std::filesystem::remove(log);
}

// Waits (bounded) until every thread of `pid` is stopped: kill(SIGSTOP)
// returns before a running thread has taken the signal, and a debugger
// sends its drain once it has seen the stop.
bool await_all_stopped(pid_t pid) {
  for (int attempt = 0; attempt < 400; ++attempt) {
    bool all = true;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
      std::ifstream stat(task.path() / "stat");
      std::string line;
      std::getline(stat, line);
      const size_t state = line.rfind(')');
      all &= state != std::string::npos && state + 2 < line.size() && line[state + 2] == 'T';
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// drain: what a front end sends when the debugger stops the process. Every
// window that closed before it is sent before its answer: here the process
// is stopped (SIGSTOP, as a debugger would, waiting until every thread is),
// and each request the target recorded since the first traced one (its
// record is written after the request returned, so after its window
// closed) has its window already.
TEST(ServeCli, DrainSendsEveryWindowClosedBeforeIt) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-drain");
  TargetProcess target(service_command(record_file.path));
  ServeClient helper;
  handshake(helper);
  EXPECT_EQ(helper.request("drain")["result"]["drained"], true);  // no session: answered at once
  const auto started = trace_start(helper, target.pid(), {"--functions", kSampleFunctions});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  std::set<uint64_t> windows = {fetched(helper.await_event("window", session)["window"]["start_fetches"], "id")};
  ASSERT_EQ(kill(target.pid(), SIGSTOP), 0);
  ASSERT_TRUE(await_all_stopped(target.pid())) << "the target's threads did not all stop";
  const auto drained = helper.request("drain");
  EXPECT_EQ(drained["result"]["drained"], true) << drained.dump();
  // No bound reached: the session goes on, so it is not among the ending ones.
  EXPECT_EQ(drained["result"]["ending"], nlohmann::json::array()) << drained.dump();
  for (const auto& event : helper.take_queued([&](const nlohmann::json& message) {
         return message.value("type", "") == "event" && message["event"] == "window" && message["session"] == session;
       })) {
    windows.insert(fetched(event["window"]["start_fetches"], "id"));
  }
  std::set<uint64_t> recorded;
  std::ifstream record(record_file.path);
  std::string tid, request, function;
  for (std::string line; std::getline(record, line);) {
    std::istringstream fields(line);
    if (fields >> tid >> request >> function && function == "handle_request") recorded.insert(std::stoull(request));
  }
  const uint64_t first = *windows.begin();
  for (uint64_t id : recorded) {
    if (id >= first) {
      EXPECT_TRUE(windows.count(id)) << "request " << id << " was recorded but its window was not sent";
    }
  }
  kill(target.pid(), SIGCONT);
  EXPECT_TRUE(helper.request("session.stop", {{"session", session}}).contains("result"));
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
}

TEST(ServeCli, TwoSessionsAtOnceAndStop) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess first(service_command());
  TargetProcess second(service_command());
  ServeClient helper;
  handshake(helper);
  const auto a = trace_start(helper, first.pid(), {"--functions", "validate"});
  const auto b = trace_start(helper, second.pid(), {"--functions", "settle", "--max-windows", "3"});
  ASSERT_TRUE(a.contains("result")) << a.dump();
  ASSERT_TRUE(b.contains("result")) << b.dump();
  const uint64_t session_a = a["result"]["session"];
  const uint64_t session_b = b["result"]["session"];
  EXPECT_NE(session_a, session_b);
  const HeldProbes held_a = held_probes(helper.pid(), first.pid());
  const HeldProbes held_b = held_probes(helper.pid(), second.pid());
  expect_attached(first.pid(), held_a);

  // b ends by itself; a runs on.
  const auto ended_b = helper.await_event("session_ended", session_b);
  EXPECT_EQ(ended_b["stop_reason"], "max_windows");
  EXPECT_EQ(ended_b["summary"]["windows"], 3);
  const auto window_a = helper.await_event("window", session_a)["window"];
  EXPECT_EQ(entries(window_a), (std::vector<std::string>{"handle_request", "validate"}));
  const auto listed = helper.request("sessions")["result"]["sessions"];
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["session"], session_a);
  EXPECT_EQ(listed[0]["pid"], first.pid());
  EXPECT_EQ(listed[0]["state"], "running");
  EXPECT_EQ(listed[0]["command"], "trace");
  EXPECT_GE(listed[0]["windows"].get<uint64_t>(), 1u);
  expect_nothing_attached(second.pid(), held_b);

  // The stop's answer follows the session_ended event and has its summary.
  const auto stopped = helper.request("session.stop", {{"session", session_a}});
  ASSERT_TRUE(stopped.contains("result")) << stopped.dump();
  ASSERT_TRUE(helper.queued([&](const nlohmann::json& message) { return is_event(message, "session_ended", session_a); }));
  const auto ended_a = helper.await_event("session_ended", session_a);
  EXPECT_EQ(ended_a["stop_reason"], "stopped");
  EXPECT_EQ(stopped["result"]["stop_reason"], "stopped");
  EXPECT_EQ(stopped["result"]["summary"], ended_a["summary"]);
  expect_nothing_attached(first.pid(), held_a);
  // Stopping it again answers with the same summary.
  EXPECT_EQ(helper.request("session.stop", {{"session", session_a}})["result"]["summary"], ended_a["summary"]);
  EXPECT_EQ(helper.request("sessions")["result"]["sessions"], nlohmann::json::array());

  // shutdown ends the sessions still running before it answers.
  const auto c = trace_start(helper, first.pid(), {"--functions", "settle"});
  ASSERT_TRUE(c.contains("result")) << c.dump();
  const uint64_t session_c = c["result"]["session"];
  const HeldProbes held_c = held_probes(helper.pid(), first.pid());
  expect_attached(first.pid(), held_c);
  EXPECT_EQ(helper.request("shutdown")["result"], nlohmann::json::object());
  ASSERT_TRUE(helper.queued([&](const nlohmann::json& message) { return is_event(message, "session_ended", session_c); }));
  EXPECT_EQ(helper.await_event("session_ended", session_c)["stop_reason"], "helper_exiting");
  EXPECT_EQ(helper.wait(), 0);
  expect_nothing_attached(first.pid(), held_c);
}

TEST(ServeCli, ClosingStdinEndsEverySessionAndDetaches) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RunningSession running;
  ASSERT_NO_FATAL_FAILURE(start_running(running, kSampleFunctions));
  auto& [target, helper, session, held] = running;

  // Malformed lines while a session runs: answered, and the session goes on.
  helper.send_raw("{\"id\": 7, \"method\": \n");
  EXPECT_EQ(helper.await([](const nlohmann::json& m) { return m.contains("error"); })["error"]["code"], "parse_error");
  helper.send_raw("{\"id\": 8, \"method\": \"sessions\", \"params\": 5}\n");
  EXPECT_EQ(helper.await([](const nlohmann::json& m) { return m.contains("error"); })["error"]["code"],
            "invalid_request");
  EXPECT_EQ(helper.request("sessions")["result"]["sessions"][0]["state"], "running");
  helper.await_event("window", session);

  helper.close_stdin();
  bool ended = false;
  for (const auto& message : helper.read_to_end()) {
    if (!is_event(message, "session_ended", session)) continue;
    ended = true;
    EXPECT_EQ(message["stop_reason"], "helper_exiting");
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(helper.wait(), 0);
  expect_nothing_attached(target.pid(), held);
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

TEST(ServeCli, SigtermEndsEverySessionAndDetaches) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RunningSession running;
  ASSERT_NO_FATAL_FAILURE(start_running(running, "validate"));
  auto& [target, helper, session, held] = running;
  kill(helper.pid(), SIGTERM);
  const auto messages = helper.read_to_end();
  ASSERT_FALSE(messages.empty());
  EXPECT_TRUE(is_event(messages.back(), "session_ended", session)) << messages.back().dump();
  EXPECT_EQ(messages.back()["stop_reason"], "helper_exiting");
  EXPECT_EQ(helper.wait(), 0);
  expect_nothing_attached(target.pid(), held);
}

// Killed outright, the helper cannot detach anything: the kernel closes its
// link descriptors, and that takes the probes out.
TEST(ServeCli, SigkillLeavesNothingAttached) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RunningSession running;
  ASSERT_NO_FATAL_FAILURE(start_running(running, kSampleFunctions));
  auto& [target, helper, session, held] = running;
  kill(helper.pid(), SIGKILL);
  EXPECT_EQ(helper.wait(), -SIGKILL);
  expect_nothing_attached(target.pid(), held);
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

// A probe session: at a drain its counts so far come as a probe_update
// event before the drain is answered; at its end (the target exits) the
// session_ended event carries the live_probe document, whose counts equal
// what the target recorded.
TEST(ServeCli, ProbeSessionUpdatesAtDrainsAndEndsWithItsDocument) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-probe");
  TargetProcess target(target_command(record_file.path, {"--requests", "60", "--interval-us", "1000"}));
  ServeClient helper;
  handshake(helper);
  const auto started = helper.request(
      "session.start", {{"argv", {"probe", "svc::validate", "--callers", "--duration-ms", "0"}},
                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  EXPECT_EQ(started["result"]["command"], "probe");
  EXPECT_EQ(started["result"]["addresses"][0]["address"], "svc::validate");
  record_file.release();  // the requests start now

  const auto drained = helper.request("drain");
  EXPECT_EQ(drained["result"]["drained"], true) << drained.dump();
  ASSERT_TRUE(helper.queued([&](const nlohmann::json& message) { return is_event(message, "probe_update", session); }))
      << "the counts come before the drain's answer";
  const auto update = helper.await_event("probe_update", session);
  const uint64_t at_drain = update["counts"]["addresses"][0]["passed"].get<uint64_t>();
  // A drain's update carries the result so far and, for the first stop,
  // all of it as new; both read at the same moment as the counts.
  const auto& so_far = update["document"]["addresses"][0];
  EXPECT_EQ(so_far["passed"].get<uint64_t>(), at_drain) << update.dump();
  EXPECT_TRUE(update["document"]["summary"]["stop_reason"].is_null()) << "still running";
  EXPECT_EQ(update["changes"]["addresses"][0]["passed_added"].get<uint64_t>(), at_drain);
  uint64_t caller_hits = 0;
  for (const auto& caller : so_far["callers"]["sites"]) caller_hits += caller["hits"].get<uint64_t>();
  EXPECT_EQ(caller_hits, so_far["hits"].get<uint64_t>());

  // The next stop's changes are the difference of the two documents.
  EXPECT_EQ(helper.request("drain")["result"]["drained"], true);
  const auto next = helper.await_event("probe_update", session);
  const auto& later = next["document"]["addresses"][0];
  const auto& changed = next["changes"]["addresses"][0];
  EXPECT_EQ(changed["hits_added"].get<uint64_t>(), later["hits"].get<uint64_t>() - so_far["hits"].get<uint64_t>());
  for (const auto& caller : changed["callers"]["sites"]) {
    uint64_t before = 0;
    for (const auto& earlier : so_far["callers"]["sites"]) {
      if (earlier["return_live"] == caller["return_live"]) before = earlier["hits"].get<uint64_t>();
    }
    EXPECT_EQ(caller["hits_added"].get<uint64_t>(), caller["hits"].get<uint64_t>() - before);
  }
  EXPECT_EQ(changed["samples"].size(), later["samples"].size() - so_far["samples"].size());

  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["stop_reason"], "target_exited") << ended.dump();
  const auto& address = ended["document"]["addresses"][0];
  uint64_t recorded = 0;
  for (const auto& [key, events] : read_record(record_file.path)) {
    for (const auto& event : events) recorded += event.kind == '>' && event.function == "validate";
  }
  EXPECT_EQ(recorded, 60u);
  EXPECT_EQ(address["hits"].get<uint64_t>(), recorded);
  EXPECT_LE(at_drain, recorded);
  EXPECT_EQ(address["callers"]["sites"][0]["hits"].get<uint64_t>(), recorded);
  EXPECT_EQ(ended["document"]["operation"], "live_probe");
}

// In a debugger: a probe never goes on an enabled breakpoint's location
// unless told to, and bp:N probes breakpoint N's locations (which the
// front end disables meanwhile).
TEST(ServeCli, ProbeSessionsMeetTheDebuggersBreakpoints) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("serve-probe-bp");
  TargetProcess target(target_command(record_file.path, {"--requests", "40", "--interval-us", "1000"}));
  ServeClient helper;
  handshake(helper);
  auto start = [&](nlohmann::json argv, const nlohmann::json& breakpoints) {
    return helper.request("session.start",
                          {{"argv", argv}, {"context", {{"pid", target.pid()}, {"breakpoints", breakpoints}}}});
  };
  const auto plain = start({"probe", "svc::validate", "--duration-ms", "0"}, nlohmann::json::array());
  ASSERT_TRUE(plain.contains("result")) << plain.dump();
  const std::string probe_live = plain["result"]["addresses"][0]["probe_live"];
  EXPECT_TRUE(helper.request("session.stop", {{"session", plain["result"]["session"]}}).contains("result"));

  const nlohmann::json breakpoints = {
      {{"id", 8}, {"enabled", true}, {"locations", {{{"id", "8.1"}, {"address", probe_live}, {"enabled", true}}}}}};
  const auto refused = start({"probe", "svc::validate", "--duration-ms", "0"}, breakpoints);
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_EQ(refused["error"]["code"], "breakpoint_collision") << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("breakpoint 8.1"), std::string::npos);

  const auto missing = start({"probe", "bp:9"}, breakpoints);
  ASSERT_TRUE(missing.contains("error")) << missing.dump();
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("there is no breakpoint 9"), std::string::npos)
      << missing.dump();

  const auto allowed = start({"probe", "svc::validate", "--duration-ms", "0", "--allow-breakpoint-collision"}, breakpoints);
  ASSERT_TRUE(allowed.contains("result")) << allowed.dump();
  EXPECT_TRUE(helper.request("session.stop", {{"session", allowed["result"]["session"]}}).contains("result"));

  const auto by_breakpoint = start({"probe", "bp:8", "--duration-ms", "0"}, breakpoints);
  ASSERT_TRUE(by_breakpoint.contains("result")) << by_breakpoint.dump();
  const uint64_t session = by_breakpoint["result"]["session"];
  EXPECT_EQ(by_breakpoint["result"]["addresses"][0]["address"], "bp:8");
  EXPECT_EQ(by_breakpoint["result"]["addresses"][0]["function"].get<std::string>().rfind("svc::validate(", 0), 0u);
  EXPECT_EQ(by_breakpoint["result"]["breakpoints_to_disable"], nlohmann::json::array({8}));
  record_file.release();
  const auto ended = helper.await_event("session_ended", session);
  uint64_t recorded = 0;
  for (const auto& [key, events] : read_record(record_file.path)) {
    for (const auto& event : events) recorded += event.kind == '>' && event.function == "validate";
  }
  EXPECT_EQ(recorded, 40u);
  EXPECT_EQ(ended["document"]["addresses"][0]["hits"].get<uint64_t>(), recorded) << ended.dump();
}

}  // namespace
}  // namespace xref::test
