// The lines about a whole run: a trace's summary, a session's end, a
// release, the sessions table.
#include "render/session_text.h"

#include <gtest/gtest.h>

namespace xref::render {
namespace {

TEST(SessionText, TraceSummaryKeepsEveryFactOfTheOldLine) {
  const nlohmann::json summary = {{"windows", 3}, {"complete_windows", 2}, {"events", 40}, {"lost", 0},
                                  {"stop_reason", "max_windows"}, {"elapsed_ms", 35},
                                  {"windows_not_shown", {{"output_stalled", 1}}}, {"starts_refused", 2},
                                  {"windows_without_records", 1}};
  EXPECT_EQ(trace_summary_lines(summary),
            (std::vector<std::string>{
                "3 windows (2 complete), 40 events, 0 lost; stopped after 35 ms: --max-windows reached",
                "not shown: 1 window: the output's reader fell behind; lost, not waited for",
                "not traced: 2 start calls: 8192 threads already had a window open",
                "not shown: 1 window: every record was lost, the ring buffer being full",
            }));
  EXPECT_EQ(trace_summary_lines({{"windows", 1}, {"complete_windows", 1}, {"events", 18}, {"lost", 0},
                                 {"stop_reason", "interrupted"}, {"elapsed_ms", 900}}),
            (std::vector<std::string>{"1 window (1 complete), 18 events, 0 lost; stopped after 900 ms: interrupted"}));
}

TEST(SessionText, EndLinesOfTraceAndProbeSessions) {
  EXPECT_EQ(session_end_line(3, "trace", "max_windows",
                             {{"windows", 1}, {"complete_windows", 1}, {"events", 18}, {"lost", 0}}, nullptr),
            "xref: session 3 ended (max_windows): 1 window (1 complete), 18 events, 0 lost");
  EXPECT_EQ(session_end_line(4, "probe", "stopped",
                             {{"hits", 1}, {"passed", 1}, {"records_received", 2}, {"lost_events", 0}},
                             {{"message", "process 7 exited"}}),
            "xref: session 4 ended (stopped): 1 hit, 1 passed, 2 samples, lost 0; process 7 exited");
  EXPECT_EQ(session_end_line(5, "trace", "error", nlohmann::json::object(), nullptr), "xref: session 5 ended (error)");
}

TEST(SessionText, ReleaseLines) {
  EXPECT_EQ(release_lines(2, {{"ended", true}, {"reason", "breakpoint 4"}}, {0x5555555551c0, 0x5555555551d0}),
            (std::vector<std::string>{"xref: session 2 ended (released): breakpoint 4 is at its probe site "
                                      "0x5555555551c0, 0x5555555551d0; what it recorded is kept"}));
  const nlohmann::json result = {
      {"reason", "breakpoint 4"},
      {"released", {{{"address", "apply_fee"}, {"probe_live", "0x5555555551c0"}, {"at_ms", 120}, {"hits", 1}},
                    {{"address", "validate"}, {"ret_site", true}, {"probe_live", "0x5555555552c0"}, {"at_ms", 120},
                     {"hits", 30}}}},
      {"hits_may_be_lost", true},
      {"gap_us", 45}};
  EXPECT_EQ(release_lines(2, result, {}),
            (std::vector<std::string>{
                "xref: session 2 no longer observes apply_fee at 0x5555555551c0 since 120 ms (breakpoint 4 there): "
                "1 hit counted up to then",
                "xref: session 2 no longer observes validate's ret site at 0x5555555552c0 since 120 ms (breakpoint 4 "
                "there): 30 hits counted up to then",
                "xref: warning: session 2's other sites were out for 45 us while the process ran: hits then were not "
                "counted",
            }));
}

TEST(SessionText, SessionsTableShowsAProbesHits) {
  EXPECT_EQ(sessions_table({}),
            (std::vector<std::string>{"xref: no sessions; start one with `xref trace`, `xref probe` or `xref watch`"}));
  const std::vector<std::string> table = sessions_table({
      {1, "ended (max_windows)", 4242, "uprobe_multi", "trace", 2, 36, "trace --start handle_request"},
      {2, "running", 4242, "uprobe_multi", "probe", 0, 1820, "probe validate"},
  });
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], "session  state                    pid      backend        windows   events  command");
  EXPECT_EQ(table[1], "1        ended (max_windows)      4242     uprobe_multi         2       36  "
                      "trace --start handle_request");
  EXPECT_EQ(table[2], "2        running                  4242     uprobe_multi         -     1820  probe validate");
  EXPECT_EQ(stop_reason_text("duration"), "--duration-ms reached");
  EXPECT_EQ(stop_reason_text("something_new"), "something_new");
}

}  // namespace
}  // namespace xref::render
