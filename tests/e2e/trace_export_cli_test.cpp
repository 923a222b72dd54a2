// xref trace export on a window captured from the live sample service: the
// Chrome slices are the window's calls, nested as its depths say.
#include <algorithm>
#include <fstream>

#include "sample_target.h"
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

}  // namespace
}  // namespace xref::test
