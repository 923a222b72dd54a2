// xref trace diff on windows captured from live sample_service processes:
// a request routed to route_even against one routed to route_odd, checked
// against what the service recorded of both requests; identical windows;
// a JSONL stream with and without its header; bad input.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "sample_target.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

// A file for the test, removed when it ends.
struct SavedFile {
  explicit SavedFile(const std::string& name, const std::string& text = "")
      : path("/tmp/xref-diff-test-" + std::to_string(getpid()) + "-" + name) {
    std::ofstream(path) << text;
  }
  ~SavedFile() { unlink(path.c_str()); }
  SavedFile(const SavedFile&) = delete;
  SavedFile& operator=(const SavedFile&) = delete;
  const std::string path;
};

// One line of sample_service --record: "TID REQ_ID FUNC ARG...", per call.
// The calls the service recorded for one request. A worker writes each
// request's lines at once after it returns, so they are all there once a
// later request of the same thread is (or the service is gone).
std::vector<SampleCall> recorded_request(const std::string& path, uint32_t tid, uint64_t request, pid_t service) {
  for (;;) {
    const auto record = read_sample_record(path);
    const bool later = std::any_of(record.begin(), record.end(), [&](const auto& entry) {
      return entry.first.first == tid && entry.first.second > request;
    });
    if (later || kill(service, 0) != 0) {
      const auto found = record.find({tid, request});
      return found == record.end() ? std::vector<SampleCall>() : found->second;
    }
    usleep(10000);
  }
}

struct SampleService {
  explicit SampleService(const std::string& name) : record("/tmp/xref-diff-test-" + std::to_string(getpid()) + "-" + name + ".record") {
    unlink(record.c_str());
    process = std::make_unique<TargetProcess>(std::vector<std::string>{
        XREF_SAMPLE_SERVICE, "--threads", "2", "--requests", "0", "--interval-us", "2000", "--record", record});
  }
  ~SampleService() {
    process.reset();
    unlink(record.c_str());
  }
  std::string pid() const { return std::to_string(process->pid()); }
  std::string record;
  std::unique_ptr<TargetProcess> process;
};

const char* kFunctions = "validate,price_order,apply_fee,route_even,route_odd,settle";

// One window of a request whose asset satisfies `filter`. The service's
// request n has asset 1 + n % 4 and id parity that of n: asset 1 is an even
// request (route_even), asset 2 an odd one (route_odd).
XrefRun capture(const SampleService& service, const std::string& filter) {
  return run_xref({"trace", "--pid", service.pid(), "--start", "handle_request", "--functions", kFunctions,
                   "--fetch", "id=+0(%di):u64,asset=+8(%di):u64", "--start-filter", filter,
                   "--fetch-at", "price_order", "asset=%di:u64,amount=%si:u64",
                   "--fetch-at", "apply_fee", "subtotal=%di:u64,bps=%si:u64",
                   "--fetch-ret", "apply_fee", "fee=%ax:u64",
                   "--fetch-at", "route_even", "id=%di:u64,total=%si:u64",
                   "--fetch-at", "route_odd", "id=%di:u64,total=%si:u64",
                   "--max-windows", "1", "--duration-ms", "20000", "--json"});
}

// Each fetched entry argument is what the service recorded for that call.
void expect_recorded_arguments(const nlohmann::json& window, const std::vector<SampleCall>& recorded) {
  std::vector<std::vector<uint64_t>> fetched_args, recorded_args;
  for (const auto& event : window["events"]) {
    const std::string name = plain_name(event["symbol"]);
    if (event["kind"] != "entry" || name == "handle_request" || event["fetches"].empty()) continue;
    std::vector<uint64_t> values;
    for (const auto& fetch : event["fetches"]) values.push_back(std::stoull(fetch["value"].get<std::string>(), nullptr, 16));
    fetched_args.push_back(values);
    for (const SampleCall& call : recorded) {
      if (call.function == name) recorded_args.push_back(call.args);
    }
  }
  EXPECT_EQ(fetched_args, recorded_args);
}

