#include "render/session_text.h"

#include "render/duration.h"

#include <cstdio>

#include "trace_abi.h"
#include "hex.h"
#include "render/json_fields.h"

namespace xref::render {

std::string stop_reason_text(std::string_view stop_reason) {
  static constexpr std::pair<std::string_view, std::string_view> kReasons[] = {
      {"max_windows", "--max-windows reached"},
      {"max_events", "--max-events reached"},
      {"duration", "--duration-ms reached"},
      {"until_hits", "--until-hits reached"},
      {"interrupted", "interrupted"},
      {"stopped", "stopped"},
      {"target_exited", "the process exited"},
      {"target_changed", "the process ran another program (exec)"},
      {"output_closed", "the output's reader went away"},
      {"released", "a breakpoint took its probe site"},
  };
  for (const auto& [reason, text] : kReasons) {
    if (reason == stop_reason) return std::string(text);
  }
  return std::string(stop_reason.empty() ? "?" : stop_reason);
}

std::string trace_counts_text(const nlohmann::json& summary) {
  const std::optional<uint64_t> lost = count_at(summary, "lost");
  return plural(count_or_zero(summary, "windows"), "window") + " (" +
         std::to_string(count_or_zero(summary, "complete_windows")) + " complete), " +
         plural(count_or_zero(summary, "events"), "event") + ", " + (lost ? std::to_string(*lost) : "?") + " lost";
}

std::vector<std::string> trace_summary_lines(const nlohmann::json& summary) {
  std::vector<std::string> lines{trace_counts_text(summary) + "; stopped after " +
                                 std::to_string(count_or_zero(summary, "elapsed_ms")) + " ms: " +
                                 stop_reason_text(text_at(summary, "stop_reason"))};
  // Every window opened is printed above or counted here, with the reason.
  static constexpr std::pair<const char*, const char*> kReasons[] = {
      {"all_events_lost", "every event was lost (the ring buffer was full)"},
      {"output_stalled", "the output's reader fell behind; lost, not waited for"},
  };
  const nlohmann::json& not_shown = object_at(summary, "windows_not_shown");
  for (const auto& [reason, why] : kReasons) {
    if (const uint64_t count = count_or_zero(not_shown, reason); count > 0) {
      lines.push_back("not shown: " + plural(count, "window") + ": " + why);
    }
  }
  if (const uint64_t refused = count_or_zero(summary, "starts_refused"); refused > 0) {
    lines.push_back("not traced: " + plural(refused, "start call") + ": " + std::to_string(XREF_TRACE_MAX_THREADS) +
                    " threads already had a window open");
  }
  if (const uint64_t none = count_or_zero(summary, "windows_without_records"); none > 0) {
    lines.push_back("not shown: " + plural(none, "window") + ": every record was lost, the ring buffer being full");
  }
  return lines;
}

std::string session_end_line(uint64_t session, std::string_view command, std::string_view stop_reason,
                             const nlohmann::json& summary, const nlohmann::json& error) {
  std::string line = "xref: session " + std::to_string(session) + " ended (" + std::string(stop_reason) + ")";
  if (summary.is_object() && !summary.empty()) {
    if (command == "watch") {
      line += ": " + plural(count_or_zero(summary, "writes"), "write") + " (" +
              std::to_string(count_or_zero(summary, "recorded")) + " recorded), " +
              std::to_string(count_or_zero(summary, "unobserved_changes")) + " unobserved changes, lost " +
              std::to_string(count_or_zero(summary, "lost"));
    } else if (command == "profile") {
      line += ": " + plural(count_or_zero(summary, "samples"), "sample") + " in " +
              duration_text(count_or_zero(summary, "duration_ns")) + "; the capture is " + text_at(summary, "file");
    } else if (command == "probe") {
      line += ": " + plural(count_or_zero(summary, "hits"), "hit") + ", " +
              std::to_string(count_or_zero(summary, "passed")) + " passed, " +
              plural(count_or_zero(summary, "records_received"), "sample") + ", lost " +
              std::to_string(count_or_zero(summary, "lost_events"));
    } else {
      line += ": " + trace_counts_text(summary);
    }
  }
  if (const std::string message = text_at(error, "message"); !message.empty()) line += "; " + message;
  return line;
}

std::vector<std::string> release_lines(uint64_t session, const nlohmann::json& result,
                                       const std::vector<uint64_t>& addresses) {
  const std::string id = std::to_string(session);
  std::string reason = text_at(result, "reason");
  if (reason.empty()) reason = "a breakpoint";
  if (result.is_object() && result.value("ended", false)) {
    std::string where;
    for (uint64_t address : addresses) where += (where.empty() ? "" : ", ") + to_hex(address);
    return {"xref: session " + id + " ended (released): " + reason + " is at its probe site " + where +
            "; what it recorded is kept"};
  }
  std::vector<std::string> lines;
  for (const nlohmann::json& site : array_at(result, "released")) {
    if (!site.is_object()) continue;
    std::string what = text_at(site, "address");
    if (what.empty()) what = "?";
    if (site.value("ret_site", false)) what += "'s ret site";
    std::string live = text_at(site, "probe_live");
    if (site.value("store", false)) {
      // A watch's store site: what it writes from now on no record shows.
      lines.push_back("xref: session " + id + " no longer probes the store at " + what + " (" + (live.empty() ? "?" : live) +
                      ") since " + std::to_string(count_or_zero(site, "at_ms")) + " ms (" + reason +
                      " there): its writes show from now on only as unobserved changes");
      continue;
    }
    lines.push_back("xref: session " + id + " no longer observes " + what + " at " + (live.empty() ? "?" : live) +
                    " since " + std::to_string(count_or_zero(site, "at_ms")) + " ms (" + reason +
                    " there): " + plural(count_or_zero(site, "hits"), "hit") + " counted up to then");
  }
  if (!lines.empty() && result.value("hits_may_be_lost", false)) {
    lines.push_back("xref: warning: session " + id + "'s other sites were out for " +
                    std::to_string(count_or_zero(result, "gap_us")) +
                    " us while the process ran: hits then were not counted");
  }
  return lines;
}

std::vector<std::string> sessions_table(const std::vector<SessionRow>& rows) {
  if (rows.empty()) return {"xref: no sessions; start one with `xref trace`, `xref probe` or `xref watch`"};
  auto row = [](const std::string& session, const std::string& state, const std::string& pid,
                const std::string& backend, const std::string& windows, const std::string& events,
                const std::string& command) {
    char line[512];
    std::snprintf(line, sizeof line, "%-8s %-24s %-8s %-13s %8s %8s  ", session.c_str(), state.c_str(), pid.c_str(),
                  backend.c_str(), windows.c_str(), events.c_str());
    return line + command;
  };
  std::vector<std::string> lines{row("session", "state", "pid", "backend", "windows", "events", "command")};
  for (const SessionRow& session : rows) {
    // A probe session has no windows; its events are its hits.
    const bool probe = session.command == "probe";
    lines.push_back(row(std::to_string(session.session), session.state, std::to_string(session.pid), session.backend,
                        probe ? "-" : std::to_string(session.windows), std::to_string(session.events), session.words));
  }
  return lines;
}

}  // namespace xref::render
