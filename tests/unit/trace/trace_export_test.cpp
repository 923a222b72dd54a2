// trace_file (reading saved traces) and trace_export (Chrome trace events)
// on small hand-written windows.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "trace/saved/export.h"
#include "trace/saved/file.h"

namespace xref {
namespace {

// f > g > h, h returns, g unwinds, then k is entered and never returns: the
// window is open_at_stop. A second window on another thread.
const char* kDocument = R"({
  "schema_version": 1, "operation": "live_trace", "process": {"pid": 42, "build_id": "ab"},
  "windows": [
    {"window_id": 1, "tid": 7, "start_timestamp_ns": 1000, "end_timestamp_ns": 20000, "status": "open_at_stop",
     "start_fetches": [{"name": "req", "type": "x64", "value": "0x99"}],
     "events": [
       {"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x10", "symbol": "f", "timestamp_ns": 1000,
        "fetches": [{"name": "req", "type": "x64", "value": "0x99"}]},
       {"seq": 1, "kind": "entry", "depth": 1, "target_va": "0x20", "symbol": "g", "timestamp_ns": 2000,
        "fetches": [{"name": "n", "type": "s32", "value": "0xfffffffe", "signed_value": -2}]},
       {"seq": 2, "kind": "entry", "depth": 2, "target_va": "0x30", "symbol": "h", "timestamp_ns": 3000, "fetches": []},
       {"seq": 3, "kind": "return", "depth": 2, "target_va": "0x30", "symbol": "h", "timestamp_ns": 4000,
        "fetches": [{"name": "ret", "type": "u64", "value": "0x7"}]},
       {"seq": 4, "kind": "unwound", "depth": 1, "target_va": "0x20", "symbol": "g", "timestamp_ns": 5000, "fetches": []},
       {"seq": 5, "kind": "entry", "depth": 1, "target_va": "0x40", "symbol": "k", "timestamp_ns": 6000, "fetches": []}
     ]},
    {"window_id": 2, "tid": 8, "start_timestamp_ns": 1500, "end_timestamp_ns": 2500, "status": "complete",
     "events": [
       {"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x10", "symbol": "f", "timestamp_ns": 1500, "fetches": []},
       {"seq": 1, "kind": "return", "depth": 0, "target_va": "0x10", "symbol": "f", "timestamp_ns": 2500, "fetches": []}
     ]}
  ]})";

std::map<std::string, nlohmann::json> slices_by_name(const nlohmann::json& trace) {
  std::map<std::string, nlohmann::json> slices;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["tid"] == 7) slices[event["name"]] = event;
  }
  return slices;
}

bool within(const nlohmann::json& child, const nlohmann::json& parent) {
  const double child_end = child["ts"].get<double>() + child["dur"].get<double>();
  const double parent_end = parent["ts"].get<double>() + parent["dur"].get<double>();
  return child["tid"] == parent["tid"] && child["ts"].get<double>() >= parent["ts"].get<double>() &&
         child_end <= parent_end;
}

TEST(TraceExport, SlicesNestWithinTheirParentsAndTheWindow) {
  auto file = parse_trace_file(kDocument);
  ASSERT_TRUE(file) << file.error().message;
  const auto slices = slices_by_name(chrome_trace(*file));
  ASSERT_EQ(slices.size(), 5u);  // window 1, f, g, h, k
  EXPECT_TRUE(within(slices.at("f"), slices.at("window 1")));
  EXPECT_TRUE(within(slices.at("g"), slices.at("f")));
  EXPECT_TRUE(within(slices.at("h"), slices.at("g")));
  EXPECT_TRUE(within(slices.at("k"), slices.at("f")));
  EXPECT_EQ(slices.at("h")["ts"], 3.0);
  EXPECT_EQ(slices.at("h")["dur"], 1.0);
  EXPECT_EQ(slices.at("window 1")["dur"], 19.0);
}

TEST(TraceExport, UnmatchedFramesSayWhyTheyEnded) {
  auto file = parse_trace_file(kDocument);
  ASSERT_TRUE(file);
  const auto slices = slices_by_name(chrome_trace(*file));
  EXPECT_FALSE(slices.at("h")["args"].contains("closed_by"));
  EXPECT_EQ(slices.at("g")["args"]["closed_by"], "unwound");
  EXPECT_EQ(slices.at("k")["args"]["closed_by"], "open_at_stop");
  EXPECT_EQ(slices.at("f")["args"]["closed_by"], "open_at_stop");
  EXPECT_EQ(slices.at("k")["ts"].get<double>() + slices.at("k")["dur"].get<double>(), 20.0);
}

