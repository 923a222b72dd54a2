// xref trace against trace_target: every window must equal the program's
// own record of what it called, in order, with the same values.
#include <fcntl.h>

#include "trace_harness.h"

namespace xref::test {
namespace {

std::vector<std::string> trace_args(const TargetProcess& target, std::vector<std::string> extra,
                                    const std::string& fetch = "id=+0(%di):u64") {
  std::vector<std::string> args = {"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request",
                                   "--fetch", fetch, "--duration-ms", "20000", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

void expect_windows_match_record(const nlohmann::json& document, const std::string& record_file,
                                 const std::set<std::string>& traced) {
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  const auto record = await_record(record_file, keys);
  for (const auto& window : document["windows"]) {
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    ASSERT_TRUE(record.count(key)) << "request " << key.second << " on tid " << key.first << " not recorded";
    EXPECT_EQ(window_events(window), expected_events(record.at(key), traced))
        << "window " << window["window_id"] << " (request " << key.second << ")";
  }
}

TEST(TraceCli, NestedRecursionExceptionAndTailCallEqualGroundTruth) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("nested");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  // Requests 0..5 cover recursion depths 1-3, the exception (id 3) and the tail call (ids 1, 5).
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--start-filter", "id <= 5", "--max-windows", "6"}));
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["operation"], "live_trace");
  EXPECT_EQ(document["backend"], "uprobe_multi");
  EXPECT_EQ(document["summary"]["return_mode"], "ret_site_exact");
  EXPECT_EQ(document["summary"]["stop_reason"], "max_windows");
  ASSERT_EQ(document["windows"].size(), 6u);
  EXPECT_EQ(document["summary"]["complete_windows"], 6);
  EXPECT_EQ(document["summary"]["lost"], 0);
  std::set<uint64_t> ids;
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window["status"], "complete");
    EXPECT_EQ(window["possible_loss"], false);
    ids.insert(fetched(window["start_fetches"], "id"));
  }
  EXPECT_EQ(ids, (std::set<uint64_t>{0, 1, 2, 3, 4, 5}));
  expect_windows_match_record(document, record, all_traced_functions());

  // The exception went through traced frames: the target lives on, and its
  // later requests still run (the record grows past request 5).
  EXPECT_TRUE(kill(target.pid(), 0) == 0);
  const auto later = await_record(record, {{static_cast<uint32_t>(document["windows"][0]["tid"]), 8}});
  EXPECT_EQ(later.count({static_cast<uint32_t>(document["windows"][0]["tid"]), 8}), 1u);
}

TEST(TraceCli, CallSitesAreVerifiedStaticVas) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("callsite");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", "svc::validate,svc::settle",
                                                   "--start-filter", "id == 2", "--max-windows", "1"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 1u);
  // Ground truth for call sites: objdump's call instructions in the binary.
  const std::string listing = command_output("objdump -d --no-show-raw-insn " + std::string(XREF_TRACE_TARGET));
  for (const auto& event : document["windows"][0]["events"]) {
    if (event["kind"] != "entry" || event["depth"] == 0) continue;
    EXPECT_EQ(event["call_site_verified"], true);
    const std::string site = event["call_site_va"].get<std::string>().substr(2);
    const size_t at = listing.find("\n    " + site + ":");
    ASSERT_NE(at, std::string::npos) << site;
    const std::string line = listing.substr(at + 1, listing.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("call"), std::string::npos) << line;
    EXPECT_NE(line.find(event["target_va"].get<std::string>().substr(2)), std::string::npos) << line;
  }
}

