// xref trace against trace_target: every window must equal the program's
// own record of what it called, in order, with the same values.
#include <fcntl.h>

#include "trace_harness.h"

namespace xref::test {
namespace {

// The go file of a trace_target started by target_command.
std::string record_go(const TargetProcess& target) {
  for (size_t i = 0; i + 1 < target.argv().size(); ++i) {
    if (target.argv()[i] == "--go-file") return target.argv()[i + 1];
  }
  return "/dev/null";
}

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
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--start-filter", "id <= 5", "--max-windows", "6"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", "svc::validate,svc::settle",
                                                   "--start-filter", "id == 2", "--max-windows", "1"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(
      target, {"--functions", "svc::apply_fee,svc::settle", "--fetch-at", "svc::apply_fee",
               "price=%di:u64,bps=%si:u64", "--fetch-ret", "svc::apply_fee", "fee=%ax:u64", "--fetch-ret",
               "svc::settle", "ret=%ax:u64,neg=%ax:s8", "--start-filter", "id >= 2 && id <= 4", "--max-windows",
               "3"},
      "id=+0(%di):u64,asset=+8(%di):u64,amount=+16(%di):u64,bad=+0(+24(%di)):u64"), record_go(target));
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
    EXPECT_EQ(fetched_fee_values(window), recorded_fee_values(truth)) << "request " << id;
  }
}

// In call-site mode, --fetch-at/--fetch-ret of a callee are read at its call
// and return sites: each call is seen once, with the recorded values (a
// probe on the callee's own entry as well would report every call twice).
TEST(TraceCli, CallSiteModeFetchesAtCallAndReturnSites) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("callsitefetch");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun run = run_xref_attached(
      trace_args(target, {"--callees-of", "svc::handle_request", "--depth", "2", "--fetch-at", "svc::apply_fee",
                          "price=%di:u64,bps=%si:u64", "--fetch-ret", "svc::apply_fee", "fee=%ax:u64",
                          "--fetch-ret", "svc::settle", "ret=%ax:u64,neg=%ax:s8", "--max-windows", "3"},
                 "id=+0(%di):u64"),
      record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["return_mode"], "call_site_exact");
  ASSERT_EQ(document["windows"].size(), 3u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  const auto recorded = await_record(record_file.path, keys);
  for (const auto& window : document["windows"]) {
    const uint64_t id = fetched(window["start_fetches"], "id");
    const auto& truth = recorded.at({window["tid"].get<uint32_t>(), id});
    ASSERT_FALSE(recorded_fee_values(truth).empty()) << "request " << id;
    EXPECT_EQ(fetched_fee_values(window), recorded_fee_values(truth)) << "request " << id;
    for (const auto& event : window["events"]) EXPECT_NE(event["kind"], "unwound") << event.dump();
  }
}

TEST(TraceCli, TwoThreadsHaveWindowsOpenAtTheSameTime) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("overlap");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {"--threads", "2", "--overlap"}));
  const std::set<std::string> traced = {"handle_request", "validate", "settle", "rendezvous"};
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(traced), "--start-filter",
                                                   "id == 1 || id == 1000001", "--max-windows", "2"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(target,
                                          {"--start-filter", "id == 1000007 && asset == 4", "--max-windows", "1",
                                           "--functions", "svc::validate"},
                                          "id=+0(%di):u64,asset=+8(%di):u64"), record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 1u);
  EXPECT_EQ(fetched(document["windows"][0]["start_fetches"], "id"), 1000007u);
  // Requests 1000000..1000006 ran on the same thread before it, each reaching
  // the start probe and filtered out in BPF (thread 0's count depends on timing).
  EXPECT_GE(document["summary"]["starts_filtered"].get<uint64_t>(), 7u);
  expect_windows_match_record(document, record, {"handle_request", "validate"});
}

TEST(TraceCli, MaxEventsStopsInsideAWindow) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("maxevents");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--max-events", "7"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--start-filter", "id == 4"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", "svc::tick", "--start-filter", "id == 1",
                                                   "--ringbuf-bytes", "4096", "--max-windows", "1"}), record_go(target));
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
  // Received plus lost is everything that happened, plus the window's end
  // record. The start call returned, but a window that lost events is never
  // complete.
  EXPECT_EQ(window["status"], "incomplete");
  EXPECT_EQ(document["summary"]["complete_windows"], 0);
  const bool end_received = window["end_record_lost"] == false;
  EXPECT_EQ(window["events"].size() + (end_received ? 1 : 0) + lost, truth + 1);
}

