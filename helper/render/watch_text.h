// A watch's result as text (docs/watch.md, "Output"), from its live_watch
// document: the header (backend and why, the ranges, the sites), one line
// per write, unobserved change and re-arm in the order seen, a summary per
// range, and whether the result is complete.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/names.h"

namespace xref::render {

std::vector<std::string> watch_lines(const nlohmann::json& document);

// One record's line (a --jsonl record, or a line of the stream); times
// are shown from `armed_ns` (the result's armed_ns). With `names` (a
// debugger's), the writer is named as the debugger names its pc, with its
// source line.
std::string watch_record_line(const nlohmann::json& record, uint64_t armed_ns, Names* names = nullptr);

// The summary per range and whether the result is complete: the end of
// watch_lines, which a debugger prints when the session ends.
std::vector<std::string> watch_summary_lines(const nlohmann::json& document);

// What --stop-when did, at the stop it made: which write (its record, when
// known) and which thread.
std::vector<std::string> watch_stop_lines(uint64_t session, const nlohmann::json& stop, const nlohmann::json& record,
                                          uint64_t armed_ns, Names& names);

// The writers' live pcs the records name (for a debugger to name).
std::vector<CodeAddress> watch_addresses(const nlohmann::json& records);

}  // namespace xref::render
