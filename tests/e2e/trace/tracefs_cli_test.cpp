// xref trace --backend tracefs against trace_target: the same windows as the
// BPF backends (both equal to the program's own record), and the tracefs
// bookkeeping: no leftovers after any exit, leftovers of a killed helper
// reaped by the next one, other processes' hits left out.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>


#include "trace_harness.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

std::vector<std::string> trace_args(const TargetProcess& target, const std::string& backend,
                                    std::vector<std::string> extra,
                                    const std::string& fetch = "id=+0(%di):u64") {
  std::vector<std::string> args = {"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request",
                                   "--fetch", fetch, "--duration-ms", "20000", "--json", "--backend", backend};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Runs several xref commands at once; the go file is created once every one
// of them says its probes are attached.
std::vector<XrefRun> run_xrefs_attached(const std::vector<std::vector<std::string>>& commands,
                                        const std::string& go_file) {
  struct Child {
    pid_t pid = -1;
    std::string out, err;
    int status = 0;
    bool done = false;
  };
  auto slurp = [](const std::string& path) {
    std::string text;
    if (FILE* file = fopen(path.c_str(), "r")) {
      char buffer[4096];
      size_t count;
      while ((count = fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, count);
      fclose(file);
    }
    return text;
  };
  std::vector<Child> children(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    char out_path[] = "/tmp/xref-test-stdout-XXXXXX";
    char err_path[] = "/tmp/xref-test-stderr-XXXXXX";
    const int out_fd = mkstemp(out_path);
    const int err_fd = mkstemp(err_path);
    children[i].out = out_path;
    children[i].err = err_path;
    children[i].pid = fork();
    if (children[i].pid == 0) {
      dup2(out_fd, STDOUT_FILENO);
      dup2(err_fd, STDERR_FILENO);
      std::vector<char*> argv = {const_cast<char*>(XREF_BINARY)};
      for (const auto& arg : commands[i]) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv(XREF_BINARY, argv.data());
      _exit(127);
    }
    close(out_fd);
    close(err_fd);
  }
  bool released = false;
  for (;;) {
    bool all_done = true, all_attached = true;
    for (Child& child : children) {
      if (!child.done && waitpid(child.pid, &child.status, WNOHANG) == child.pid) child.done = true;
      all_done &= child.done;
      all_attached &= slurp(child.err).find("xref: tracing") != std::string::npos;
    }
    if (!released && all_attached) {
      if (FILE* go = fopen(go_file.c_str(), "w")) fclose(go);
      released = true;
    }
    if (all_done) break;
    usleep(5000);
  }
  std::vector<XrefRun> runs;
  for (Child& child : children) {
    XrefRun run;
    run.exit_status = WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1;
    run.out = slurp(child.out);
    run.err = slurp(child.err);
    unlink(child.out.c_str());
    unlink(child.err.c_str());
    runs.push_back(std::move(run));
  }
  return runs;
}

RequestKey key_of(const nlohmann::json& window) {
  return {window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
}

// Every window equals the target's record of its request; returns the
// windows' events by request, for comparing two runs.
std::map<RequestKey, std::vector<std::string>> expect_windows_match_record(const nlohmann::json& document,
                                                                           const std::string& record_file,
                                                                           const std::set<std::string>& traced) {
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) keys.insert(key_of(window));
  const auto record = await_record(record_file, keys);
  std::map<RequestKey, std::vector<std::string>> windows;
  for (const auto& window : document["windows"]) {
    const RequestKey key = key_of(window);
    windows[key] = window_events(window);
    EXPECT_TRUE(record.count(key)) << "request " << key.second << " on tid " << key.first << " not recorded";
    if (!record.count(key)) continue;
    EXPECT_EQ(window_events(window), expected_events(record.at(key), traced))
        << document["backend"] << " window " << window["window_id"] << " (request " << key.second << ")";
  }
  return windows;
}

// Both backends on the same target at once: the same requests give the same
// ordered windows, and both equal the record (recursion, the exception
// through traced frames, the tail call).
TEST(TraceCliTracefs, BpfAndTracefsGiveTheSameWindows) {
  XREF_REQUIRE(bpf_usable() && tracefs_usable(), "root, BPF and tracefs uprobe_events");
  const RecordFile record_file("tracefs-same");
  TargetProcess target(target_command(record_file.path, {}));
  const std::vector<std::string> extra = {"--functions", functions_option(all_traced_functions()), "--start-filter",
                                          "id <= 3", "--max-windows", "4"};
  const auto runs =
      run_xrefs_attached({trace_args(target, "auto", extra), trace_args(target, "tracefs", extra)}, record_file.go_file());
  const XrefRun& bpf_run = runs[0];
  const XrefRun& tracefs_run = runs[1];
  ASSERT_EQ(bpf_run.exit_status, 0) << bpf_run.err;
  ASSERT_EQ(tracefs_run.exit_status, 0) << tracefs_run.err;
  const auto bpf_document = bpf_run.json();
  const auto tracefs_document = tracefs_run.json();
  EXPECT_NE(bpf_document["backend"], "tracefs");
  EXPECT_EQ(tracefs_document["backend"], "tracefs");
  EXPECT_NE(tracefs_run.err.find("backend tracefs"), std::string::npos) << tracefs_run.err;
  for (const auto* document : {&bpf_document, &tracefs_document}) {
    ASSERT_EQ((*document)["windows"].size(), 4u) << (*document)["backend"];
    EXPECT_EQ((*document)["summary"]["stop_reason"], "max_windows");
    EXPECT_EQ((*document)["summary"]["complete_windows"], 4);
    EXPECT_EQ((*document)["summary"]["lost"], 0);
    for (const auto& window : (*document)["windows"]) {
      EXPECT_EQ(window["status"], "complete");
      EXPECT_EQ(window["possible_loss"], false);
    }
  }
  const auto& details = tracefs_document["summary"]["backend_details"];
  EXPECT_EQ(details["reader"], "per_cpu_trace_pipe_raw");
  EXPECT_EQ(details["tgid_filter"], "user_space");
  EXPECT_EQ(details["probe_path"], XREF_TRACE_TARGET);
  const auto from_bpf = expect_windows_match_record(bpf_document, record_file.path, all_traced_functions());
  const auto from_tracefs = expect_windows_match_record(tracefs_document, record_file.path, all_traced_functions());
  EXPECT_EQ(from_bpf, from_tracefs);
  std::set<uint64_t> ids;
  for (const auto& [key, events] : from_tracefs) ids.insert(key.second);
  EXPECT_EQ(ids, (std::set<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(xref_leftovers(), "");
}

// Entry and return fetches, signed and unsigned, equal the recorded values.
TEST(TraceCliTracefs, FetchesEqualRecordedValues) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-fetch");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(trace_args(
      target, "tracefs",
      {"--functions", "svc::apply_fee,svc::settle", "--fetch-at", "svc::apply_fee", "price=%di:u64,bps=%si:u64",
       "--fetch-ret", "svc::apply_fee", "fee=%ax:u64", "--fetch-ret", "svc::settle", "ret=%ax:u64,neg=%ax:s8",
       "--start-filter", "id >= 2 && id <= 4", "--max-windows", "3"},
      "id=+0(%di):u64,asset=+8(%di):u64,amount=+16(%di):u64"), record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 3u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) keys.insert(key_of(window));
  const auto recorded = await_record(record_file.path, keys);
  for (const auto& window : document["windows"]) {
    const uint64_t id = fetched(window["start_fetches"], "id");
    EXPECT_EQ(fetched(window["start_fetches"], "asset"), 1 + id % 4);
    EXPECT_EQ(fetched(window["start_fetches"], "amount"), 100 + 37 * (id % 11));
    EXPECT_EQ(fetched_fee_values(window), recorded_fee_values(recorded.at(key_of(window)))) << "request " << id;
  }
}

// Call-site mode: call and return sites, the tail jump as a [tail] entry.
TEST(TraceCliTracefs, CalleesOfAtDepthTwoEqualsGroundTruth) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-callees");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(trace_args(target, "tracefs",
                                          {"--callees-of", "svc::handle_request", "--depth", "2", "--start-filter",
                                           "id <= 5", "--max-windows", "6"}), record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["return_mode"], "call_site_exact");
  ASSERT_EQ(document["windows"].size(), 6u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) keys.insert(key_of(window));
  const auto recorded = await_record(record_file.path, keys);
  const auto& traced = all_traced_functions();
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window["status"], "complete");
    EXPECT_EQ(window_events(window, &traced), expected_call_site_events(recorded.at(key_of(window)), traced))
        << "request " << key_of(window).second;
  }
}

