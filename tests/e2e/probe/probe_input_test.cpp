// What xref probe does with input it must refuse or merge, and with a group
// map that fills: every passing hit is counted under its key or counted as
// not counted, and the numbers equal what trace_target recorded itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "objdump_listing.h"
#include "probe_harness.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

constexpr uint64_t kGroupMapKeys = 65536;  // docs/probe.md: (address, key) pairs the group map holds
// tick(0) ... tick(N - 1) in one request: N distinct values, a few hundred
// more than the map holds (each hit costs about 20 us here).
constexpr uint64_t kTicks = kGroupMapKeys + 464;

struct TickRun {
  XrefRun run;
  RecordedCalls calls;
};

TickRun probe_ticks(const std::vector<std::string>& output) {
  RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--threads", "1", "--requests", "1", "--burst",
                                                         std::to_string(kTicks), "--interval-us", "200"}));
  std::vector<std::string> args = {"probe",   "--pid", std::to_string(target.pid()), "--duration-ms", "0",
                                   "svc::tick", "--fetch", "i=%di:u64",              "--group-by",    "i"};
  args.insert(args.end(), output.begin(), output.end());
  TickRun tick_run;
  tick_run.run = run_xref_attached(args, record_file.go_file());
  tick_run.calls = recorded_calls(read_record(record_file.path), "tick");
  return tick_run;
}

// More distinct values than the group map holds: the hits it had no room
// for are counted, said in the document (not_counted, a groups_full
// warning) and in text, and equal the target's own calls minus the
// counted ones.
TEST(ProbeInput, AFullGroupMapSaysHowManyHitsWentUncounted) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const TickRun json_run = probe_ticks({"--json"});
  ASSERT_EQ(json_run.run.exit_status, kProcessExited) << json_run.run.err << json_run.run.out.substr(0, 2000);
  const RecordedCalls& calls = json_run.calls;
  ASSERT_EQ(calls.total, kTicks);
  ASSERT_EQ(calls.by_first_arg.size(), kTicks) << "each call has its own value";
  const auto document = json_run.run.json();
  const auto& address = address_of(document, "svc::tick");
  EXPECT_EQ(address["passed"].get<uint64_t>(), calls.total);
  const auto& groups = address["groups"];
  const uint64_t counted = groups["counted"].get<uint64_t>();
  const uint64_t not_counted = groups["not_counted"].get<uint64_t>();
  EXPECT_EQ(groups["keys"].get<uint64_t>(), kGroupMapKeys);
  EXPECT_EQ(counted, groups["keys"].get<uint64_t>()) << "one call per value";
  EXPECT_EQ(not_counted, calls.total - counted);
  EXPECT_GT(not_counted, 0u);
  EXPECT_EQ(groups["unread"], 0);
  EXPECT_EQ(groups["complete"], false);
  for (const auto& value : groups["values"]) EXPECT_EQ(value["hits"], 1) << value.dump();
  EXPECT_EQ(document["summary"]["complete"], false);
  const std::string warning = "groups_full: svc::tick: " + std::to_string(not_counted) +
                              " hits were not counted by --group-by i: the map of 65536 (address, key) pairs all "
                              "addresses share was full; group by something with fewer values, or --filter the hits";
  EXPECT_NE(std::find(document["warnings"].begin(), document["warnings"].end(), warning), document["warnings"].end())
      << document["warnings"].dump();

  const TickRun text_run = probe_ticks({});
  ASSERT_EQ(text_run.run.exit_status, kProcessExited) << text_run.run.err;
  ASSERT_EQ(text_run.calls.total, kTicks);
  const std::string& text = text_run.run.out;
  const uint64_t text_not_counted = text_run.calls.total - kGroupMapKeys;
  EXPECT_NE(text.find("warning: groups_full: svc::tick: " + std::to_string(text_not_counted) + " hits were not counted"),
            std::string::npos)
      << text.substr(0, 2000);
  EXPECT_NE(text.find("  by i (65536 keys; " + std::to_string(text_not_counted) +
                      " hits not counted: the group map of 65536 keys was full):"),
            std::string::npos)
      << text.substr(0, 2000);
}

// The same with tracefs, where xref counts from the kernel's records into
// maps of the same bounds (a buffer large enough that no record is lost).
TEST(ProbeInput, AFullGroupMapWithTracefsSaysTheSame) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const TickRun tick_run = probe_ticks({"--json", "--backend", "tracefs", "--ringbuf-bytes", "16777216"});
  ASSERT_EQ(tick_run.run.exit_status, kProcessExited) << tick_run.run.err << tick_run.run.out.substr(0, 2000);
  ASSERT_EQ(tick_run.calls.total, kTicks);
  const auto document = tick_run.run.json();
  ASSERT_EQ(document["backend"], "tracefs");
  ASSERT_EQ(document["summary"]["lost_events"], 0);
  const auto& groups = address_of(document, "svc::tick")["groups"];
  EXPECT_EQ(groups["keys"].get<uint64_t>(), kGroupMapKeys);
  EXPECT_EQ(groups["counted"].get<uint64_t>(), kGroupMapKeys);
  EXPECT_EQ(groups["not_counted"].get<uint64_t>(), tick_run.calls.total - groups["counted"].get<uint64_t>());
  EXPECT_EQ(groups["complete"], false);
}

