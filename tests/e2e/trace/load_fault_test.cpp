// Under load, with a reader that stops reading, and at odd moments: a trace
// ends when it should, takes every probe out while the reader still sleeps,
// accounts for every window it opened, and never puts two requests in one
// window. The target is trace_target at full speed, its own record the
// ground truth.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "held_probes.h"
#include "require.h"
#include "run_xref.h"
#include "serve_client.h"
#include "target_process.h"
#include "tracefs_state.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

// Waits for `condition`. The cap is a guard against a hang, not a measure
// of speed: the conditions here come true in a few seconds or never.
bool eventually(const std::function<bool()>& condition) {
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < cap) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

std::string slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// xref with its stdout into a pipe that nobody reads until read_all().
class StalledXref {
 public:
  explicit StalledXref(const std::vector<std::string>& args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    char err_path[] = "/tmp/xref-load-stderr-XXXXXX";
    const int err_fd = mkstemp(err_path);
    err_path_ = err_path;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err_fd, STDERR_FILENO);
      std::vector<char*> argv = {const_cast<char*>(XREF_BINARY)};
      for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv(XREF_BINARY, argv.data());
      _exit(127);
    }
    close(err_fd);
    close(out[1]);
    out_ = out[0];
  }
  ~StalledXref() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
    unlink(err_path_.c_str());
  }
  StalledXref(const StalledXref&) = delete;
  StalledXref& operator=(const StalledXref&) = delete;

  pid_t pid() const { return pid_; }
  std::string err() const { return slurp(err_path_); }
  bool attached() const { return err().find("xref: tracing") != std::string::npos; }
  // Reads stdout to its end, then waits for the exit status.
  std::string read_all() {
    std::string text;
    char buffer[65536];
    ssize_t count;
    while ((count = read(out_, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(count));
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return text;
  }
  int exit_status() const { return exit_status_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string err_path_;
  int exit_status_ = -1;
};

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

// The checks every --jsonl run under load must pass: each window opened is
// in the output or counted as not shown, none that lost events says
// complete, and each holds one request of one thread (its events are what
// the target recorded for that request, or the start of it).
void expect_accounted_and_unmixed(const std::vector<nlohmann::json>& lines, const std::string& record_path) {
  ASSERT_GE(lines.size(), 2u);
  const nlohmann::json& summary = lines.back()["summary"];
  ASSERT_EQ(lines.back()["type"], "summary");
  uint64_t shown = 0;
  std::set<RequestKey> keys;
  for (const auto& line : lines) {
    if (line["type"] != "window") continue;
    ++shown;
    const auto& window = line["window"];
    if (window["possible_loss"] == true) {
      EXPECT_NE(window["status"], "complete") << "window " << window["window_id"] << " lost events";
    }
    if (!window["start_fetches"].empty()) keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  uint64_t not_shown = 0;
  for (const auto& [reason, count] : summary["windows_not_shown"].items()) not_shown += count.get<uint64_t>();
  EXPECT_EQ(shown + not_shown, summary["windows"].get<uint64_t>()) << summary.dump();
  EXPECT_EQ(summary["windows"].get<uint64_t>() + summary["windows_without_records"].get<uint64_t>(),
            summary["windows_opened"].get<uint64_t>())
      << summary.dump();

  const auto recorded = read_record(record_path);
  size_t compared = 0;
  for (const auto& line : lines) {
    if (line["type"] != "window") continue;
    const auto& window = line["window"];
    if (window["start_fetches"].empty() || window["possible_loss"] == true) continue;
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    auto truth = recorded.find(key);
    ASSERT_NE(truth, recorded.end()) << "window " << window["window_id"] << ": no such request in the record";
    const auto expected = expected_events(truth->second, all_traced_functions());
    const auto seen = window_events(window);
    if (window["status"] == "complete") {
      EXPECT_EQ(seen, expected) << "window " << window["window_id"];
    } else {
      // Open at the stop: the start of the request, never more than it.
      ASSERT_LE(seen.size(), expected.size()) << "window " << window["window_id"] << " holds more than its request";
      EXPECT_TRUE(std::equal(seen.begin(), seen.end(), expected.begin())) << "window " << window["window_id"];
    }
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

// trace_target at full speed, once `record`'s go file exists; `requests`
// per thread, 0 for as long as the test runs. A test that lets it run for
// ever stops it as soon as the trace is over, so the record stays small.
std::vector<std::string> loaded_target(const RecordFile& record, const std::string& threads,
                                       const std::string& requests = "4000", bool recorded = true) {
  return {XREF_TRACE_TARGET, "--record", recorded ? record.path : "/dev/null", "--go-file", record.go_file(),
          "--threads", threads, "--requests", requests, "--interval-us", "0"};
}

std::vector<std::string> trace_under_load(pid_t pid, const std::string& duration_ms) {
  return {"trace", "--pid", std::to_string(pid), "--start", "svc::handle_request", "--fetch", "id=+0(%di):u64",
          "--functions", functions_option(all_traced_functions()), "--duration-ms", duration_ms, "--jsonl"};
}

// The target's code, read from its memory, equals the file at every probed
// place the helper held. The kernel frees a closed link after an RCU grace
// period, so the int3 may outlive the descriptor by a moment: waited for.
void expect_code_restored(pid_t target, const HeldProbes& held) {
  eventually([&] {
    const CodeBytes bytes = code_bytes(target, held);
    return bytes.in_memory == bytes.in_file;
  });
  const CodeBytes bytes = code_bytes(target, held);
  EXPECT_EQ(bytes.in_memory, bytes.in_file) << "a probed instruction still differs from the file";
}

// While the output's reader still sleeps, the helper lets go of every link
// and the target's code is as the file has it; then the output, read at
// last, ends with `stop_reason` and accounts for every window.
void expect_detached_before_reading(StalledXref& xref, TargetProcess& target, const HeldProbes& held,
                                    const std::string& stop_reason, const RecordFile& record) {
  EXPECT_TRUE(eventually([&] { return held_links(xref.pid()) == 0; })) << "xref still holds its links: " << xref.err();
  expect_code_restored(target.pid(), held);
  target.stop();  // it runs for ever; its record holds every traced request by now
  const std::string out = xref.read_all();
  EXPECT_EQ(xref.exit_status(), 0) << xref.err();
  const auto lines = json_lines(out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["summary"]["stop_reason"], stop_reason);
  expect_accounted_and_unmixed(lines, record.path);
}

TEST(LoadFault, DeadlineIsKeptWhileTheReaderSleeps) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-deadline");
  TargetProcess target(loaded_target(record, "4", "0"));
  StalledXref xref(trace_under_load(target.pid(), "1500"));
  ASSERT_TRUE(eventually([&] { return xref.attached(); })) << xref.err();
  const HeldProbes held = held_probes(xref.pid(), target.pid());
  ASSERT_FALSE(held.offsets.empty());
  record.release();
  // Nobody reads its output, yet the probes go at the deadline.
  expect_detached_before_reading(xref, target, held, "duration", record);
}

TEST(LoadFault, SigtermStopsATraceWhileTheReaderSleeps) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-sigterm");
  TargetProcess target(loaded_target(record, "4", "0"));
  StalledXref xref(trace_under_load(target.pid(), "0"));
  ASSERT_TRUE(eventually([&] { return xref.attached(); })) << xref.err();
  const HeldProbes held = held_probes(xref.pid(), target.pid());
  record.release();
  // Load first: the record grows once requests run traced.
  ASSERT_TRUE(eventually([&] { return slurp(record.path).size() > 100000; }));
  kill(xref.pid(), SIGTERM);
  expect_detached_before_reading(xref, target, held, "interrupted", record);
}

// A window's events stop where the detach began: the windows still open at
// the end hold the start of their own request only (checked in
// expect_accounted_and_unmixed), with perf uprobes too, whose detach takes
// one grace period per probe.
TEST(LoadFault, PerfUprobeDetachMixesNoRequests) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-perf");
  TargetProcess target(loaded_target(record, "2", "40000"));
  std::vector<std::string> args = trace_under_load(target.pid(), "1000");
  args.insert(args.end(), {"--backend", "perf_uprobe"});
  const XrefRun run = run_xref_attached(args, record.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  target.stop();
  expect_accounted_and_unmixed(json_lines(run.out), record.path);
}

// More windows than the BPF results map holds (65,536), with a ring buffer
// so small that most lose events and many lose every event: each one is
// shown or counted.
TEST(LoadFault, EveryWindowOfALongRunIsAccountedFor) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-many");
  TargetProcess target({XREF_TRACE_TARGET, "--record", "/dev/null", "--go-file", record.go_file(), "--threads", "2",
                        "--requests", "0", "--interval-us", "0"});
  const XrefRun run = run_xref_attached({"trace", "--pid", std::to_string(target.pid()), "--start",
                                         "svc::handle_request", "--max-windows", "70000", "--duration-ms", "120000",
                                         "--ringbuf-bytes", "8192", "--jsonl"},
                                        record.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  target.stop();
  const auto lines = json_lines(run.out);
  ASSERT_GE(lines.size(), 2u);
  const nlohmann::json& summary = lines.back()["summary"];
  EXPECT_GT(summary["windows_opened"].get<uint64_t>(), 65536u);
  uint64_t shown = 0;
  for (const auto& line : lines) {
    if (line["type"] != "window") continue;
    ++shown;
    if (line["window"]["possible_loss"] == true) {
      EXPECT_NE(line["window"]["status"], "complete");
    }
  }
  uint64_t not_shown = 0;
  for (const auto& [reason, count] : summary["windows_not_shown"].items()) not_shown += count.get<uint64_t>();
  EXPECT_EQ(shown + not_shown, summary["windows"].get<uint64_t>());
  EXPECT_EQ(summary["windows"].get<uint64_t>() + summary["windows_without_records"].get<uint64_t>(),
            summary["windows_opened"].get<uint64_t>());
  // The ids are 1..opened, each window once: no phantom, no double.
  std::set<uint64_t> ids;
  for (const auto& line : lines) {
    if (line["type"] != "window") continue;
    const uint64_t id = line["window"]["window_id"];
    EXPECT_TRUE(ids.insert(id).second) << "window " << id << " twice";
    EXPECT_GE(id, 1u);
    EXPECT_LE(id, summary["windows_opened"].get<uint64_t>());
  }
  EXPECT_GT(summary["lost"].get<uint64_t>(), 0u) << "the ring buffer was meant to overflow";
}

// 16 threads at full speed into a small ring buffer: every window that
// ended says exactly how many of its events were lost (received plus lost
// is what the target recorded for that request), none that lost any says
// complete, and none mixes requests.
TEST(LoadFault, SixteenThreadsIntoASmallRingLoseExactlyWhatTheySay) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-sixteen");
  TargetProcess target(loaded_target(record, "16", "300"));
  std::vector<std::string> args = trace_under_load(target.pid(), "120000");
  args.insert(args.end(), {"--ringbuf-bytes", "16384"});
  const XrefRun run = run_xref_attached(args, record.go_file());
  // The trace ends when the target does, after its 16 x 300 requests.
  ASSERT_EQ(run.exit_status, 4) << run.err;
  const auto lines = json_lines(run.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.back()["summary"]["stop_reason"], "target_exited");
  EXPECT_GT(lines.back()["summary"]["lost"].get<uint64_t>(), 0u) << "the ring buffer was meant to overflow";
  expect_accounted_and_unmixed(lines, record.path);
  const auto recorded = read_record(record.path);
  size_t exact = 0;
  for (const auto& line : lines) {
    if (line["type"] != "window") continue;
    const auto& window = line["window"];
    const std::string status = window["status"];
    if ((status != "complete" && status != "incomplete") || window["end_record_lost"] == true ||
        window["start_fetches"].empty() || window["lost_events"].is_null()) {
      continue;
    }
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    auto truth = recorded.find(key);
    ASSERT_NE(truth, recorded.end());
    const size_t expected = expected_events(truth->second, all_traced_functions()).size();
    EXPECT_EQ(window["events"].size() + window["lost_events"].get<uint64_t>(), expected)
        << "window " << window["window_id"] << " (" << status << ")";
    ++exact;
  }
  EXPECT_GT(exact, 0u);
}

// --max-events counts the events shown, not the hidden end records.
TEST(LoadFault, MaxEventsIsTheNumberOfEventsShown) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("max-events");
  TargetProcess target(target_command(record.path, {"--threads", "2", "--interval-us", "100"}));
  const XrefRun run = run_xref_attached({"trace", "--pid", std::to_string(target.pid()), "--start",
                                         "svc::handle_request", "--functions",
                                         functions_option(all_traced_functions()), "--max-events", "100",
                                         "--duration-ms", "60000", "--json"},
                                        record.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  size_t events = 0;
  for (const auto& window : document["windows"]) events += window["events"].size();
  EXPECT_EQ(events, 100u);
  EXPECT_EQ(document["summary"]["stop_reason"], "max_events");
}

// An exec takes the probes away with the old image: the trace stops and
// says so with process_changed (exit status 5).
TEST(LoadFault, ExecDuringATraceIsProcessChanged) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string go = "/tmp/xref-exec-go-" + std::to_string(getpid());
  unlink(go.c_str());
  TargetProcess target({"/bin/sh", "-c", "echo ready; while [ ! -e " + go + " ]; do sleep 0.05; done; exec sleep 60"});
  const XrefRun run = run_xref_attached({"trace", "--pid", std::to_string(target.pid()), "--start",
                                         "libc.so.6:getpid", "--duration-ms", "60000", "--json"},
                                        go);
  unlink(go.c_str());
  EXPECT_EQ(run.exit_status, 5) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "target_changed");
  EXPECT_EQ(document["error"]["code"], "process_changed");
}