TEST(TraceCli, PerfUprobeBackendGivesTheSameWindows) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("perf");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--backend", "perf_uprobe", "--start-filter", "id <= 3",
                                                   "--max-windows", "4"}), record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["backend"], "perf_uprobe");
  ASSERT_EQ(document["windows"].size(), 4u);
  expect_windows_match_record(document, record, all_traced_functions());
}

// --callees-of at depth 2: call and return sites only, no return address
// touched; exceptions, recursion and the tail call as the record says.
TEST(TraceCli, CalleesOfAtDepthTwoEqualsGroundTruth) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("callees");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref_attached(trace_args(target, {"--callees-of", "svc::handle_request", "--depth", "2",
                                                   "--start-filter", "id <= 5", "--max-windows", "6"}), record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["return_mode"], "call_site_exact");
  ASSERT_EQ(document["windows"].size(), 6u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  const auto recorded = await_record(record, keys);
  const auto& traced = all_traced_functions();
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window["status"], "complete");
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    EXPECT_EQ(window_events(window, &traced), expected_call_site_events(recorded.at(key), traced))
        << "request " << key.second;
    // Every call-site entry names its call instruction exactly.
    for (const auto& event : window["events"]) {
      if (event["kind"] == "entry" && event["depth"] > 0) {
        EXPECT_EQ(event["call_site_verified"], true);
      }
    }
  }
  EXPECT_EQ(kill(target.pid(), 0), 0);
}

// A stripped build, traced by static VA: functions are .eh_frame ranges, the
// catch handler's split-off part is recognised by its jump back, and the
// windows still equal the record.
TEST(TraceCli, StrippedCalleesOfByStaticVa) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("stripped");
  const std::string stripped = std::string(XREF_TRACE_TARGET) + "_stripped";
  std::vector<std::string> argv = target_command(record_file.path, {});
  argv[0] = stripped;
  TargetProcess target(argv);
  // Names for static VAs, from the unstripped twin (same layout).
  std::map<uint64_t, std::string> names;
  for (const auto& line : command_lines("nm -C " + std::string(XREF_TRACE_TARGET))) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (line.empty() || line[0] == ' ') continue;  // undefined symbols have no address
    if (fields >> address >> type && std::getline(fields, name)) {
      names[std::stoull(address, nullptr, 16)] = plain_name(name.substr(1));
    }
  }
  uint64_t handle_request = 0;
  for (const auto& [va, name] : names) {
    if (name == "handle_request") handle_request = va;
  }
  ASSERT_NE(handle_request, 0u);
  const std::string root = hex_string(handle_request);
  const XrefRun run = run_xref_attached({"trace", "--pid", std::to_string(target.pid()), "--start", root,
                                         "--callees-of", root, "--depth", "2", "--fetch", "id=+0(%di):u64",
                                         "--start-filter", "id <= 5", "--max-windows", "6", "--duration-ms", "20000",
                                         "--json"},
                                        record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 6u);
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  const auto recorded = await_record(record_file.path, keys);
  const auto& traced = all_traced_functions();
  for (auto window : document["windows"]) {
    // Rename events by static VA, as a reader with the unstripped twin would.
    for (auto& event : window["events"]) {
      const uint64_t va = std::stoull(event["target_va"].get<std::string>(), nullptr, 16);
      event["symbol"] = names.count(va) ? names.at(va) : event["symbol"].get<std::string>();
    }
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    EXPECT_EQ(window_events(window, &traced), expected_call_site_events(recorded.at(key), traced))
        << "request " << key.second;
  }
}

