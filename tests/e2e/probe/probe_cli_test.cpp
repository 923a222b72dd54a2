// xref probe against trace_target, whose record says what it called, from
// where, on which thread and with which values: counts, threads, callers,
// groups and filters must equal it exactly.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "objdump_listing.h"
#include "probe_harness.h"
#include "sample_target.h"

namespace xref::test {
namespace {

// The target runs its requests and exits; the probe counts until then.
TEST(ProbeCli, CountsThreadsAndCallersEqualTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ProbedTarget probed;
  const XrefRun run = probed.probe({"svc::settle", "svc::validate", "--callers"});
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["operation"], "live_probe");
  expect_entry_counts_equal_record(document, probed.record(), {"settle", "validate"});
}

// --fetch and --filter in BPF: only the hits whose fetched value passes
// count as passed; --group-by NAME and --group-by ret count by value.
TEST(ProbeCli, FilterAndGroupsEqualTheRecordedValues) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ProbedTarget probed;
  const XrefRun run = probed.probe({"svc::settle", "--fetch", "d=%di:u64", "--filter", "d >= 1", "--group-by", "d"});
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  expect_filtered_groups_equal_record(run.json(), probed.record());

  ProbedTarget returns;
  const XrefRun by_ret = returns.probe({"svc::settle", "--group-by", "ret"});
  ASSERT_EQ(by_ret.exit_status, kProcessExited) << by_ret.err;
  expect_ret_groups_equal_record(by_ret.json(), returns.record());
}

// --stacks: whole user stacks, walked by frame pointers (trace_target is
// built with them), deduplicated and counted in BPF. settle recurses
// 1 + id % 3 deep: its stacks and their counts, cut at the first frame
// the target does not record (worker_main), equal the record's call chains.
TEST(ProbeCli, StacksEqualTheRecordedCallChains) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ProbedTarget probed;
  const XrefRun run = probed.probe({"svc::settle", "svc::apply_fee", "--stacks", "16"});
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["complete"], true) << run.out;
  const auto record = probed.record();
  for (const std::string function : {"settle", "apply_fee"}) {
    SCOPED_TRACE(function);
    const RecordedCalls expected = recorded_calls(record, function);
    const auto& stacks = address_of(document, "svc::" + function)["stacks"];
    EXPECT_EQ(stacks["method"], "frame_pointers");
    EXPECT_EQ(stacks["unread"], 0);
    EXPECT_EQ(stacks["keys"].get<size_t>(), expected.by_stack.size());
    std::map<std::vector<std::string>, uint64_t> seen;
    for (const auto& stack : stacks["stacks"]) {
      std::vector<std::string> names;
      for (const auto& frame : stack["frames"]) {
        const std::string name = plain_name(frame.value("function", std::string("?")));
        const std::string bare = name.substr(0, name.find('+'));
        if (bare != "settle" && bare != "apply_fee" && bare != "compute_price" && bare != "handle_request") break;
        names.push_back(bare);
      }
      seen[names] += stack["hits"].get<uint64_t>();
    }
    EXPECT_EQ(seen, expected.by_stack);
  }
}

// A ring buffer far too small for the samples asked for (every hit of
// bursts of tick calls, with every register): counts stay exact, and every
// sample is either received or counted as lost, none silently.
TEST(ProbeCli, ARingBufferOverflowLosesSamplesButNoCountAndSaysHowMany) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--threads", "2", "--requests", "20", "--interval-us", "200",
                                                         "--burst", "500"}));
  const XrefRun run = run_xref_attached({"probe", "--pid", std::to_string(target.pid()), "--json", "--duration-ms", "0",
                                         "svc::tick", "--regs", "--first", "0", "--max-events", "0",
                                         "--ringbuf-bytes", "4096"},
                                        record_file.go_file());
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  const auto document = run.json();
  const RecordedCalls expected = recorded_calls(read_record(record_file.path), "tick");
  EXPECT_EQ(expected.total, 2u * 20u * 500u);
  const auto& address = address_of(document, "svc::tick");
  EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total) << "a count never depends on the ring buffer";
  EXPECT_EQ(thread_counts(address), expected.by_tid);
  const auto& summary = document["summary"];
  const uint64_t lost = summary["lost_events"].get<uint64_t>();
  EXPECT_GT(lost, 0u) << "4096 bytes hold about ten samples with their registers";
  EXPECT_EQ(summary["records"].get<uint64_t>() + lost, expected.total) << "every hit was sampled: kept or lost";
  EXPECT_EQ(summary["records_received"], summary["records"]) << "every sample submitted was read";
  EXPECT_EQ(address["samples"].size(), summary["records"].get<uint64_t>());
  EXPECT_EQ(address["records_lost"].get<uint64_t>(), lost);
  EXPECT_EQ(summary["complete"], false);
  std::set<uint64_t> numbers;
  for (const auto& sample : address["samples"]) {
    EXPECT_TRUE(sample.contains("regs")) << sample.dump();
    numbers.insert(sample["hit"].get<uint64_t>());
  }
  EXPECT_EQ(numbers.size(), address["samples"].size()) << "each sample is a different hit";
  EXPECT_LE(*numbers.rbegin(), expected.total);
}