TEST(TraceCli, RegisterAndMemoryFetchesEqualRecordedValues) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("fetch");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(
      target, {"--functions", "svc::apply_fee,svc::settle", "--fetch-at", "svc::apply_fee",
               "price=%di:u64,bps=%si:u64", "--fetch-ret", "svc::apply_fee", "fee=%ax:u64", "--fetch-ret",
               "svc::settle", "ret=%ax:u64,neg=%ax:s8", "--start-filter", "id >= 2 && id <= 4", "--max-windows",
               "3"},
      "id=+0(%di):u64,asset=+8(%di):u64,amount=+16(%di):u64,bad=+0(+24(%di)):u64"));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 3u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  const auto recorded = await_record(record, keys);
  for (const auto& window : document["windows"]) {
    const auto& start = window["start_fetches"];
    const uint64_t id = fetched(start, "id");
    const uint64_t n = id % 1000000;
    EXPECT_EQ(fetched(start, "asset"), 1 + n % 4);
    EXPECT_EQ(fetched(start, "amount"), 100 + 37 * (n % 11));
    // flags is a small number, not a pointer: the deref fails, and says so.
    for (const auto& fetch : start) {
      if (fetch["name"] == "bad") {
        EXPECT_TRUE(fetch["value"].is_null());
        EXPECT_NE(fetch["error"].get<std::string>().find("EFAULT"), std::string::npos);
      }
    }
    // Each entry/return fetch equals the recorded argument/return value, in order.
    const auto& truth = recorded.at({window["tid"].get<uint32_t>(), id});
    std::vector<uint64_t> expected, actual;
    for (const auto& event : truth) {
      if (event.function == "apply_fee" && event.kind == '>') {
        expected.insert(expected.end(), {event.values[0], event.values[1]});
      }
      if ((event.function == "apply_fee" || event.function == "settle") && event.kind == '<') {
        expected.push_back(event.values[0]);
      }
    }
    for (const auto& event : window["events"]) {
      const std::string name = plain_name(event["symbol"]);
      if (name == "apply_fee" && event["kind"] == "entry") {
        actual.insert(actual.end(), {fetched(event["fetches"], "price"), fetched(event["fetches"], "bps")});
      }
      if (name == "apply_fee" && event["kind"] == "return") actual.push_back(fetched(event["fetches"], "fee"));
      if (name == "settle" && event["kind"] == "return") {
        const uint64_t value = fetched(event["fetches"], "ret");
        actual.push_back(value);
        for (const auto& fetch : event["fetches"]) {
          if (fetch["name"] == "neg") {
            EXPECT_EQ(fetch["signed_value"].get<int64_t>(), static_cast<int8_t>(value));
          }
        }
      }
    }
    EXPECT_EQ(actual, expected) << "request " << id;
  }
}

TEST(TraceCli, TwoThreadsHaveWindowsOpenAtTheSameTime) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("overlap");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {"--threads", "2", "--overlap"}));
  const std::set<std::string> traced = {"handle_request", "validate", "settle", "rendezvous"};
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(traced), "--start-filter",
                                                   "id == 1 || id == 1000001", "--max-windows", "2"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 2u);
  const auto& a = document["windows"][0];
  const auto& b = document["windows"][1];
  EXPECT_NE(a["tid"], b["tid"]);
  // Both threads met inside rendezvous, so the windows overlap in time.
  EXPECT_LT(a["start_timestamp_ns"].get<uint64_t>(), b["end_timestamp_ns"].get<uint64_t>());
  EXPECT_LT(b["start_timestamp_ns"].get<uint64_t>(), a["end_timestamp_ns"].get<uint64_t>());
  expect_windows_match_record(document, record, traced);
}

TEST(TraceCli, StartFilterSelectsOneRequestAmongMany) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("filter");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {"--threads", "2"}));
  const XrefRun run = run_xref(trace_args(target,
                                          {"--start-filter", "id == 1000007 && asset == 4", "--max-windows", "1",
                                           "--functions", "svc::validate"},
                                          "id=+0(%di):u64,asset=+8(%di):u64"));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(fetched(document["windows"][0]["start_fetches"], "id"), 1000007u);
  // Every earlier request of both threads reached the start probe and was filtered out in BPF.
  EXPECT_GE(document["summary"]["starts_filtered"].get<uint64_t>(), 14u);
  expect_windows_match_record(document, record, {"handle_request", "validate"});
}

TEST(TraceCli, MaxEventsStopsInsideAWindow) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("maxevents");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--max-events", "7"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "max_events");
  EXPECT_EQ(document["summary"]["events"], 7);
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "open_at_stop");
  const auto recorded = await_record(record, {{document["windows"][0]["tid"].get<uint32_t>(), 0}});
  auto expected = expected_events(recorded.at({document["windows"][0]["tid"].get<uint32_t>(), 0}),
                                  all_traced_functions());
  expected.resize(7);
  EXPECT_EQ(window_events(document["windows"][0]), expected);
}