// xref serve with a front end that stopped reading: SIGTERM still takes
// every probe out, and the helper exits.
TEST(LoadFault, ServeDetachesOnSigtermWhileTheFrontEndSleeps) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("serve-stalled");
  TargetProcess target({XREF_TRACE_TARGET, "--record", "/dev/null", "--go-file", record.go_file(), "--threads", "2",
                        "--requests", "0", "--interval-us", "0"});
  ServeClient helper;
  ASSERT_TRUE(helper.request("hello", {{"protocol", 1}, {"client", "load_fault_test"}}).contains("result"));
  const auto started = helper.request(
      "session.start", {{"argv", {"trace", "--start", "svc::handle_request", "--fetch", "id=+0(%di):u64"}},
                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const HeldProbes held = held_probes(helper.pid(), target.pid());
  ASSERT_FALSE(held.offsets.empty());
  record.release();
  // The front end reads nothing more; the windows pile up behind the pipe.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  kill(helper.pid(), SIGTERM);
  EXPECT_TRUE(eventually([&] { return held_links(helper.pid()) == 0; })) << "the helper still holds its links";
  expect_code_restored(target.pid(), held);
  int status = 0;
  EXPECT_TRUE(eventually([&] { return waitpid(helper.pid(), &status, WNOHANG) == helper.pid(); }))
      << "the helper did not exit";
}

// --json under load: SIGINT ends the trace and the one document is written,
// bounded, with every window accounted for.
TEST(LoadFault, JsonUnderLoadIsWrittenOnSigint) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("load-json");
  TargetProcess target(loaded_target(record, "4", "0"));
  std::vector<std::string> args = trace_under_load(target.pid(), "0");
  args.back() = "--json";
  StalledXref xref(args);
  ASSERT_TRUE(eventually([&] { return xref.attached(); })) << xref.err();
  record.release();
  ASSERT_TRUE(eventually([&] { return slurp(record.path).size() > 100000; }));
  kill(xref.pid(), SIGINT);
  EXPECT_TRUE(eventually([&] { return held_links(xref.pid()) == 0; })) << xref.err();
  target.stop();
  const std::string out = xref.read_all();
  EXPECT_EQ(xref.exit_status(), 0) << xref.err();
  const auto document = nlohmann::json::parse(out);
  EXPECT_EQ(document["summary"]["stop_reason"], "interrupted");
  uint64_t not_shown = 0;
  for (const auto& [reason, count] : document["summary"]["windows_not_shown"].items()) not_shown += count.get<uint64_t>();
  EXPECT_EQ(document["windows"].size() + not_shown, document["summary"]["windows"].get<uint64_t>());
  EXPECT_GT(document["windows"].size(), 0u);
}