// --every N --first K: the samples are passing hits N, 2N, ... KN of the
// address, no more; --until-hits stops the run at exactly that many;
// --max-events bounds the samples kept, and the rest is counted.
TEST(ProbeCli, SamplesAndUntilHitsAreExact) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  ProbedTarget probed;
  const XrefRun run = probed.probe({"svc::validate", "--fetch", "id=%di:u64", "--every", "3", "--first", "5",
                                    "--until-hits", "30"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "until_hits");
  const auto& address = address_of(document, "svc::validate");
  EXPECT_EQ(address["passed"].get<uint64_t>(), 30u);
  std::vector<uint64_t> hits;
  for (const auto& sample : address["samples"]) hits.push_back(sample["hit"].get<uint64_t>());
  EXPECT_EQ(hits, (std::vector<uint64_t>{3, 6, 9, 12, 15}));
  EXPECT_EQ(document["summary"]["samples_not_kept"], 0);
  EXPECT_EQ(document["limits"]["until_hits"], 30);

  // Two threads race for the last places: which four samples are kept
  // varies, that four are kept and one is counted does not.
  ProbedTarget bounded;
  const XrefRun capped = bounded.probe({"svc::validate", "--fetch", "id=%di:u64", "--every", "3", "--first", "5",
                                        "--until-hits", "30", "--max-events", "4"});
  ASSERT_EQ(capped.exit_status, 0) << capped.err;
  const auto capped_document = capped.json();
  const auto& capped_address = address_of(capped_document, "svc::validate");
  EXPECT_EQ(capped_address["samples"].size(), 4u);
  for (const auto& sample : capped_address["samples"]) {
    const uint64_t hit = sample["hit"].get<uint64_t>();
    EXPECT_TRUE(hit % 3 == 0 && hit <= 15) << sample.dump();
  }
  EXPECT_EQ(capped_document["summary"]["samples_not_kept"], 1);
  EXPECT_EQ(capped_document["summary"]["lost_events"], 0);
  EXPECT_EQ(capped_document["limits"]["max_events"], 4);
  // Each sample's id is a request the target ran on that thread.
  const auto record = probed.record();
  for (const auto& sample : address["samples"]) {
    const uint64_t id = std::stoull(sample["fetches"][0]["value"].get<std::string>(), nullptr, 16);
    EXPECT_EQ(record.count({sample["tid"].get<uint32_t>(), id}), 1u) << sample.dump();
  }
}

// Inside a function the return address comes from the .eh_frame CFA rule:
// the callers are inferred, and still exactly those of the record.
TEST(ProbeCli, CallersInsideAFunctionAreInferredFromTheCfaRule) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string va = va_inside_settle();
  ASSERT_FALSE(va.empty());
  ProbedTarget probed;
  const XrefRun run = probed.probe({va, "--callers"});
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  expect_inferred_callers_equal_record(run.json(), va, probed.record());
}