// 3,000 copies of one name and its static VA are one probe site: one
// uprobe whose hits equal the record (two uprobes at one address would
// count each call twice), listed once, with its other spelling and a
// warning that says so.
TEST(ProbeInput, CopiesOfOneAddressAreOneProbeSite) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const ObjdumpListing listing(XREF_TRACE_TARGET);
  const auto validate = listing.symbol("_ZN3svc8validateEmm");
  ASSERT_TRUE(validate);
  const std::string static_va = hex_string(*validate);
  ProbedTarget probed;
  std::vector<std::string> args(3000, "svc::validate");
  args.push_back(static_va);
  const XrefRun run = probed.probe(args);
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out.substr(0, 2000);
  const auto document = run.json();
  ASSERT_EQ(document["addresses"].size(), 1u) << document["addresses"].dump().substr(0, 2000);
  const auto& address = document["addresses"][0];
  EXPECT_EQ(address["address"], "svc::validate");
  EXPECT_EQ(address["also_given"], nlohmann::json::array({static_va}));
  EXPECT_EQ(address["times_given"], 3001);
  EXPECT_EQ(address["hits"].get<uint64_t>(), recorded_calls(probed.record(), "validate").total);
  const std::string warning = "duplicate_address: svc::validate (3000 times) and " + static_va +
                              " are one probe site (svc::validate(unsigned long, unsigned long), probe VA " +
                              address["probe_va"].get<std::string>() +
                              "): probed and counted once, reported as svc::validate";
  EXPECT_NE(std::find(document["warnings"].begin(), document["warnings"].end(), warning), document["warnings"].end())
      << document["warnings"].dump();
}

// Refused before anything is attached, each with one line (text) or the
// error object (JSON): an empty --group-by or --hist, an address with a
// newline in it (quoted, as fetch specs quote theirs), a --mark-file on
// procfs or sysfs.
TEST(ProbeInput, EmptyGroupByNewlinesAndPseudoFileMarksAreRefused) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const std::string pid = std::to_string(target.pid());
  const auto refused = [&pid](std::vector<std::string> extra) {
    std::vector<std::string> args = {"probe", "--pid", pid};
    args.insert(args.end(), extra.begin(), extra.end());
    const XrefRun text = run_xref(args);
    EXPECT_EQ(text.exit_status, 2) << text.err;
    EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << text.err;
    EXPECT_EQ(text.err.find("xref: probing"), std::string::npos) << text.err;
    EXPECT_EQ(text.out, "");
    args.push_back("--json");
    const XrefRun json = run_xref(args);
    EXPECT_EQ(json.exit_status, 2) << json.out;
    const auto error = json.json()["error"];
    EXPECT_EQ(error["code"], "invalid_argument") << json.out;
    EXPECT_EQ(error["exit_status"], 2);
    return error;
  };

  EXPECT_EQ(refused({"svc::validate", "--group-by", ""})["message"],
            "--group-by: an empty value is not a group key");
  EXPECT_EQ(refused({"svc::validate", "--fetch", "n=%di:u64", "--hist", ""})["message"],
            "--hist: an empty value is not a fetched name");

  const auto newline = refused({"svc::validate\nsvc::settle"});
  EXPECT_EQ(newline["message"], "probe \"svc::validate\\x0asvc::settle\": byte 0x0a (column 14) is in no function "
                                "name or address");
  EXPECT_EQ(newline["hint"], "name a function as nm -C prints it, or an instruction's static VA (0x1234)");
  EXPECT_EQ(refused({"svc::validate", "0x10\r"})["message"],
            "probe \"0x10\\x0d\": byte 0x0d (column 5) is in no function name or address");

  for (const auto& [path, filesystem] :
       std::vector<std::pair<std::string, std::string>>{{"/proc/self/mem", "procfs"},
                                                        {"/proc/" + pid + "/environ", "procfs"},
                                                        {"/sys/kernel/btf/vmlinux", "sysfs"}}) {
    EXPECT_EQ(refused({"svc::validate", "--mark-file", path, "--mark-regex", "x"})["message"],
              "--mark-file " + path + " is on " + filesystem +
                  ", a pseudo filesystem: its files are the kernel's or a process's state, not a log");
  }
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

}  // namespace
}  // namespace xref::test
