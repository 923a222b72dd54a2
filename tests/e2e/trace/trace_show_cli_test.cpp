// xref trace show --tree on windows captured from live targets, checked
// against what the targets recorded about each request: every call counted
// where it was made, every static callee the request skipped marked not
// called, the indirect call's real target under the indirect site.
#include <fstream>

#include "sample_target.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

// Saves a trace document and removes it when the test ends.
struct SavedTrace {
  explicit SavedTrace(const std::string& test, const std::string& text)
      : path("/tmp/xref-show-" + test + "-" + std::to_string(getpid()) + ".json") {
    std::ofstream(path) << text;
  }
  ~SavedTrace() { unlink(path.c_str()); }
  SavedTrace(const SavedTrace&) = delete;
  SavedTrace& operator=(const SavedTrace&) = delete;
  const std::string path;
};

// `trace show --tree` on a saved capture: data.windows of --json, and the text.
struct ShownTree {
  nlohmann::json windows = nlohmann::json::array();
  std::string text;
};

ShownTree show_tree(const std::string& test, const XrefRun& trace) {
  const SavedTrace saved(test, trace.out);
  ShownTree shown;
  const XrefRun json = run_xref({"trace", "show", saved.path, "--tree", "--json"});
  EXPECT_EQ(json.exit_status, 0) << json.err << json.out;
  const nlohmann::json result = nlohmann::json::parse(json.out, nullptr, false);
  EXPECT_FALSE(result.is_discarded()) << json.out;
  if (result.is_discarded()) return shown;
  EXPECT_EQ(result["operation"], "trace_show");
  EXPECT_EQ(result["schema_version"], 1);
  EXPECT_EQ(result["error"], nullptr);
  shown.windows = result["data"]["windows"];
  const XrefRun text = run_xref({"trace", "show", saved.path, "--tree"});
  EXPECT_EQ(text.exit_status, 0) << text.err;
  shown.text = text.out;
  return shown;
}

// Calls counted per (caller, callee) name over a window's tree: a call at an
// indirect site is its function's. Names without namespace or parameters.
using Pair = std::pair<std::string, std::string>;

struct PairCounts {
  std::map<Pair, uint64_t> calls;  // every pair of the tree, 0 when not called
  std::set<Pair> not_called;       // shown (not called)
  std::set<Pair> not_traced;       // shown (not traced)
};

void count_pairs(const nlohmann::json& node, const std::string& caller, PairCounts& counts) {
  const bool site = node["kind"] == "indirect_site";
  const std::string name = site ? caller : plain_name(node["name"].get<std::string>());
  if (!site && !caller.empty()) {
    counts.calls[{caller, name}] += node["calls"].get<uint64_t>();
    if (node["called"] == false) (node["traced"] == false ? counts.not_traced : counts.not_called).insert({caller, name});
  }
  for (const auto& child : node["children"]) count_pairs(child, name, counts);
}

const nlohmann::json* find_node(const nlohmann::json& node, const std::string& kind) {
  if (node["kind"] == kind) return &node;
  for (const auto& child : node["children"]) {
    if (const nlohmann::json* found = find_node(child, kind)) return found;
  }
  return nullptr;
}

// The count line of the text output ("tree depth N: static callees ...").
std::string count_line(const std::string& text, uint64_t window_id) {
  std::istringstream lines(text);
  std::string line;
  bool in_window = false;
  while (std::getline(lines, line)) {
    if (line.rfind("window ", 0) == 0) in_window = line.rfind("window " + std::to_string(window_id) + " ", 0) == 0;
    if (in_window && line.rfind("tree depth ", 0) == 0) return line;
  }
  return "";
}