// --uretprobes become r: events; the windows still equal the record.
TEST(TraceCliTracefs, UretprobesAreReturnEvents) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-uretprobe");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(trace_args(target, "tracefs",
                                          {"--functions", "svc::validate,svc::settle", "--uretprobes",
                                           "--start-filter", "id == 2", "--max-windows", "1"}), record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["return_mode"], "mixed_uretprobe_best_effort");
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "complete");
  expect_windows_match_record(document, record_file.path, {"handle_request", "validate", "settle"});
}

// --max-events cuts inside a window at exactly that many events.
TEST(TraceCliTracefs, MaxEventsStopsInsideAWindow) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-maxevents");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(
      trace_args(target, "tracefs", {"--functions", functions_option(all_traced_functions()), "--max-events", "7"}),
      record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "max_events");
  EXPECT_EQ(document["summary"]["events"], 7);
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "open_at_stop");
  const RequestKey key = key_of(document["windows"][0]);
  EXPECT_EQ(key.second, 0u);
  const auto recorded = await_record(record_file.path, {key});
  auto expected = expected_events(recorded.at(key), all_traced_functions());
  expected.resize(7);
  EXPECT_EQ(window_events(document["windows"][0]), expected);
}

// --stop closes the window at an address; --jsonl streams it.
TEST(TraceCliTracefs, StopAddressAndJsonLines) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-stop");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(
      {"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request", "--functions",
       "svc::validate,svc::settle", "--stop", "svc::compute_price", "--max-windows", "2", "--duration-ms", "20000",
       "--jsonl", "--backend", "tracefs"},
      record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::vector<nlohmann::json> lines;
  for (size_t start = 0; start < run.out.size();) {
    const size_t end = run.out.find('\n', start);
    lines.push_back(nlohmann::json::parse(run.out.substr(start, end - start)));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 4u) << run.out;
  EXPECT_EQ(lines[0]["type"], "header");
  EXPECT_EQ(lines[0]["backend"], "tracefs");
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(lines[i]["window"]["status"], "complete");
    EXPECT_EQ(window_events(lines[i]["window"]), (std::vector<std::string>{"0 entry handle_request", "1 entry validate",
                                                                           "1 return validate", "1 stop "}));
  }
  EXPECT_EQ(lines[3]["backend"], "tracefs");
}

