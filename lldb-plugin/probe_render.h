// Text of a probe session (the `live_probe` document, docs/probe.md) named
// with the debugger's symbols: at a stop, what changed since the previous
// one (the helper's `changes`); for `xref show`, the whole result so far.
// The debugger is reached only through AddressSymbols, so this is tested
// without LLDB. The GDB front end prints the same text (gdb-python/xref/
// probe_render.py).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "window_render.h"

namespace xref::lldb_plugin {

// `addresses` are the session's start answer's (address, static_va, module,
// live, ...), in the order of the document's.
// At a stop: the header line, then per address its hits (+added), threads,
// the callers and group keys that grew, the samples that arrived.
std::vector<std::string> render_probe_changes(const nlohmann::json& changes, const nlohmann::json& addresses,
                                              uint64_t session, AddressSymbols& symbols);

// `xref show`: the document whole. `state` is "running" or "ended REASON".
std::vector<std::string> render_probe_document(const nlohmann::json& document, const nlohmann::json& addresses,
                                               uint64_t session, const std::string& state, AddressSymbols& symbols);

// "xref: session 2 ended (until_hits): 5 hits, 5 passed, 5 samples, lost 0"
std::string probe_end_line(uint64_t session, const std::string& stop_reason, const nlohmann::json& summary,
                           const nlohmann::json& error);

// After session.release of `addresses` (live): which site the session no
// longer observes, since when, why, with its counts; or that it ended.
// gdb-python/xref/release_text.py prints the same lines.
std::vector<std::string> render_release(uint64_t session, const nlohmann::json& result,
                                        const std::vector<uint64_t>& addresses);

}  // namespace xref::lldb_plugin