TEST(TraceShowCli, SampleServiceTreeMatchesTheRecord) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("show-sample");
  // A finite run: if windows never came, the target's exit would end the trace.
  TargetProcess target({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "5000", "--interval-us", "2000",
                        "--record", record_file.path});
  const XrefRun trace = run_xref({"trace", "--pid", std::to_string(target.pid()), "--start", "handle_request",
                                  "--callees-of", "handle_request", "--depth", "2", "--fetch", "id=+0(%di):u64",
                                  "--max-windows", "2", "--json"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err << trace.out;
  const nlohmann::json document = trace.json();
  ASSERT_EQ(document["windows"].size(), 2u);
  const ShownTree shown = show_tree("sample", trace);
  const nlohmann::json& windows = shown.windows;
  ASSERT_EQ(windows.size(), 2u);

  const auto recorded = sample_record(record_file.path, request_keys(document));
  const std::set<std::string> recorded_functions = {"handle_request", "validate", "price_order", "apply_fee",
                                                    "route_even",     "route_odd", "settle"};
  std::set<std::string> routes_seen;
  for (size_t index = 0; index < windows.size(); ++index) {
    const nlohmann::json& tree_window = windows[index];
    const nlohmann::json& window = document["windows"][index];
    ASSERT_EQ(tree_window["window_id"], window["window_id"]);
    const uint64_t id = fetched(window["start_fetches"], "id");
    const RequestKey key{window["tid"].get<uint32_t>(), id};
    ASSERT_TRUE(recorded.count(key)) << "request " << id << " not recorded";
    const nlohmann::json& tree = tree_window["tree"];
    EXPECT_EQ(tree["name"], "handle_request");
    EXPECT_EQ(tree["calls"], 1);
    EXPECT_EQ(tree_window["counts"]["calls_below_depth"], 0);
    EXPECT_EQ(tree_window["counts"]["calls_outside_root"], 0);

    // Every recorded function was called as often as the record says,
    // wherever in the tree its calls landed (settle's recursion included).
    std::map<std::string, uint64_t> expected_calls, tree_calls;
    for (const auto& function : recorded.at(key)) ++expected_calls[function];
    PairCounts pairs;
    count_pairs(tree, "", pairs);
    const auto& pair_calls = pairs.calls;
    const auto& not_called = pairs.not_called;
    tree_calls["handle_request"] = tree["calls"].get<uint64_t>();
    for (const auto& [pair, calls] : pair_calls) {
      if (recorded_functions.count(pair.second)) tree_calls[pair.second] += calls;
    }
    for (auto it = tree_calls.begin(); it != tree_calls.end();) it = it->second == 0 ? tree_calls.erase(it) : ++it;
    EXPECT_EQ(tree_calls, expected_calls) << "request " << id;

    // The static callees the request did not call: those of the recorded
    // functions that the record does not have. Exactly they are not called.
    std::set<Pair> expected_not_called;
    for (const auto& [pair, calls] : pair_calls) {
      if (recorded_functions.count(pair.second) && !expected_calls.count(pair.second)) expected_not_called.insert(pair);
    }
    std::set<Pair> recorded_not_called;
    for (const auto& pair : not_called) {
      if (recorded_functions.count(pair.second)) recorded_not_called.insert(pair);
    }
    EXPECT_EQ(recorded_not_called, expected_not_called) << "request " << id;

    // The route function the request took is the indirect site's target.
    const std::string route = (id & 1) ? "route_odd" : "route_even";
    ASSERT_EQ(expected_calls.count(route), 1u) << "request " << id;
    const nlohmann::json* site = find_node(tree, "indirect_site");
    ASSERT_NE(site, nullptr) << tree.dump();
    EXPECT_EQ((*site)["calls"], 1);
    ASSERT_EQ((*site)["children"].size(), 1u) << site->dump();
    EXPECT_EQ((*site)["children"][0]["name"], route);
    EXPECT_EQ((*site)["children"][0]["calls"], 1);
    EXPECT_EQ((*site)["children"][0]["call_sites"][0]["va"], (*site)["site_va"]);
    routes_seen.insert(route);

    // The text says the same.
    const nlohmann::json& counts = tree_window["counts"];
    EXPECT_EQ(count_line(shown.text, window["window_id"].get<uint64_t>()),
              "tree depth " + std::to_string(tree_window["depth"].get<int>()) + ": static callees " +
                  std::to_string(counts["static_callees"].get<uint64_t>()) + " (called " +
                  std::to_string(counts["called"].get<uint64_t>()) + ", not called " +
                  std::to_string(counts["not_called"].get<uint64_t>()) + ", not traced " +
                  std::to_string(counts["not_traced"].get<uint64_t>()) + "); indirect sites 1 (targets seen 1); "
                  "calls not in the static tree 0")
        << shown.text;
  }
  // Two consecutive requests: one of each parity.
  EXPECT_EQ(routes_seen, (std::set<std::string>{"route_even", "route_odd"}));
  const std::string route_line = " " + hex(nm_static_vas(XREF_SAMPLE_SERVICE).at("route_odd")) + " route_odd  called 1  @";
  EXPECT_NE(shown.text.find(route_line), std::string::npos) << shown.text;
}

// trace_target's requests take different branches (risky/recover when
// id % 5 == 3, forward ~> finish when id % 4 == 1, never exit_now,
// rendezvous or tick here), and its record nests every call.
TEST(TraceShowCli, SkippedCalleesAreNotCalledAsTheRecordSays) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record_file("show-branches");
  TargetProcess target(target_command(record_file.path, {}));
  const XrefRun trace = run_xref_attached(
      {"trace", "--pid", std::to_string(target.pid()), "--start", "svc::handle_request", "--callees-of",
       "svc::handle_request", "--depth", "2", "--fetch", "id=+0(%di):u64", "--max-windows", "5", "--json"},
      record_file.go_file());
  ASSERT_EQ(trace.exit_status, 0) << trace.err << trace.out;
  const nlohmann::json document = trace.json();
  ASSERT_EQ(document["windows"].size(), 5u);
  const nlohmann::json windows = show_tree("branches", trace).windows;
  ASSERT_EQ(windows.size(), 5u);

  const auto recorded = await_record(record_file.path, request_keys(document));
  std::set<std::string> traced = all_traced_functions();
  traced.insert("tick");
  size_t windows_with_forward = 0, windows_with_recover = 0;
  for (size_t index = 0; index < windows.size(); ++index) {
    const nlohmann::json& window = document["windows"][index];
    const uint64_t id = fetched(window["start_fetches"], "id");
    const RequestKey key{window["tid"].get<uint32_t>(), id};
    ASSERT_TRUE(recorded.count(key)) << "request " << id;
    // The record's calls per (caller, callee); a tail jump's target is the
    // jumping function's callee.
    std::map<Pair, uint64_t> expected;
    std::vector<std::string> frames;
    std::string tail_from;
    for (const RecordedEvent& event : recorded.at(key)) {
      if (event.kind == '>') {
        const std::string caller = !tail_from.empty() ? tail_from : (frames.empty() ? "" : frames.back());
        if (!caller.empty()) ++expected[{caller, event.function}];
        frames.push_back(event.function);
        tail_from.clear();
      } else if (!frames.empty()) {
        tail_from = event.kind == '~' ? frames.back() : "";
        frames.pop_back();
      }
    }
    PairCounts pairs;
    count_pairs(windows[index]["tree"], "", pairs);
    auto recorded_pair = [&](const Pair& pair) { return traced.count(pair.first) && traced.count(pair.second); };
    std::map<Pair, uint64_t> shown_calls;
    std::set<Pair> expected_not_called, shown_not_called;
    for (const auto& [pair, calls] : pairs.calls) {
      if (!recorded_pair(pair)) continue;
      if (calls > 0) shown_calls[pair] = calls;
      if (!expected.count(pair)) expected_not_called.insert(pair);
      // --depth 2 probes every call between recorded functions.
      EXPECT_FALSE(pairs.not_traced.count(pair)) << pair.first << " > " << pair.second;
    }
    for (const auto& pair : pairs.not_called) {
      if (recorded_pair(pair)) shown_not_called.insert(pair);
    }
    EXPECT_EQ(shown_calls, expected) << "request " << id;
    EXPECT_EQ(shown_not_called, expected_not_called) << "request " << id;
    // The branches not taken are among them, and the static tree has them.
    for (const char* skipped : {"exit_now", "rendezvous", "tick"}) {
      EXPECT_TRUE(shown_not_called.count({"handle_request", skipped})) << skipped << ", request " << id;
    }
    const bool forward = id % 4 == 1;
    EXPECT_EQ(shown_not_called.count({"handle_request", "forward"}), forward ? 0u : 1u) << "request " << id;
    EXPECT_EQ(shown_not_called.count({"handle_request", "recover"}), id % 5 == 3 ? 0u : 1u) << "request " << id;
    windows_with_forward += forward;
    windows_with_recover += id % 5 == 3;
  }
  // Five consecutive requests take each branch at least once.
  EXPECT_GE(windows_with_forward, 1u);
  EXPECT_EQ(windows_with_recover, 1u);
}