// The target exits inside a window: what it recorded before is there, the
// window is marked, and nothing of ours stays in tracefs.
TEST(TraceCliTracefs, WindowCutByTargetExit) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-exit");
  TargetProcess target(target_command(record_file.path, {"--exit-in-request", "4"}));
  const XrefRun run = run_xref_attached(trace_args(
      target, "tracefs", {"--functions", functions_option(all_traced_functions()), "--start-filter", "id == 4"}), record_file.go_file());
  EXPECT_EQ(run.exit_status, 4) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "target_exited");
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "target_exited");
  const RequestKey key = key_of(document["windows"][0]);
  const auto recorded = await_record(record_file.path, {key});
  EXPECT_EQ(window_events(document["windows"][0]), expected_events(recorded.at(key), all_traced_functions()));
  EXPECT_EQ(xref_leftovers(), "");
}

// Ctrl-C: the summary is printed, the exit status is 0, the instance and the
// events are gone.
TEST(TraceCliTracefs, InterruptCleansUp) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-interrupt");
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();  // requests may run before the attach here
  const std::string command = "timeout --preserve-status -s INT 3 " + shell_quote(XREF_BINARY) + " trace --pid " +
                              std::to_string(target.pid()) +
                              " --start svc::handle_request --functions svc::settle --backend tracefs; echo exit=$?";
  const std::string output = command_output(command + " 2>/dev/null");
  EXPECT_NE(output.find("backend tracefs"), std::string::npos) << output;
  EXPECT_NE(output.find(" ms: interrupted\n"), std::string::npos) << output;
  EXPECT_NE(output.find("  complete  ran "), std::string::npos) << output;
  EXPECT_NE(output.find("exit=0"), std::string::npos) << output;
  EXPECT_EQ(kill(target.pid(), 0), 0);
  EXPECT_EQ(xref_leftovers(), "");
}

// Uprobe events fire in every process that maps the file: a second process
// of the same binary is hit too, and its hits are counted and left out.
TEST(TraceCliTracefs, OtherProcessesOfTheBinaryAreLeftOut) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-tgid");
  const RecordFile other_record("tracefs-tgid-other");
  TargetProcess target(target_command(record_file.path, {}));
  // The other process runs its requests all along.
  TargetProcess other(target_command(other_record.path, {"--requests", "0"}));
  other_record.release();
  const XrefRun run = run_xref_attached(trace_args(target, "tracefs",
                                          {"--functions", "svc::validate,svc::settle", "--start-filter", "id <= 5",
                                           "--max-windows", "6"}), record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 6u);
  EXPECT_GT(document["summary"]["excluded_other_tgid_events"].get<uint64_t>(), 0u);
  EXPECT_EQ(document["summary"]["ambiguous_tid_events"], 0);
  // Every window is one of the target's own requests, exactly as recorded.
  expect_windows_match_record(document, record_file.path, {"handle_request", "validate", "settle"});
  for (const auto& window : document["windows"]) {
    const std::string task =
        "/proc/" + std::to_string(target.pid()) + "/task/" + std::to_string(window["tid"].get<uint32_t>());
    EXPECT_EQ(access(task.c_str(), F_OK), 0) << task;
  }
}

