// The lines about a run as a whole: a trace's summary, a session's end
// line, the release line of a session.release, and the sessions table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace xref::render {

// Why a run stopped, for people: "max_windows" -> "--max-windows reached".
std::string stop_reason_text(std::string_view stop_reason);

// A trace's counts: "1 window (1 complete), 18 events, 0 lost".
std::string trace_counts_text(const nlohmann::json& summary);
// The end of a CLI trace, from its summary (live_trace "summary"): the counts,
// why and when it stopped, then one line per kind of window not shown.
std::vector<std::string> trace_summary_lines(const nlohmann::json& summary);

// "xref: session 3 ended (max_windows): 1 window (1 complete), 18 events, lost 0",
// and the error's message after it. `command`: "trace" or "probe" (whose
// summary is the live_probe document's: hits, passed, samples, lost).
std::string session_end_line(uint64_t session, std::string_view command, std::string_view stop_reason,
                             const nlohmann::json& summary, const nlohmann::json& error);

// What a front end prints after session.release (docs/protocol.md): which
// session stopped observing which probe site, when and why. `addresses`:
// the live addresses released.
std::vector<std::string> release_lines(uint64_t session, const nlohmann::json& result,
                                       const std::vector<uint64_t>& addresses);

// One row of `xref sessions`.
struct SessionRow {
  uint64_t session = 0;
  std::string state;    // "running", "ended (max_windows)"
  uint64_t pid = 0;
  std::string backend;
  std::string command;  // "trace" or "probe"
  uint64_t windows = 0;  // trace sessions
  uint64_t events = 0;   // trace: events; probe: hits
  std::string words;    // the command as typed
};
// The table, or the line saying there is none.
std::vector<std::string> sessions_table(const std::vector<SessionRow>& rows);

}  // namespace xref::render
