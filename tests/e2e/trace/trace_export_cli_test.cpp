// xref trace export on a window captured from the live sample service: the
// Chrome slices are the window's calls, nested as its depths say.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sample_target.h"
#include "saved_trace.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

TEST(TraceExportCli, ChromeSlicesAreTheWindowsCallsNested) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const XrefRun trace = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--functions",
                                  "validate,price_order,apply_fee,route_even,route_odd,settle", "--fetch-at",
                                  "apply_fee", "price=%di:u64", "--max-windows", "1", "--duration-ms", "20000",
                                  "--json"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err << trace.out;
  const nlohmann::json window = trace.json()["windows"][0];
  const std::string saved = "/tmp/xref-export-test-" + std::to_string(getpid()) + ".json";
  std::ofstream(saved) << trace.out;

  const XrefRun exported = run_xref({"trace", "export", saved, "--format", "chrome"});
  std::remove(saved.c_str());
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  const nlohmann::json chrome = exported.json();

  std::vector<nlohmann::json> calls;
  nlohmann::json window_slice;
  for (const auto& event : chrome["traceEvents"]) {
    if (event["ph"] != "X") continue;
    EXPECT_EQ(event["tid"], window["tid"]);
    EXPECT_EQ(event["pid"], target.process.pid());
    if (event["cat"] == "window") window_slice = event;
    else calls.push_back(event);
  }
  ASSERT_EQ(window_slice["name"], "window " + std::to_string(window["window_id"].get<int>()));
  // Slices in entry order: by start, an enclosing slice before the ones it holds.
  std::stable_sort(calls.begin(), calls.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    if (a["ts"] != b["ts"]) return a["ts"].get<double>() < b["ts"].get<double>();
    return a["dur"].get<double>() > b["dur"].get<double>();
  });
  std::vector<nlohmann::json> entries;
  for (const auto& event : window["events"]) {
    if (event["kind"] == "entry") entries.push_back(event);
  }
  ASSERT_EQ(calls.size(), entries.size());
  auto end_of = [](const nlohmann::json& slice) { return slice["ts"].get<double>() + slice["dur"].get<double>(); };
  std::vector<nlohmann::json> parents{window_slice};
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(calls[i]["name"], entries[i]["symbol"]) << "call " << i;
    EXPECT_EQ(calls[i]["args"]["target_va"], entries[i]["target_va"]);
    const size_t depth = entries[i]["depth"].get<size_t>();
    ASSERT_LT(depth, parents.size()) << "call " << i;
    parents.resize(depth + 1);
    const nlohmann::json& parent = parents.back();
    EXPECT_GE(calls[i]["ts"].get<double>(), parent["ts"].get<double>()) << "call " << i;
    EXPECT_LE(end_of(calls[i]), end_of(parent) + 1e-6) << "call " << i;
    if (entries[i]["symbol"] == "apply_fee") {
      EXPECT_TRUE(calls[i]["args"].contains("price"));
    }
    parents.push_back(calls[i]);
  }
}

// What a trace viewer needs to lay out X slices on a thread's track: they
// nest strictly (a slice starting inside another ends inside it too).
TEST(TraceExportCli, SeveralThreadsGetOneTrackEachWithStrictlyNestedSlices) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess service({XREF_SAMPLE_SERVICE, "--threads", "2", "--requests", "0", "--interval-us", "100"});
  const XrefRun trace = run_xref({"trace", "--pid", std::to_string(service.pid()), "--start", "handle_request",
                                  "--functions", "validate,price_order,apply_fee,route_even,route_odd,nop_entry,settle",
                                  "--max-windows", "8", "--duration-ms", "20000", "--jsonl"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  std::map<uint64_t, int> windows_per_tid;
  std::istringstream lines(trace.out);
  for (std::string line; std::getline(lines, line);) {
    const auto json = nlohmann::json::parse(line);
    if (json["type"] == "window") ++windows_per_tid[json["window"]["tid"].get<uint64_t>()];
  }
  ASSERT_EQ(windows_per_tid.size(), 2u) << "both workers ran requests";
  const std::string saved = "/tmp/xref-export-threads-" + std::to_string(getpid()) + ".jsonl";
  std::ofstream(saved) << trace.out;
  const XrefRun exported = run_xref({"trace", "export", saved});
  std::remove(saved.c_str());
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::map<uint64_t, std::vector<nlohmann::json>> slices_per_tid;
  std::map<uint64_t, std::string> thread_names;
  const nlohmann::json chrome = exported.json();
  for (const auto& event : chrome["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      thread_names[event["tid"].get<uint64_t>()] = event["args"]["name"];
    } else if (event["ph"] == "X") {
      EXPECT_EQ(event["pid"], service.pid());
      EXPECT_GE(event["ts"].get<double>(), 0.0);
      EXPECT_GE(event["dur"].get<double>(), 0.0);
      EXPECT_FALSE(event["name"].get<std::string>().empty());
      slices_per_tid[event["tid"].get<uint64_t>()].push_back(event);
    }
  }
  ASSERT_EQ(slices_per_tid.size(), windows_per_tid.size()) << "one track per traced thread";
  for (auto& [tid, slices] : slices_per_tid) {
    EXPECT_TRUE(windows_per_tid.count(tid)) << tid;
    EXPECT_FALSE(thread_names[tid].empty()) << "thread " << tid << " has a name";
    EXPECT_EQ(std::count_if(slices.begin(), slices.end(), [](const auto& s) { return s["cat"] == "window"; }),
              windows_per_tid[tid]);
    std::stable_sort(slices.begin(), slices.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      if (a["ts"] != b["ts"]) return a["ts"].get<double>() < b["ts"].get<double>();
      return a["dur"].get<double>() > b["dur"].get<double>();
    });
    std::vector<double> open_ends;
    for (const auto& slice : slices) {
      const double start = slice["ts"].get<double>(), end = start + slice["dur"].get<double>();
      while (!open_ends.empty() && open_ends.back() <= start + 1e-6) open_ends.pop_back();
      if (!open_ends.empty()) {
        EXPECT_LE(end, open_ends.back() + 1e-6) << "partial overlap: " << slice.dump();
      }
      open_ends.push_back(end);
    }
  }
}

