// render/watch_text.h: what --fetch, --regs, --callers, --mark-file and
// --filter add to a watch's text, from its live_watch document.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/watch_text.h"

namespace xref::render {
namespace {

nlohmann::json document() {
  const nlohmann::json write = {
      {"type", "write"}, {"seq", 1}, {"tid", 42}, {"time_ns", 2000}, {"range", 0}, {"generation", 0},
      {"address", "0x1000"}, {"offset", 0}, {"length", 1}, {"old", "0x0"}, {"new", "0x80"},
      {"old_bytes", "00"}, {"new_bytes", "80"}, {"cut", false}, {"new_read_after", true},
      {"writer", {{"pc", "0x55"}, {"static_va", "0x25b3"}, {"module", "t"}, {"function", "flag_exchange"},
                  {"offset", 3}, {"text", "xchg byte ptr [rip + 0x3dc7], bl"}, {"by_contract", false},
                  {"caller", nullptr}}},
      {"fetches", {{{"name", "arg"}, {"type", "u8"}, {"value", "0x80"}}}},
      {"regs", {{"rip", "0x55"}, {"rsp", "0x7ff0"}}}, {"regs_at", "before_store"},
      {"stack", {{{"kind", "pc"}, {"live", "0x55"}, {"function", "flag_exchange+0x3"}},
                 {{"kind", "return"}, {"live", "0x66"}, {"function", "writer_main+0x192"}}}},
      {"mark", "phase 2 begins"}, {"mark_match", "phase 2"}};
  const nlohmann::json range = {{"index", 0}, {"spelled", "g_flag"}, {"address", "0x1000"}, {"length", 1},
                                {"module", nullptr}, {"symbol", nullptr}, {"on_stack", false}, {"is_slot", false},
                                {"follow_slot", nullptr}, {"parked", false}};
  const nlohmann::json summary = {{"range", 0}, {"writes", 12}, {"recorded", 1}, {"unchanged", 0}, {"passed", 6},
                                  {"unfiltered", 2}, {"writers", nlohmann::json::array()}, {"records_lost", 0},
                                  {"rearms", 0}, {"unobserved_changes", 0}};
  const nlohmann::json callers = {
      {"method", "frame_pointers"}, {"distinct", 1}, {"unread", 0},
      {"stacks", {{{"writes", 6}, {"writer", {{"function", "flag_exchange"}, {"offset", 3}}},
                   {"frames", {{{"function", "flag_exchange+0x3"}, {"module", "t"}, {"live", "0x55"}},
                               {{"function", "writer_main+0x192"}, {"live", "0x66"}}}}}}}};
  return {{"process", {{"pid", 7}}},
          {"warnings", nlohmann::json::array()},
          {"result",
           {{"backend", "stores"}, {"backend_reason", "asked for"}, {"ranges", {range}}, {"sites", nullptr},
            {"stream", {write}}, {"summary", {summary}}, {"callers", callers}, {"filter", "value > old"},
            {"armed_ns", 1000}, {"complete", true}, {"lost", 0}, {"stop_reason", nullptr}}}};
}

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line == text; });
}

TEST(WatchText, AWriteShowsItsFetchesRegistersMarkAndStack) {
  nlohmann::json doc = document();
  doc["result"]["backend"] = "hw";  // no stores header lines
  const std::vector<std::string> lines = watch_lines(doc);
  const auto write = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("flag_exchange+0x3  (t)") != std::string::npos;
  });
  ASSERT_NE(write, lines.end());
  const std::string tail =
      "[new read after]  arg=0x80  rip=0x55 rsp=0x7ff0 (before_store; registers: --json)  mark \"phase 2\"";
  EXPECT_NE(write->find(tail), std::string::npos)
      << *write;
  ASSERT_NE(write + 1, lines.end());
  EXPECT_EQ(*(write + 1), "                  ← writer_main+0x192");
}

TEST(WatchText, TheSummaryCountsWhatPassedTheFilterAndTheCallersFollow) {
  nlohmann::json doc = document();
  doc["result"]["backend"] = "hw";
  const std::vector<std::string> lines = watch_lines(doc);
  EXPECT_TRUE(has_line(
      lines, "  [0] g_flag: 12 writes (1 recorded, 6 passed the filter, 2 unfiltered (a value unread)); lost 0"));
  EXPECT_TRUE(has_line(lines, "callers (frame_pointers, 1 distinct stacks, 0 unread):"));
  EXPECT_TRUE(has_line(lines, "  6 writes  by flag_exchange+0x3"));
  EXPECT_TRUE(has_line(lines, "      flag_exchange+0x3 (t)"));
  EXPECT_TRUE(has_line(lines, "      writer_main+0x192"));
}

}  // namespace
}  // namespace xref::render
