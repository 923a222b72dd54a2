// `xref watch EXPR...` in LLDB: the helper's `prepare.evaluate` items
// evaluated in the selected frame (docs/protocol.md, "Debugger
// expressions"). Only what the debugger knows goes back: each expression's
// address and byte size (or LLDB's one-line error); the helper checks the
// ranges, labels them with the expression's text and writes every line.
#pragma once

#include <lldb/API/LLDB.h>

#include <nlohmann/json.hpp>

namespace xref::lldb_plugin {

// `items`: [{"index", "expression", "location", ...}]. The answer, one entry
// per item in order: {"index", "address": "0x..." | null, "size", "type",
// "error": null | "one line"}.
// - lvalue (`location` false): the value's load address and byte size;
//   an error when LLDB has no memory address for it;
// - `location` true: the value as an unsigned address (an array: where it
//   begins) and the pointee's (element's) byte size, 0 when it has none.
// The expression evaluator runs no code in the process (no JIT).
nlohmann::json evaluate_watch_expressions(lldb::SBTarget target, const nlohmann::json& items);

}  // namespace xref::lldb_plugin
