// The text of what a display holds, through the helper's renderer
// (render/): the one place serve turns windows, probe results and session
// ends into lines.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/names.h"
#include "serve/stop_clock.h"

namespace xref::serve {

struct DisplayedSessionInfo {
  uint64_t id = 0;
  std::string command;  // trace or probe
  std::string words;
  nlohmann::json start;  // the start answer
  bool addresses = false;  // the words said --addresses
};

// `breakpoints`: live address -> the debugger's breakpoints there ("[bp 1]").
std::vector<std::string> window_text(const DisplayedSessionInfo& session, const nlohmann::json& window,
                                     render::Names& names, const std::vector<StopClock::Interval>& stops,
                                     const std::map<uint64_t, std::vector<int>>& breakpoints);
std::vector<std::string> probe_changes_text(const DisplayedSessionInfo& session, const nlohmann::json& changes,
                                            render::Names& names);
std::vector<std::string> probe_document_text(const DisplayedSessionInfo& session, const nlohmann::json& document,
                                             const std::string& state, render::Names& names);
// The line(s) that say how a session ended (its session_ended event).
std::vector<std::string> end_text(const DisplayedSessionInfo& session, const nlohmann::json& ended);

// Live code addresses the text of a window / of a probe's changes or document names.
std::vector<uint64_t> window_live_addresses(const nlohmann::json& window);
std::vector<uint64_t> probe_live_addresses(const nlohmann::json& changes_or_document, const nlohmann::json& start);
// The writers' live pcs of a watch's records.
std::vector<uint64_t> watch_live_addresses(const nlohmann::json& records);

// session.release's answer as the lines that say which session stopped
// observing which site, since when and why.
std::vector<std::string> release_text(uint64_t session, const nlohmann::json& result,
                                      const std::vector<uint64_t>& addresses);

}  // namespace xref::serve