TEST(TraceCli, WindowCutByTargetExit) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("exit");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {"--exit-in-request", "4"}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--start-filter", "id == 4"}));
  EXPECT_EQ(run.exit_status, 4) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["error"]["code"], "process_exited");
  EXPECT_EQ(document["summary"]["stop_reason"], "target_exited");
  EXPECT_EQ(document["process"]["pid_alive_after"], false);
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "target_exited");
  const RequestKey key{document["windows"][0]["tid"].get<uint32_t>(), 4};
  const auto recorded = await_record(record, {key});
  EXPECT_EQ(window_events(document["windows"][0]), expected_events(recorded.at(key), all_traced_functions()));
}

// A ring buffer of one page cannot hold a burst of 2 x 3000 events between
// two drains: events are lost, and the count says exactly how many.
TEST(TraceCli, TinyRingBufferLossIsCountedExactly) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("loss");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {"--burst", "3000", "--requests", "3"}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", "svc::tick", "--start-filter", "id == 1",
                                                   "--ringbuf-bytes", "4096", "--max-windows", "1"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 1u);
  const auto& window = document["windows"][0];
  const uint64_t lost = document["summary"]["lost"];
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(window["possible_loss"], true);
  EXPECT_EQ(window["lost_events"].get<uint64_t>(), lost);
  EXPECT_EQ(document["summary"]["lost_events"]["dropped_events"].get<uint64_t>(), lost);
  const RequestKey key{window["tid"].get<uint32_t>(), 1};
  const auto recorded = await_record(record, {key});
  const size_t truth = expected_events(recorded.at(key), {"handle_request", "tick"}).size();
  // Received plus lost is everything that happened, plus the window's end record.
  EXPECT_EQ(window["status"], "complete");
  const bool end_received = window["end_record_lost"] == false;
  EXPECT_EQ(window["events"].size() + (end_received ? 1 : 0) + lost, truth + 1);
}

TEST(TraceCli, PerfUprobeBackendGivesTheSameWindows) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("perf");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--backend", "perf_uprobe", "--start-filter", "id <= 3",
                                                   "--max-windows", "4"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["backend"], "perf_uprobe");
  ASSERT_EQ(document["windows"].size(), 4u);
  expect_windows_match_record(document, record, all_traced_functions());
}

// --uretprobes: the kernel's return probes, best effort. On calls that return
// normally the windows equal the record; the mode and the warning say what it is.
TEST(TraceCli, UretprobesAreExplicitAndBestEffort) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("uretprobe");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", "svc::validate,svc::settle", "--uretprobes",
                                                   "--start-filter", "id == 2", "--max-windows", "1"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["return_mode"], "mixed_uretprobe_best_effort");
  EXPECT_EQ(document["process"]["warnings"][0], "uretprobe_returns_are_best_effort_under_unwind");
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(document["windows"][0]["status"], "complete");
  expect_windows_match_record(document, record, {"handle_request", "validate", "settle"});
}

// After xref exits, every probed instruction of the target reads back as the
// file's bytes: no int3 left behind.
TEST(TraceCli, NothingStaysAttached) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("detach");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--max-windows", "1"}));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const uint64_t live = target.value("func", "handle_request");
  const std::string nm = command_output("nm " + std::string(XREF_TRACE_TARGET) + " | grep ' _ZN3svc14handle_requestEPNS_7RequestE$'");
  const uint64_t static_va = std::stoull(nm.substr(0, 16), nullptr, 16);
  const std::string mem = "/proc/" + std::to_string(target.pid()) + "/mem";
  const int fd = open(mem.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  unsigned char in_memory[64], in_file[64];
  ASSERT_EQ(pread(fd, in_memory, sizeof in_memory, static_cast<off_t>(live)), 64);
  close(fd);
  // PIE: the static VA is the file offset for the text of this build.
  const int file = open(XREF_TRACE_TARGET, O_RDONLY);
  ASSERT_EQ(pread(file, in_file, sizeof in_file, static_cast<off_t>(static_va)), 64);
  close(file);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(in_memory), 64), std::string(reinterpret_cast<char*>(in_file), 64));
  EXPECT_EQ(in_memory[0] == 0xcc, false);
}