// `-o` naming the input, by any name (itself, a symlink, a hard link, another
// spelling of the path), is refused and the input is left byte for byte:
// export reads its input back window by window while it writes, so writing
// over it would destroy the trace being exported.
TEST(TraceExportCli, OutputThatIsTheInputIsRefusedAndTheInputKept) {
  char name[] = "/tmp/xref-export-same-XXXXXX";
  const std::string directory = mkdtemp(name);
  const std::string input = directory + "/trace.json";
  const std::string original = one_window_trace() + "\n";
  std::ofstream(input, std::ios::binary) << original;
  const std::string symlink = directory + "/link.json";
  const std::string hard_link = directory + "/hard.json";
  std::filesystem::create_symlink(input, symlink);
  std::filesystem::create_hard_link(input, hard_link);
  auto contents = [&input] {
    std::ifstream file(input, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };

  for (const std::string& output : {input, symlink, hard_link, directory + "/./trace.json"}) {
    const XrefRun run = run_xref({"trace", "export", input, "-o", output});
    EXPECT_EQ(run.exit_status, 2) << output << ": " << run.err;
    EXPECT_EQ(run.err, "xref: error: -o " + output + " is the input " + input +
                           " itself; writing would destroy it; give -o another file\n");
    EXPECT_EQ(contents(), original) << output;
  }
  // Another file is written, and the input is still left alone.
  const std::string other = directory + "/chrome.json";
  const XrefRun run = run_xref({"trace", "export", input, "-o", other});
  EXPECT_EQ(run.exit_status, 0) << run.err;
  std::ifstream written(other);
  const nlohmann::json timeline = nlohmann::json::parse(written);
  ASSERT_TRUE(timeline.contains("traceEvents"));
  EXPECT_EQ(timeline["traceEvents"][0]["name"], "window 1");
  EXPECT_EQ(contents(), original);
  std::filesystem::remove_all(directory);
}

// Found by the saved_trace fuzz target: export read fields without checking
// their types, and a depth that was not a number (or a fetch name, an error
// or a pid that was not what docs/trace.md says) aborted it with an uncaught
// nlohmann::json::type_error. Windows are now checked as trace show checks them.
TEST(TraceExportCli, AFieldOfTheWrongTypeIsRefusedNotFatal) {
  char name[] = "/tmp/xref-export-types-XXXXXX";
  const std::string directory = mkdtemp(name);
  auto export_of = [&](const std::string& document) {
    const std::string input = directory + "/trace.json";
    std::ofstream(input, std::ios::binary) << document;
    return run_xref({"trace", "export", input});
  };
  const XrefRun depth = export_of(
      R"({"schema_version": 1, "operation": "live_trace", "windows": [{"window_id": 3, "events": [)"
      R"({"kind": "return", "depth": [1]}]}]})");
  EXPECT_EQ(depth.exit_status, 2) << depth.err;
  EXPECT_EQ(depth.err, "xref: error: window 3, event 0: depth is not a number from 0 to 65535; give the output of "
                       "`xref trace --json` or `xref trace --jsonl`\n");
  // Fields the check leaves alone are read as what they can be.
  const XrefRun loose = export_of(
      R"({"schema_version": 1, "operation": "live_trace", "process": {"pid": "42"}, "windows": [{"window_id": 1, )"
      R"("start_fetches": [7, {"name": 8, "error": 9}], "events": []}]})");
  EXPECT_EQ(loose.exit_status, 0) << loose.err;
  const nlohmann::json timeline = nlohmann::json::parse(loose.out);
  EXPECT_EQ(timeline["traceEvents"][0]["pid"], 0) << loose.out;
  EXPECT_EQ(timeline["traceEvents"][0]["args"]["?"], "<unreadable: ?>") << loose.out;
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace xref::test