// A probe site inside an instruction is refused before anything is
// attached, and the target's code is left exactly as the file has it.
TEST(TraceCli, MidInstructionAddressIsRefusedAndTargetUntouched) {
  const RecordFile record_file("midinsn");
  TargetProcess target(target_command(record_file.path, {}));
  // From objdump: the first instruction of compute_price longer than one byte.
  const auto listing = command_lines("objdump -d --no-show-raw-insn " + std::string(XREF_TRACE_TARGET));
  std::vector<uint64_t> starts;
  bool inside = false;
  for (const auto& line : listing) {
    if (line.find("<_ZN3svc13compute_priceEmm>:") != std::string::npos) inside = true;
    else if (inside && line.empty()) break;
    else if (inside && line.find(':') != std::string::npos) starts.push_back(std::stoull(line, nullptr, 16));
  }
  ASSERT_GE(starts.size(), 3u);
  size_t wide = 0;
  while (starts[wide + 1] - starts[wide] < 2) ++wide;
  const uint64_t middle = starts[wide] + 1;

  const uint64_t live = target.value("func", "compute_price");
  const uint64_t live_middle = live + (middle - starts[0]);
  const std::string mem = "/proc/" + std::to_string(target.pid()) + "/mem";
  auto read_code = [&] {
    std::string bytes(64, '\0');
    const int fd = open(mem.c_str(), O_RDONLY);
    const ssize_t got = pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(live));
    close(fd);
    return got == 64 ? bytes : std::string();
  };
  const std::string before = read_code();
  ASSERT_EQ(before.size(), 64u);

  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request",
                                "--stop", hex_string(middle), "--json"});
  EXPECT_EQ(run.exit_status, 13) << run.out;
  const auto error = run.json()["error"];
  EXPECT_EQ(error["code"], "not_an_instruction");
  EXPECT_NE(error["message"].get<std::string>().find("inside the"), std::string::npos) << error.dump();
  EXPECT_EQ(read_code(), before);
  (void)live_middle;
}

// --all-calls-in: the indirect call through the routing table is named at
// run time, and matches what the sample service recorded.
TEST(TraceCli, AllCallsInNamesIndirectCallTargets) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("indirect");
  TargetProcess target({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "5000", "--interval-us", "2000",
                        "--record", record_file.path});
  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "handle_request",
                                "--all-calls-in", "handle_request", "--fetch", "id=+0(%di):u64", "--max-windows",
                                "4", "--duration-ms", "20000", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 4u);
  const auto recorded = sample_record(record_file.path, request_keys(document));
  const std::set<std::string> direct_callees = {"validate", "price_order", "route_even", "route_odd", "settle"};
  for (const auto& window : document["windows"]) {
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    // The record's direct callees of handle_request, in order: one level.
    std::vector<std::string> expected;
    int settle_seen = 0;
    ASSERT_TRUE(recorded.count(key)) << "request " << key.second << " not recorded";
    for (const auto& function : recorded.at(key)) {
      if (!direct_callees.count(function)) continue;
      if (function == "settle" && settle_seen++ > 0) continue;  // deeper settles are not call sites in handle_request
      expected.push_back(function);
    }
    std::vector<std::string> actual;
    bool indirect_seen = false;
    for (const auto& event : window["events"]) {
      if (event["kind"] != "entry" || event["depth"] != 1) continue;
      if (!direct_callees.count(plain_name(event["symbol"]))) continue;  // libc calls of the recorder
      actual.push_back(plain_name(event["symbol"]));
      if (event.value("indirect", false)) {
        indirect_seen = true;
        EXPECT_TRUE(event["symbol"] == "route_even" || event["symbol"] == "route_odd") << event.dump();
      }
    }
    EXPECT_TRUE(indirect_seen);
    EXPECT_EQ(actual, expected) << "request " << key.second;
  }
}

