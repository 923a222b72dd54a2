// What changed in a probe's result between two debugger stops: per
// address the hits added, threads, callers and group keys that are new or
// grew, and the samples that arrived; for the front ends to print at a stop
// with the debugger's own symbols.
#pragma once

#include <nlohmann/json.hpp>

namespace xref {

// `before` and `now` are live_probe documents of one probe (`before` null:
// nothing shown yet). The result (docs/protocol.md, probe_update.changes):
// {"elapsed_ms", "since_ms", "hits_added", "lost_events", "lost_added",
//  "addresses": [{"address", "location", "function", "module", "static_va",
//  "hits", "hits_added", "passed", "passed_added", "threads", "new_threads",
//  "callers": [caller + "hits_added", "new"], "groups": {"by",
//  "values": [{"key", "hits", "hits_added", "new"}]}, "stacks"?: {"method",
//  "keys", "complete", "stacks": [stack + "hits_added", "new"]}, "samples",
//  "records_lost_added"}]}. Callers and group keys that did not grow are
// left out; so are samples shown before. With --stop-when, "stop" is the
// stopping hit (the document's stop_when.stop) at the first change that
// has it.
nlohmann::json probe_changes(const nlohmann::json& before, const nlohmann::json& now);

}  // namespace xref