// Bad addresses and options are refused before anything is attached, with
// one line and a distinct exit status; the target runs on.
TEST(ProbeCli, BadInputIsRefusedBeforeAnythingIsAttached) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const ObjdumpListing listing(XREF_TRACE_TARGET);
  const auto validate = listing.symbol("_ZN3svc8validateEmm");
  ASSERT_TRUE(validate);
  uint64_t inside_instruction = 0;
  for (const auto& instruction : listing.in_range(*validate, *validate + 0x40)) {
    if (instruction.next > instruction.address + 1) {
      inside_instruction = instruction.address + 1;
      break;
    }
  }
  ASSERT_NE(inside_instruction, 0u);
  // The links of earlier probes are freed by the kernel after their helper
  // closed them (a grace period later): wait until none is left, so that
  // any link seen below is one of these refused runs.
  for (int attempt = 0; attempt < 400 && program_links("probe_hit") > 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(program_links("probe_hit"), 0) << "links of earlier probes are still listed";
  RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const std::string pid = std::to_string(target.pid());
  std::ostringstream mid;
  mid << "0x" << std::hex << inside_instruction;

  const XrefRun mid_instruction = run_xref({"probe", "--pid", pid, mid.str(), "--json"});
  EXPECT_EQ(mid_instruction.exit_status, 13) << mid_instruction.err << mid_instruction.out;
  EXPECT_EQ(mid_instruction.json()["error"]["code"], "not_an_instruction") << mid_instruction.out;

  // A data object, as nm names it: refused as not code, by its section.
  uint64_t data_va = 0;
  for (const auto& line : command_lines("nm " + std::string(XREF_TRACE_TARGET))) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name && (type == "b" || type == "B") && name.find("result_sink") != std::string::npos) {
      data_va = std::stoull(address, nullptr, 16);
    }
  }
  ASSERT_NE(data_va, 0u) << "nm shows no result_sink in .bss";
  std::ostringstream data;
  data << "0x" << std::hex << data_va;
  const XrefRun in_data = run_xref({"probe", "--pid", pid, data.str()});
  EXPECT_EQ(in_data.exit_status, 13) << in_data.err;
  EXPECT_NE(in_data.err.find(".bss"), std::string::npos) << in_data.err;

  const XrefRun unknown = run_xref({"probe", "--pid", pid, "svc::no_such_function"});
  EXPECT_NE(unknown.exit_status, 0);
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1) << unknown.err;

  const XrefRun group = run_xref({"probe", "--pid", pid, "svc::validate", "--group-by", "amount"});
  EXPECT_EQ(group.exit_status, 2) << group.err;
  EXPECT_NE(group.err.find("no fetch is named 'amount'"), std::string::npos) << group.err;

  const XrefRun filter = run_xref({"probe", "--pid", pid, "svc::validate", "--fetch", "id=%di:u64", "--filter",
                                   "nope > 1"});
  EXPECT_EQ(filter.exit_status, 2) << filter.err;

  // --stop-when stops a thread for a debugger: outside one its signal
  // would end the process.
  const XrefRun stop_when = run_xref({"probe", "--pid", pid, "svc::validate", "--fetch", "id=%di:u64", "--stop-when",
                                      "id == 3", "--json"});
  EXPECT_EQ(stop_when.exit_status, 2) << stop_when.err << stop_when.out;
  EXPECT_NE(stop_when.json()["error"]["message"].get<std::string>().find("--stop-when stops a thread for a debugger"),
            std::string::npos)
      << stop_when.out;
  const XrefRun skip = run_xref({"probe", "--pid", pid, "svc::validate", "--skip", "2"});
  EXPECT_EQ(skip.exit_status, 2) << skip.err;
  EXPECT_EQ(std::count(skip.err.begin(), skip.err.end(), '\n'), 1) << skip.err;

  EXPECT_EQ(program_links("probe_hit"), 0);
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";

  // exit_now runs only with --exit-in-request: the probe says it was never
  // reached, and how to check the address.
  const XrefRun never = run_xref({"probe", "--pid", pid, "svc::exit_now", "svc::validate", "--duration-ms", "200",
                                  "--json"});
  ASSERT_EQ(never.exit_status, 0) << never.err;
  const nlohmann::json document = never.json();
  EXPECT_EQ(document["addresses"][0]["hits"], 0u);
  std::string warning;
  for (const auto& text : document["warnings"]) {
    EXPECT_EQ(text.get<std::string>().find("svc::validate"), std::string::npos) << "validate was hit: " << text;
    if (text.get<std::string>().rfind("never_hit: svc::exit_now", 0) == 0) warning = text.get<std::string>();
  }
  EXPECT_NE(warning.find("`xref resolve --pid " + pid + " 0x"), std::string::npos) << never.out;
}

// --heartbeat-ms in JSON lines: progress lines whose counts only grow, then
// the result; --mark-file stamps each sample with the log line of the
// request it belongs to (one worker, so the latest line is its own).
TEST(ProbeCli, HeartbeatsGrowAndSamplesCarryTheirRequestsLogLine) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string log = "/tmp/xref-probe-mark-" + std::to_string(getpid()) + ".log";
  unlink(log.c_str());
  TargetProcess service({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", "500", "--log", log});
  const XrefRun run = run_xref({"probe", "--pid", std::to_string(service.pid()), "validate", "--fetch", "id=+0(%di):u64",
                                "--every", "7", "--first", "10", "--duration-ms", "1200", "--heartbeat-ms", "300",
                                "--mark-file", log, "--mark-regex", "^request ([0-9]+)", "--jsonl"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::istringstream lines(run.out);
  std::vector<nlohmann::json> heartbeats;
  nlohmann::json result;
  for (std::string line; std::getline(lines, line);) {
    const auto json = nlohmann::json::parse(line);
    if (json["type"] == "heartbeat") heartbeats.push_back(json);
    if (json["type"] == "result") result = json;
  }
  ASSERT_GE(heartbeats.size(), 2u) << run.out;
  uint64_t previous = 0;
  for (const auto& heartbeat : heartbeats) {
    const uint64_t passed = heartbeat["addresses"][0]["passed"].get<uint64_t>();
    EXPECT_GE(passed, previous) << heartbeat.dump();
    previous = passed;
  }
  ASSERT_TRUE(result.is_object()) << run.out;
  EXPECT_GE(result["addresses"][0]["passed"].get<uint64_t>(), previous);
  const auto& samples = result["addresses"][0]["samples"];
  ASSERT_EQ(samples.size(), 10u) << result.dump();
  for (const auto& sample : samples) {
    const uint64_t id = std::stoull(sample["fetches"][0]["value"].get<std::string>(), nullptr, 16);
    EXPECT_EQ(sample["mark_status"], "matched") << sample.dump();
    EXPECT_EQ(sample["mark_match"], std::to_string(id)) << sample.dump();
  }
  unlink(log.c_str());
}

}  // namespace
}  // namespace xref::test
