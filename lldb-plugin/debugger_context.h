// What the debugger knows, as the `context` of a request
// (docs/protocol.md): the process, the executable, the selected thread and
// frame for --here, and every breakpoint with its live locations.
#pragma once

#include <lldb/API/LLDB.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xref::lldb_plugin {

// The selected thread's selected frame.
struct HereFrame {
  uint64_t tid = 0;
  uint64_t pc = 0;
  uint64_t cfa = 0;
  uint64_t sp = 0;  // the frame's rsp and rbp (LLDB_INVALID_ADDRESS when unknown)
  uint64_t bp = 0;
};

// Null when the target has no live process.
std::optional<uint64_t> process_id(lldb::SBTarget target);

// The selected frame of the stopped process; nullopt with `error` set when
// there is none (sent whenever there is one: the helper uses it for --here).
std::optional<HereFrame> here_frame(lldb::SBTarget target, std::string& error);

// The debug registers LLDB itself holds in the process now: one per
// aligned 8-byte block of each enabled watchpoint, one per enabled location
// of an enabled hardware breakpoint.
uint64_t debug_registers_used(lldb::SBTarget target);

// {pid, executable, here?, breakpoints, debug_registers_used}.
nlohmann::json request_context(lldb::SBTarget target, const std::optional<HereFrame>& here);

}  // namespace xref::lldb_plugin
