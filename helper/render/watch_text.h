// A watch's result as text (docs/watch.md, "Output"), from its live_watch
// document: the header (backend and why, the ranges, the sites), one line
// per write, unobserved change and re-arm in the order seen, a summary per
// range, and whether the result is complete.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xref::render {

std::vector<std::string> watch_lines(const nlohmann::json& document);

// One record's line (a --jsonl record, or a line of the stream); times
// are shown from `armed_ns` (the result's armed_ns).
std::string watch_record_line(const nlohmann::json& record, uint64_t armed_ns);

}  // namespace xref::render