// A file name is whatever bytes it was given. One that is not UTF-8 used to
// make the --json error document throw from nlohmann::json::dump (exit 134).
TEST(TraceShowCli, AFileNameThatIsNotUtf8IsReportedInJson) {
  const XrefRun run = run_xref({"trace", "show", "/tmp/xref-absent-\xff.json", "--json"});
  EXPECT_EQ(run.exit_status, 11) << run.err;
  EXPECT_EQ(run.json()["error"]["code"], "file_error") << run.out;
  const std::string message = run.json()["error"]["message"];
  EXPECT_NE(message.find("xref-absent-\xef\xbf\xbd.json"), std::string::npos) << message;
}

TEST(TraceShowCli, BadInputIsRefusedWithExitStatus2) {
  const SavedTrace not_a_trace("not-a-trace", R"({"hello": "world"})");
  XrefRun run = run_xref({"trace", "show", not_a_trace.path});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("not an xref live_trace document"), std::string::npos) << run.err;

  const std::string window =
      R"({"window_id": 1, "tid": 5, "start_va": "0x1", "status": "complete", "events": []})";
  const SavedTrace future("future", R"({"schema_version": 2, "operation": "live_trace", "windows": [)" + window + "]}");
  run = run_xref({"trace", "show", future.path, "--json"});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_EQ(run.json()["operation"], "trace_show");
  EXPECT_EQ(run.json()["error"]["code"], "invalid_argument");
  EXPECT_NE(run.json()["error"]["message"].get<std::string>().find("unknown schema_version 2"), std::string::npos);

  const std::string line = R"({"type": "window", "window": )" + window + "}";
  const SavedTrace truncated("truncated", line + "\n" + line.substr(0, line.size() / 2));
  run = run_xref({"trace", "show", truncated.path});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("truncated JSONL line 2"), std::string::npos) << run.err;

  const SavedTrace one(
      "one-window",
      R"({"schema_version": 1, "operation": "live_trace", "process": {"exe_path": ")" XREF_SAMPLE_SERVICE R"("},)"
      R"( "windows": [)" + window + "]}");
  run = run_xref({"trace", "show", one.path, "--window", "7"});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("the trace has no window 7; its windows are 1"), std::string::npos) << run.err;

  // 0x1 starts no function of the sample service (the trace records no
  // identity, so the binary is used unchecked, with a warning).
  run = run_xref({"trace", "show", one.path, "--tree"});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("start VA 0x1 is no function of"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("used unchecked"), std::string::npos) << run.err;
}