TEST(TraceExport, ArgsCarryTheFetchedValues) {
  auto file = parse_trace_file(kDocument);
  ASSERT_TRUE(file);
  const auto slices = slices_by_name(chrome_trace(*file));
  EXPECT_EQ(slices.at("f")["args"]["req"], "0x99");
  EXPECT_EQ(slices.at("g")["args"]["n"], -2);
  EXPECT_EQ(slices.at("h")["args"]["return"]["ret"], "0x7");
  EXPECT_EQ(slices.at("window 1")["args"]["req"], "0x99");
}

TEST(TraceExport, OneThreadTrackPerTid) {
  auto file = parse_trace_file(kDocument);
  ASSERT_TRUE(file);
  std::map<uint32_t, int> thread_names;
  const nlohmann::json trace = chrome_trace(*file);
  for (const auto& event : trace["traceEvents"]) {
    EXPECT_EQ(event["pid"], 42);
    if (event["ph"] == "M" && event["name"] == "thread_name") thread_names[event["tid"]]++;
  }
  EXPECT_EQ(thread_names, (std::map<uint32_t, int>{{7, 1}, {8, 1}}));
}

// Written window by window, the timeline is the document chrome_trace makes.
TEST(TraceExport, TheStreamedTimelineIsTheDocument) {
  auto file = parse_trace_file(kDocument);
  ASSERT_TRUE(file);
  auto trace = SavedTrace::parse(kDocument);
  ASSERT_TRUE(trace) << trace.error().message;
  std::ostringstream streamed;
  ASSERT_TRUE(write_chrome_trace(*trace, streamed));
  EXPECT_EQ(streamed.str(), chrome_trace(*file).dump() + "\n");
}

TEST(TraceFile, ReadsJsonLines) {
  const std::string text =
      R"({"type": "window", "window": {"window_id": 3, "tid": 9, "events": []}})" "\n"
      R"({"type": "summary", "backend": "tracefs", "process": {"pid": 5}, "summary": {}})" "\n";
  auto file = parse_trace_file(text);
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_EQ(file->windows.size(), 1u);
  EXPECT_EQ(file->windows[0]["window_id"], 3);
  EXPECT_EQ(file->process["pid"], 5);
}

// The header line carries the process identity at attach: an interrupted
// stream (no summary) still has it; a summary, when there, wins.
TEST(TraceFile, ReadsTheJsonLinesHeader) {
  const std::string header =
      R"({"type": "header", "schema_version": 1, "operation": "live_trace", "backend": "uprobe_multi",)"
      R"( "process": {"pid": 5, "build_id": "ab"}})" "\n";
  const std::string window = R"({"type": "window", "window": {"window_id": 3, "tid": 9, "events": []}})" "\n";
  auto interrupted = parse_trace_file(header + window);
  ASSERT_TRUE(interrupted) << interrupted.error().message;
  EXPECT_EQ(interrupted->process["build_id"], "ab");
  auto whole = parse_trace_file(header + window +
                                R"({"type": "summary", "process": {"pid": 5, "build_id": "ab", "pid_alive_after": true}})");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->process["pid_alive_after"], true);
  auto future = parse_trace_file(R"({"type": "header", "schema_version": 2, "process": {}})" "\n" + window);
  ASSERT_FALSE(future);
  EXPECT_EQ(future.error().message.rfind("unknown schema_version 2", 0), 0u);
}

std::string error_of(const std::string& text) {
  auto file = parse_trace_file(text);
  EXPECT_FALSE(file);
  if (file) return "";
  EXPECT_EQ(file.error().code, ErrorCode::invalid_argument);
  return file.error().message;
}

TEST(TraceFile, RefusesBadInputClearly) {
  EXPECT_EQ(error_of("hello"), "not JSON");
  EXPECT_EQ(error_of(R"({"operation": "live_maps", "schema_version": 1})"), "not an xref live_trace document");
  EXPECT_EQ(error_of(R"({"operation": "live_trace", "schema_version": 2, "windows": []})").rfind(
                "unknown schema_version 2", 0),
            0u);
  EXPECT_EQ(error_of(R"({"type": "window", "window": {"tid": 1}})" "\n" R"({"type": "sum)"),
            "truncated JSONL line 2");
  EXPECT_EQ(error_of(R"({"operation": "live_trace", "schema_version": 1, "windows": []})"),
            "the trace has no windows");
  EXPECT_EQ(load_trace_file("/nonexistent/trace.json").error().code, ErrorCode::file_error);
}

}  // namespace
}  // namespace xref