// --stop closes the window at an address; --jsonl streams one line per window.
TEST(TraceCli, StopAddressAndJsonLines) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("stop");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request",
                                "--functions", "svc::validate,svc::settle", "--stop", "svc::compute_price",
                                "--max-windows", "2", "--duration-ms", "20000", "--jsonl"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  while (start < run.out.size()) {
    const size_t end = run.out.find('\n', start);
    lines.push_back(nlohmann::json::parse(run.out.substr(start, end - start)));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << run.out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(lines[i]["type"], "window");
    const auto& window = lines[i]["window"];
    EXPECT_EQ(window["status"], "complete");
    // handle_request >, validate >, validate <, then the stop at compute_price: settle never ran.
    EXPECT_EQ(window_events(window), (std::vector<std::string>{"0 entry handle_request", "1 entry validate",
                                                               "1 return validate", "1 stop "}));
  }
  EXPECT_EQ(lines[2]["type"], "summary");
  EXPECT_EQ(lines[2]["summary"]["windows"], 2);
}

// Ctrl-C (SIGINT) ends an unbounded trace: what was captured is printed,
// the exit status is 0, and the probes are gone.
TEST(TraceCli, InterruptDetachesAndPrints) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("interrupt");
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  const std::string command = "timeout --preserve-status -s INT 3 " + shell_quote(XREF_BINARY) + " trace --pid " +
                              std::to_string(target.pid()) +
                              " --start svc::handle_request --functions svc::settle; echo exit=$?";
  const std::string output = command_output(command + " 2>/dev/null");
  EXPECT_NE(output.find("stop=interrupted"), std::string::npos) << output;
  EXPECT_NE(output.find("status complete"), std::string::npos) << output;
  EXPECT_NE(output.find("exit=0"), std::string::npos) << output;
  // The target keeps running untouched.
  EXPECT_EQ(kill(target.pid(), 0), 0);
  const auto links = command_output("bpftool link list 2>/dev/null | grep -c uprobe_multi || true");
  EXPECT_EQ(std::stoi(links), 0) << links;
}

TEST(TraceCli, BadInputIsRefusedBeforeAnythingIsAttached) {
  const RecordFile record_file("bad");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const std::string pid = std::to_string(target.pid());
  const std::string nm = command_output("nm " + std::string(XREF_TRACE_TARGET) + " | grep ' _ZN3svc8validateEmm$'");
  const uint64_t validate = std::stoull(nm.substr(0, 16), nullptr, 16);

  const XrefRun inside = run_xref({"trace", "--pid", pid, "--start", test::hex_string(validate + 1), "--json"});
  EXPECT_EQ(inside.exit_status, 2);
  EXPECT_NE(inside.json()["error"]["message"].get<std::string>().find("not at a function start"), std::string::npos);

  const XrefRun unknown = run_xref({"trace", "--pid", pid, "--start", "svc::no_such_function"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_NE(unknown.err.find("no function named"), std::string::npos);

  const XrefRun spec = run_xref({"trace", "--pid", pid, "--start", "svc::handle_request", "--fetch", "id=%q8:u64",
                                 "--json"});
  EXPECT_EQ(spec.exit_status, 2);
  // Column 4: the '%' that starts the unknown register.
  EXPECT_EQ(spec.json()["error"]["column"], 4);
  EXPECT_NE(spec.json()["error"]["message"].get<std::string>().find("q8"), std::string::npos);

  const XrefRun filter = run_xref({"trace", "--pid", pid, "--start", "svc::handle_request", "--fetch",
                                   "id=%di:u64", "--start-filter", "idd == 1"});
  EXPECT_EQ(filter.exit_status, 2);
  EXPECT_NE(filter.err.find("idd"), std::string::npos);

  const XrefRun ring = run_xref({"trace", "--pid", pid, "--start", "svc::handle_request", "--ringbuf-bytes", "5000"});
  EXPECT_EQ(ring.exit_status, 2);
}

}  // namespace
}  // namespace xref::test