// The probes tracefs holds for one helper in the traced executable.
HeldProbes tracefs_held(pid_t helper) {
  const TracefsProbes probes = probes_of(helper, std::filesystem::canonical(XREF_TRACE_TARGET).string());
  HeldProbes held;
  held.path = probes.path;
  held.offsets = probes.offsets;
  return held;
}

// SIGINT or SIGTERM at moments drawn at random, on every backend, under
// load: the trace ends with its output, nothing stays in the target, and
// no probe or tracefs event remains. The seed is printed for a rerun.
TEST(LoadFault, SignalsAtRandomMomentsOnEveryBackend) {
  XREF_REQUIRE(bpf_usable() && tracefs_usable(), "root, BPF and tracefs uprobe_events");
  const unsigned seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937 random(seed);
  std::cout << "[ seed     ] " << seed << "\n";
  // Perf uprobes do not list their offsets in fdinfo; the plan is the same
  // as uprobe_multi's, so are its places.
  HeldProbes multi_held;
  for (const std::string backend : {"uprobe_multi", "perf_uprobe", "tracefs"}) {
    for (int round = 0; round < 2; ++round) {
      const RecordFile record("load-signal-" + backend);
      TargetProcess target(loaded_target(record, "2", "0", false));
      std::vector<std::string> args = trace_under_load(target.pid(), "0");
      args.insert(args.end(), {"--backend", backend});
      StalledXref xref(args);
      ASSERT_TRUE(eventually([&] { return xref.attached(); })) << backend << ": " << xref.err();
      const HeldProbes held = backend == "tracefs"       ? tracefs_held(xref.pid())
                              : backend == "perf_uprobe" ? multi_held
                                                         : held_probes(xref.pid(), target.pid());
      ASSERT_FALSE(held.offsets.empty()) << backend;
      if (backend == "uprobe_multi") multi_held = held;
      if (backend == "perf_uprobe") {
        EXPECT_GT(held_links(xref.pid()), 0) << "perf uprobe links";
      }
      record.release();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 800)(random)));
      const int signal = round == 0 ? SIGINT : SIGTERM;
      kill(xref.pid(), signal);
      const std::string out = xref.read_all();
      EXPECT_EQ(xref.exit_status(), 0) << backend << " signal " << signal << ": " << xref.err();
      const auto lines = json_lines(out);
      ASSERT_FALSE(lines.empty()) << backend;
      EXPECT_EQ(lines.back()["type"], "summary") << backend;
      EXPECT_EQ(lines.back()["summary"]["stop_reason"], "interrupted") << backend;
      expect_code_restored(target.pid(), held);
      EXPECT_FALSE(group_defined(xref.pid())) << backend << ": tracefs events left";
      EXPECT_FALSE(instance_exists(xref.pid())) << backend << ": tracefs instance left";
    }
  }
}

}  // namespace
}  // namespace xref::test