// A Rust panic caught by catch_unwind passes through traced frames: the
// target survives, the frames show as unwound, and depth is right after.
TEST(TraceCli, RustPanicThroughTracedFramesInBothModes) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::set<std::string> traced = {"handle_request", "validate", "compute", "fee", "settle",
                                        "risky",          "risky_inner", "recover"};
  for (const bool call_sites : {false, true}) {
    const RecordFile record_file(call_sites ? "rust-sites" : "rust-functions");
    std::vector<std::string> argv = target_command(record_file.path, {});
    argv[0] = XREF_RUST_TARGET;
    TargetProcess target(argv);
    std::vector<std::string> args = {"trace", "--pid", std::to_string(target.pid()), "--start",
                                     "rust_target::svc::handle_request", "--fetch", "id=+0(%di):u64",
                                     "--start-filter", "id >= 2 && id <= 4", "--max-windows", "3",
                                     "--duration-ms", "20000", "--json"};
    if (call_sites) {
      args.insert(args.end(), {"--callees-of", "rust_target::svc::handle_request", "--depth", "2"});
    } else {
      std::string list;
      for (const auto& name : traced) list += (list.empty() ? "" : ",") + ("rust_target::svc::" + name);
      args.insert(args.end(), {"--functions", list});
    }
    const XrefRun run = run_xref_attached(args, record_file.go_file());
    ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
    const auto document = run.json();
    ASSERT_EQ(document["windows"].size(), 3u);
    std::set<RequestKey> keys;
    for (const auto& window : document["windows"]) {
      keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
    }
    const auto recorded = await_record(record_file.path, keys);
    bool unwound_seen = false;
    for (const auto& window : document["windows"]) {
      const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
      const auto expected = call_sites ? expected_call_site_events(recorded.at(key), traced)
                                       : expected_events(recorded.at(key), traced);
      EXPECT_EQ(window_events(window, &traced), expected) << (call_sites ? "call sites" : "functions")
                                                          << ", request " << key.second;
      for (const auto& event : window["events"]) unwound_seen |= event["kind"] == "unwound";
      EXPECT_EQ(window["status"], "complete");
    }
    EXPECT_TRUE(unwound_seen) << "request 3 panics through risky_inner and risky";
    EXPECT_EQ(kill(target.pid(), 0), 0) << "the target must survive the panic";
  }
}

// A shared-library function, named module:symbol: one uprobe_multi link per
// file, VAs module-relative with the module named. The sample service calls
// gettid once per recorded call, so the record says how many to expect.
TEST(TraceCli, LibcFunctionByModuleAndSymbol) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("libc");
  TargetProcess target({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "5000", "--interval-us", "2000",
                        "--record", record_file.path});
  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "handle_request",
                                "--functions", "validate,libc.so.6:gettid", "--fetch", "id=+0(%di):u64",
                                "--max-windows", "2", "--duration-ms", "20000", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 2u);
  const std::string nm = command_output("nm -D --defined-only /lib/x86_64-linux-gnu/libc.so.6 | grep ' gettid@@'");
  const std::string gettid_va = hex_string(std::stoull(nm.substr(0, 16), nullptr, 16));
  for (const auto& window : document["windows"]) {
    const uint64_t id = fetched(window["start_fetches"], "id");
    std::vector<std::string> recorded;
    for (int attempt = 0; attempt < 200 && recorded.empty(); ++attempt) {
      for (const auto& line : command_lines("cat " + record_file.path)) {
        std::istringstream fields(line);
        uint32_t tid;
        uint64_t request;
        std::string function;
        if ((fields >> tid >> request >> function) && request == id) recorded.push_back(function);
      }
      if (recorded.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ASSERT_FALSE(recorded.empty()) << "request " << id;
    size_t gettid_entries = 0;
    for (const auto& event : window["events"]) {
      if (event.value("module", "") != "libc.so.6") continue;
      EXPECT_EQ(event["target_va"], gettid_va);
      if (event["kind"] == "entry") {
        ++gettid_entries;
        EXPECT_EQ(event["call_site_verified"], true);
      }
    }
    // One gettid per recorded call: handle_request's, validate's and the rest.
    EXPECT_EQ(gettid_entries, recorded.size()) << "request " << id;
    // validate's own gettid is one level below it.
    const auto events = window_events(window);
    const auto at = std::find(events.begin(), events.end(), "1 entry validate");
    ASSERT_NE(at, events.end());
    EXPECT_EQ(*(at + 1), "2 entry gettid");
  }
}

// A function starting with endbr64 + a 5-byte nop gets its entry probe on
// the nop, and the plan says so; the calls are still seen exactly.
TEST(TraceCli, EntryProbeGoesOnTheNopAfterEndbr64) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess target({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "5000", "--interval-us", "2000"});
  const std::string nm = command_output("nm " + std::string(XREF_SAMPLE_SERVICE) + " | grep ' nop_entry$'");
  const uint64_t nop_entry = std::stoull(nm.substr(0, 16), nullptr, 16);
  const XrefRun run = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "handle_request",
                                "--functions", "nop_entry", "--fetch-ret", "nop_entry", "ret=%ax:u64",
                                "--fetch-at", "nop_entry", "arg=%di:u64", "--max-windows", "2", "--duration-ms",
                                "20000", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["nop5_probes"], nlohmann::json::array({hex_string(nop_entry + 4)}));
  ASSERT_EQ(document["windows"].size(), 2u);
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window_events(window), (std::vector<std::string>{"0 entry handle_request", "1 entry nop_entry",
                                                               "1 return nop_entry", "0 return handle_request"}));
    const auto& entry = window["events"][1];
    EXPECT_EQ(entry["probe_va"], hex_string(nop_entry + 4));
    EXPECT_EQ(entry["target_va"], hex_string(nop_entry));
    EXPECT_EQ(fetched(window["events"][2]["fetches"], "ret"), fetched(entry["fetches"], "arg") + 1);
  }
}