// A tiny buffer loses events: the summary counts them per cause, and the
// window open while they were lost says so, with an unknown count.
TEST(TraceCliTracefs, LossIsCountedAndMarksTheWindow) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-loss");
  // Requests far apart, so the buffer is drained before each window opens.
  TargetProcess target({XREF_TRACE_TARGET, "--record", record_file.path, "--go-file", record_file.go_file(),
                        "--interval-us", "300000", "--burst", "3000", "--requests", "4"});
  const XrefRun run = run_xref_attached(trace_args(target, "tracefs",
                                          {"--functions", "svc::tick", "--start-filter", "id == 1", "--ringbuf-bytes",
                                           "4096", "--max-windows", "1"}), record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 1u);
  const auto& lost = document["summary"]["lost_events"];
  EXPECT_GT(document["summary"]["lost"].get<uint64_t>(), 0u);
  EXPECT_EQ(lost["total"], document["summary"]["lost"]);
  EXPECT_EQ(lost["overrun"].get<uint64_t>() + lost["commit_overrun"].get<uint64_t>() +
                lost["dropped_events"].get<uint64_t>(),
            lost["total"].get<uint64_t>());
  const auto& window = document["windows"][0];
  EXPECT_EQ(window["possible_loss"], true);
  EXPECT_TRUE(window["lost_events"].is_null());
  EXPECT_EQ(document["summary"]["complete_windows"], 0);
}

// A helper killed with SIGKILL together with its watchdog (as kill -9 of
// its process group would) cannot clean up: its event group and its
// instance stay (and its uprobes keep firing). The next tracefs helper
// removes them before it starts, and nothing else.
TEST(TraceCliTracefs, KilledHelperLeftoversAreReapedByTheNextStart) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-reap");
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  const std::string pid = std::to_string(target.pid());
  const pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execl(XREF_BINARY, XREF_BINARY, "trace", "--pid", pid.c_str(), "--start", "svc::handle_request", "--functions",
          "svc::settle", "--backend", "tracefs", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Running once its instance records (the events are defined before it).
  bool running = false;
  for (int attempt = 0; attempt < 400 && !running; ++attempt) {
    const std::string tracing_on = kTracefs + "/instances/" + instance_of(helper) + "/tracing_on";
    auto state = try_command_lines("cat " + tracing_on + " 2>/dev/null");
    running = state && !state->empty() && (*state)[0] == "1";
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  const pid_t watchdog = watchdog_of(helper);
  EXPECT_GT(watchdog, 0) << "no watchdog for helper " << helper;
  if (watchdog > 0) {
    kill(watchdog, SIGKILL);
    // Dead (a zombie of the helper's) before the helper goes.
    EXPECT_TRUE(eventually([&] {
      auto state = try_command_lines("cut -d' ' -f3 /proc/" + std::to_string(watchdog) + "/stat 2>/dev/null");
      return !state || state->empty() || (*state)[0] == "Z";
    }));
  }
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  ASSERT_TRUE(running) << "the helper never started tracing";
  EXPECT_TRUE(instance_exists(helper));
  EXPECT_TRUE(group_defined(helper));

  // Someone else's group and instance that only look alike stay untouched.
  const std::string foreign_event = "p:xref_other/p0 " + std::string(XREF_TRACE_TARGET) + ":0x0";
  const bool foreign_defined = command_output("echo '" + foreign_event + "' >> " + kTracefs +
                                              "/uprobe_events && echo ok || true")
                                   .find("ok") != std::string::npos;

  const XrefRun run =
      run_xref_attached({"trace", "--pid", pid, "--start", "svc::handle_request", "--functions", "svc::settle",
                         "--backend", "tracefs", "--max-windows", "1", "--duration-ms", "20000", "--json"},
                        record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto details = run.json()["summary"]["backend_details"];
  // Counts are JSON numbers, not strings.
  EXPECT_TRUE(details["reaped_instances"].is_number_unsigned()) << details.dump();
  EXPECT_TRUE(details["reaped_groups"].is_number_unsigned()) << details.dump();
  EXPECT_EQ(details["reaped_instances"], 1);
  EXPECT_EQ(details["reaped_groups"], 1);
  EXPECT_FALSE(instance_exists(helper));
  EXPECT_FALSE(group_defined(helper));
  if (foreign_defined) {
    EXPECT_NE(uprobe_events().find("xref_other/p0"), std::string::npos);
    command_output("echo '-:xref_other/p0' >> " + kTracefs + "/uprobe_events");
  }
  EXPECT_EQ(xref_leftovers(), "");
}

}  // namespace
}  // namespace xref::test
