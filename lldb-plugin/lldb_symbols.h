// Names live addresses with LLDB's own symbols and debug info, for the
// helper's `names` (docs/protocol.md): the helper's text then spells
// functions as LLDB does (demangled, with arguments for C++).
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <nlohmann/json.hpp>

namespace xref::lldb_plugin {

// {address, function, offset, file, line}, or {address, unknown: true}.
nlohmann::json name_of(lldb::SBTarget target, uint64_t live);

}  // namespace xref::lldb_plugin