TEST(TraceShowCli, AnotherBuildIsRefusedUntilTheRightBinaryIsGiven) {
  const std::string window =
      R"({"window_id": 1, "tid": 5, "start_va": "0x1", "status": "complete", "events": []})";
  const std::string sha = command_output("sha256sum " + std::string(XREF_SAMPLE_SERVICE)).substr(0, 64);
  const SavedTrace saved("identity", R"({"schema_version": 1, "operation": "live_trace", "process": {"exe_path": ")" +
                                         std::string(XREF_TRACE_TARGET) + R"(", "exe_sha256": ")" + sha +
                                         R"("}, "windows": [)" + window + "]}");
  XrefRun run = run_xref({"trace", "show", saved.path, "--tree"});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("is not the traced build"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("pass --bin"), std::string::npos) << run.err;
  // The right bytes pass the check and get as far as the window's start.
  run = run_xref({"trace", "show", saved.path, "--tree", "--bin", XREF_SAMPLE_SERVICE});
  EXPECT_EQ(run.exit_status, 2);
  EXPECT_NE(run.err.find("start VA 0x1 is no function"), std::string::npos) << run.err;

  run = run_xref({"trace", "show", saved.path, "--tree", "--bin", "/nonexistent/sample_service", "--json"});
  EXPECT_EQ(run.exit_status, 11);
  EXPECT_EQ(run.json()["error"]["code"], "file_error");
  EXPECT_NE(run.json()["error"]["hint"].get<std::string>().find("--bin"), std::string::npos);
}

}  // namespace
}  // namespace xref::test