// What the diff must say: the events of `only_in_a` (resp. b) by their
// seq, every other event paired in order with the other window's, changed
// where a fetched value differs. One line per difference, sorted.
std::vector<std::string> expected_differences(const nlohmann::json& a, const nlohmann::json& b,
                                              const std::string& only_in_a, const std::string& only_in_b) {
  std::vector<std::string> lines;
  // "only_in_a 7 - entry 0x1820 1" / "only_in_b - 7 entry 0x18c0 1"
  auto only = [&lines](const nlohmann::json& window, const std::string& function, bool in_a) {
    std::vector<nlohmann::json> rest;
    for (const auto& event : window["events"]) {
      if (plain_name(event["symbol"]) != function) {
        rest.push_back(event);
        continue;
      }
      const std::string seq = event["seq"].dump();
      lines.push_back(std::string(in_a ? "only_in_a " + seq + " -" : "only_in_b - " + seq) + " " +
                      event["kind"].get<std::string>() + " " + event["target_va"].get<std::string>() + " " +
                      event["depth"].dump());
    }
    return rest;
  };
  const std::vector<nlohmann::json> a_rest = only(a, only_in_a, true);
  const std::vector<nlohmann::json> b_rest = only(b, only_in_b, false);
  EXPECT_EQ(a_rest.size(), b_rest.size());
  for (size_t i = 0; i < std::min(a_rest.size(), b_rest.size()); ++i) {
    const nlohmann::json& x = a_rest[i];
    const nlohmann::json& y = b_rest[i];
    EXPECT_EQ(x["target_va"], y["target_va"]);
    EXPECT_EQ(x["kind"], y["kind"]);
    std::string values;
    for (const auto& fetch : x["fetches"]) {
      for (const auto& other : y["fetches"]) {
        if (other["name"] == fetch["name"] && other["value"] != fetch["value"]) {
          values += " " + fetch["name"].get<std::string>() + ":" + fetch["value"].get<std::string>() + ">" +
                    other["value"].get<std::string>();
        }
      }
    }
    if (!values.empty()) {
      lines.push_back("changed " + x["seq"].dump() + " " + y["seq"].dump() + " " + x["kind"].get<std::string>() + " " +
                      x["target_va"].get<std::string>() + " " + x["depth"].dump() + values);
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The same lines from the trace_diff document.
std::vector<std::string> reported_differences(const nlohmann::json& document) {
  std::vector<std::string> lines;
  for (const auto& difference : document["data"]["differences"]) {
    auto seq = [](const nlohmann::json& value) { return value.is_null() ? std::string("-") : value.dump(); };
    std::string line = difference["change"].get<std::string>() + " " + seq(difference["seq_a"]) + " " +
                       seq(difference["seq_b"]) + " " + difference["kind"].get<std::string>() + " " +
                       difference["target_va"].get<std::string>() + " " + difference["depth"].dump();
    if (difference.contains("values")) {
      for (const auto& value : difference["values"]) {
        line += " " + value["name"].get<std::string>() + ":" + value["a"].get<std::string>() + ">" +
                value["b"].get<std::string>();
      }
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(TraceDiffCli, EvenAndOddRequestDifferInTheirRouteAndValues) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  // Two runs of the same build: static VAs compare although each process
  // is loaded elsewhere.
  SampleService first("even");
  SampleService second("odd");
  const XrefRun even = capture(first, "asset == 1");
  ASSERT_EQ(even.exit_status, 0) << even.err;
  const XrefRun odd = capture(second, "asset == 2");
  ASSERT_EQ(odd.exit_status, 0) << odd.err;
  const nlohmann::json a = even.json()["windows"][0];
  const nlohmann::json b = odd.json()["windows"][0];
  const uint64_t a_request = fetched(a["start_fetches"], "id");
  const uint64_t b_request = fetched(b["start_fetches"], "id");
  ASSERT_EQ(a_request % 2, 0u);
  ASSERT_EQ(b_request % 2, 1u);

  // Ground truth: the two requests made the same calls but for the route,
  // with the arguments the windows fetched.
  const auto a_recorded = recorded_request(first.record, a["tid"], a_request, first.process->pid());
  const auto b_recorded = recorded_request(second.record, b["tid"], b_request, second.process->pid());
  std::vector<std::string> a_calls = call_names(a_recorded);
  std::vector<std::string> b_calls = call_names(b_recorded);
  ASSERT_EQ(std::count(a_calls.begin(), a_calls.end(), "route_even"), 1);
  ASSERT_EQ(std::count(b_calls.begin(), b_calls.end(), "route_odd"), 1);
  std::replace(a_calls.begin(), a_calls.end(), std::string("route_even"), std::string("route"));
  std::replace(b_calls.begin(), b_calls.end(), std::string("route_odd"), std::string("route"));
  EXPECT_EQ(a_calls, b_calls);
  expect_recorded_arguments(a, a_recorded);
  expect_recorded_arguments(b, b_recorded);

  const SavedFile a_file("even.json", even.out);
  const SavedFile b_file("odd.json", odd.out);
  const XrefRun diff = run_xref({"trace", "diff", a_file.path, b_file.path, "--json"});
  ASSERT_EQ(diff.exit_status, 1) << diff.err << diff.out;
  const nlohmann::json document = diff.json();
  EXPECT_EQ(document["operation"], "trace_diff");
  EXPECT_EQ(document["schema_version"], 1);
  EXPECT_EQ(document["data"]["equal"], false);
  const std::vector<std::string> expected = expected_differences(a, b, "route_even", "route_odd");
  EXPECT_EQ(reported_differences(document), expected);
  // The route: its entry and return, at the static VAs nm gives.
  const auto nm = nm_static_vas(XREF_SAMPLE_SERVICE);
  std::set<std::string> routes;
  for (const auto& difference : document["data"]["differences"]) {
    if (difference["change"] != "changed") {
      routes.insert(difference["change"].get<std::string>() + " " + difference["kind"].get<std::string>() + " " +
                    difference["symbol"].get<std::string>() + " " + difference["target_va"].get<std::string>());
    }
  }
  EXPECT_EQ(routes, (std::set<std::string>{"only_in_a entry route_even " + hex(nm.at("route_even")),
                                           "only_in_a return route_even " + hex(nm.at("route_even")),
                                           "only_in_b entry route_odd " + hex(nm.at("route_odd")),
                                           "only_in_b return route_odd " + hex(nm.at("route_odd"))}));
  EXPECT_EQ(document["data"]["summary"]["only_in_a"], 2);
  EXPECT_EQ(document["data"]["summary"]["only_in_b"], 2);
  EXPECT_EQ(document["data"]["summary"]["changed"], expected.size() - 4);
  EXPECT_EQ(document["data"]["summary"]["same"], a["events"].size() - 2 - (expected.size() - 4));

  // The text: the same differences, marked in the tree, names first and
  // (--addresses) the static VAs nm gives.
  const XrefRun text = run_xref({"trace", "diff", a_file.path, b_file.path, "--context", "100", "--addresses"});
  ASSERT_EQ(text.exit_status, 1) << text.err;
  size_t changed_lines = 0;
  std::vector<std::string> marked;
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("~", 0) == 0) ++changed_lines;
    if (line.rfind("-", 0) == 0 || line.rfind("+", 0) == 0) marked.push_back(line.substr(0, 1) + line.substr(line.find_first_of("><")));
  }
  EXPECT_EQ(changed_lines, expected.size() - 4);
  EXPECT_EQ(marked.size(), 4u) << text.out;
  if (marked.size() == 4) {
    EXPECT_EQ(marked[0].rfind("-> route_even  [" + hex(nm.at("route_even")) + "]", 0), 0u) << marked[0];
    EXPECT_EQ(marked[1].rfind("-< route_even  [" + hex(nm.at("route_even")) + "]", 0), 0u) << marked[1];
    EXPECT_EQ(marked[2].rfind("+> route_odd  [" + hex(nm.at("route_odd")) + "]", 0), 0u) << marked[2];
    EXPECT_EQ(marked[3].rfind("+< route_odd  [" + hex(nm.at("route_odd")) + "]", 0), 0u) << marked[3];
  }

  // A window against itself: equal.
  const XrefRun itself = run_xref({"trace", "diff", a_file.path, a_file.path, "--json"});
  ASSERT_EQ(itself.exit_status, 0) << itself.err;
  EXPECT_EQ(itself.json()["data"]["equal"], true);
  EXPECT_TRUE(itself.json()["data"]["differences"].empty());
  EXPECT_EQ(itself.json()["data"]["summary"]["same"], a["events"].size());

  // Another build (here: a build-id that says so) is refused, unless allowed.
  nlohmann::json other_build = even.json();
  other_build["process"]["build_id"] = "00112233";
  const SavedFile other_file("other-build.json", other_build.dump());
  const XrefRun refused = run_xref({"trace", "diff", other_file.path, b_file.path});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("build-id 00112233 vs build-id " + odd.json()["process"]["build_id"].get<std::string>()),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--allow-build-mismatch"), std::string::npos);
  EXPECT_EQ(run_xref({"trace", "diff", other_file.path, b_file.path, "--allow-build-mismatch"}).exit_status, 1);
}

// Two requests that took the same path with the same fetched values, from
// one JSONL stream: equal. The stream's header names the build, so it
// compares even when cut short before its summary line.
TEST(TraceDiffCli, TwoRequestsWithTheSameValuesAreEqual) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleService service("same");
  const XrefRun trace = run_xref({"trace", "--pid", service.pid(), "--start", "handle_request", "--functions",
                                  kFunctions, "--fetch", "asset=+8(%di):u64", "--start-filter", "asset == 1",
                                  "--fetch-at", "price_order", "asset=%di:u64", "--max-windows", "2",
                                  "--duration-ms", "20000", "--jsonl"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  std::vector<std::string> lines;
  std::istringstream stream(trace.out);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << trace.out;
  const nlohmann::json header = nlohmann::json::parse(lines[0]);
  ASSERT_EQ(header["type"], "header");
  const nlohmann::json first = nlohmann::json::parse(lines[1])["window"];
  const nlohmann::json second = nlohmann::json::parse(lines[2])["window"];
  // Both requests went to route_even, and fetched the same values.
  auto routed_even = [](const nlohmann::json& window) {
    for (const auto& event : window["events"]) {
      if (plain_name(event["symbol"]) == "route_even" && event["kind"] == "entry") return true;
    }
    return false;
  };
  ASSERT_TRUE(routed_even(first));
  ASSERT_TRUE(routed_even(second));
  EXPECT_EQ(fetched(first["start_fetches"], "asset"), 1u);
  EXPECT_EQ(fetched(second["start_fetches"], "asset"), 1u);

  const std::string first_id = first["window_id"].dump();
  const std::string second_id = second["window_id"].dump();
  const SavedFile whole("whole.jsonl", trace.out);
  const XrefRun equal = run_xref({"trace", "diff", whole.path, whole.path, "--window", first_id, "--window-b", second_id});
  EXPECT_EQ(equal.exit_status, 0) << equal.err << equal.out;
  EXPECT_NE(equal.out.find("\nequal: " + std::to_string(first["events"].size()) + " events"), std::string::npos)
      << equal.out;

  const SavedFile interrupted("interrupted.jsonl", lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n");
  const XrefRun cut = run_xref({"trace", "diff", interrupted.path, whole.path, "--window", first_id, "--window-b",
                                second_id, "--json"});
  EXPECT_EQ(cut.exit_status, 0) << cut.err << cut.out;
  EXPECT_EQ(cut.json()["data"]["a"]["build_id"], header["process"]["build_id"]);

  // Without header and summary, the build is unknown: refused unless allowed.
  const SavedFile anonymous("anonymous.jsonl", lines[1] + "\n" + lines[2] + "\n");
  const XrefRun unknown = run_xref({"trace", "diff", anonymous.path, whole.path, "--json"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_EQ(unknown.json()["error"]["exit_status"], 2);
  EXPECT_NE(unknown.json()["error"]["message"].get<std::string>().find("does not say which build"), std::string::npos);
  EXPECT_EQ(run_xref({"trace", "diff", anonymous.path, whole.path, "--window", first_id, "--window-b", second_id,
                      "--allow-build-mismatch"})
                .exit_status,
            0);
}

// Bad input is exit status 2 with one clear line, or a JSON error object.
TEST(TraceDiffCli, BadInputIsStatusTwo) {
  const std::string window =
      R"({"window_id": 4, "tid": 1, "status": "complete", "events": [)"
      R"({"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x10", "symbol": "f", "fetches": []}]})";
  const SavedFile good("good.json", R"({"schema_version": 1, "operation": "live_trace", "process": {"build_id": "ab"},)"
                                    R"( "windows": [)" + window + "]}");
  const SavedFile not_json("not.json", "hello\n");
  const SavedFile maps("maps.json", R"({"schema_version": 1, "operation": "live_maps", "data": {}})");
  const SavedFile future("future.json", R"({"schema_version": 2, "operation": "live_trace", "windows": [)" + window + "]}");
  const SavedFile truncated("truncated.jsonl", R"({"type": "window", "window": )" + window + "}\n" +
                                                   R"({"type": "window", "window": {"window_id": 5, "ev)");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{not_json.path, good.path}, "not JSON"},
      {{good.path, maps.path}, "not an xref live_trace document"},
      {{future.path, good.path}, "unknown schema_version 2"},
      {{good.path, truncated.path}, "truncated JSONL line 2"},
      {{good.path, good.path, "--window", "7"}, "has no window 7"},
      {{good.path, good.path, "--window-b", "7"}, "has no window 7"},
      {{good.path, "/nonexistent/trace.json"}, "cannot read /nonexistent/trace.json"},
  };
  for (const Case& bad : cases) {
    std::vector<std::string> args = {"trace", "diff"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    const XrefRun text = run_xref(args);
    EXPECT_EQ(text.exit_status, 2) << bad.message;
    EXPECT_NE(text.err.find(bad.message), std::string::npos) << text.err;
    EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << text.err;
    args.push_back("--json");
    const XrefRun json = run_xref(args);
    EXPECT_EQ(json.exit_status, 2) << bad.message;
    const nlohmann::json document = json.json();
    EXPECT_EQ(document["operation"], "trace_diff");
    EXPECT_EQ(document["error"]["exit_status"], 2);
    EXPECT_NE(document["error"]["message"].get<std::string>().find(bad.message), std::string::npos) << json.out;
  }
  EXPECT_EQ(run_xref({"trace", "diff", good.path, good.path, "--window", "4"}).exit_status, 0);
}

}  // namespace
}  // namespace xref::test