// --uretprobes: the kernel's return probes, best effort. On calls that return
// normally the windows equal the record; the mode and the warning say what it is.
TEST(TraceCli, UretprobesAreExplicitAndBestEffort) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("uretprobe");
  const std::string& record = record_file.path;
  TargetProcess target(target_command(record, {}));
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", "svc::validate,svc::settle", "--uretprobes",
                                                   "--start-filter", "id == 2", "--max-windows", "1"}), record_go(target));
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
  const XrefRun run = run_xref_attached(trace_args(target, {"--functions", functions_option(all_traced_functions()),
                                                   "--max-windows", "1"}), record_go(target));
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
  const XrefRun run = run_xref_attached({"trace", "--pid", std::to_string(target.pid()), "--start",
                                         "svc::handle_request", "--functions", "svc::validate,svc::settle", "--stop",
                                         "svc::compute_price", "--max-windows", "2", "--duration-ms", "20000",
                                         "--jsonl"},
                                        record_go(target));
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  while (start < run.out.size()) {
    const size_t end = run.out.find('\n', start);
    lines.push_back(nlohmann::json::parse(run.out.substr(start, end - start)));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 4u) << run.out;
  // The header: the process as known at attach, for a stream cut short.
  EXPECT_EQ(lines[0]["type"], "header");
  EXPECT_EQ(lines[0]["schema_version"], 1);
  EXPECT_EQ(lines[0]["process"]["pid"], target.pid());
  EXPECT_EQ(lines[0]["process"]["build_id"], lines[3]["process"]["build_id"]);
  EXPECT_FALSE(lines[0]["process"]["build_id"].get<std::string>().empty());
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(lines[i]["type"], "window");
    const auto& window = lines[i]["window"];
    EXPECT_EQ(window["status"], "complete");
    // handle_request >, validate >, validate <, then the stop at compute_price: settle never ran.
    EXPECT_EQ(window_events(window), (std::vector<std::string>{"0 entry handle_request", "1 entry validate",
                                                               "1 return validate", "1 stop "}));
  }
  EXPECT_EQ(lines[3]["type"], "summary");
  EXPECT_EQ(lines[3]["summary"]["windows"], 2);
}

// Ctrl-C (SIGINT) ends an unbounded trace: what was captured is printed,
// the exit status is 0, and the probes are gone.
TEST(TraceCli, InterruptDetachesAndPrints) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("interrupt");
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();  // requests may run before the attach here
  const std::string command = "timeout --preserve-status -s INT 3 " + shell_quote(XREF_BINARY) + " trace --pid " +
                              std::to_string(target.pid()) +
                              " --start svc::handle_request --functions svc::settle; echo exit=$?";
  const std::string output = command_output(command + " 2>/dev/null");
  EXPECT_NE(output.find(" ms: interrupted\n"), std::string::npos) << output;
  EXPECT_NE(output.find("  complete  ran "), std::string::npos) << output;
  EXPECT_NE(output.find("exit=0"), std::string::npos) << output;
  // The target keeps running untouched.
  EXPECT_EQ(kill(target.pid(), 0), 0);
  EXPECT_EQ(trace_program_links(), 0);
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
