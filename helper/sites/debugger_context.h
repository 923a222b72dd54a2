// What only a debugger front end knows about the process it has stopped:
// the selected frame (`--here`) and its breakpoints, whose locations no
// probe may swallow (docs/protocol.md, session.start context). Every command
// a debugger starts through `xref serve` receives it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xref {

// The selected thread and frame of a stopped debugger (`--here`).
struct HereFrame {
  uint32_t tid = 0;
  uint64_t pc = 0;   // live
  uint64_t cfa = 0;  // canonical frame address: the caller's sp after the return
  // The frame's rsp and rbp as the debugger unwound them, when it sent
  // them: the .eh_frame rule at pc recomputes the CFA from these.
  std::optional<uint64_t> sp;
  std::optional<uint64_t> bp;
};

struct DebuggerBreakpointLocation {
  std::string id;       // "1.1"
  uint64_t address = 0; // live
  bool enabled = true;
};

struct DebuggerBreakpoint {
  uint32_t id = 0;
  bool enabled = true;
  std::vector<DebuggerBreakpointLocation> locations;
};

// Empty when the request comes from the shell.
struct DebuggerContext {
  bool present = false;
  std::optional<HereFrame> here;
  std::vector<DebuggerBreakpoint> breakpoints;
};

}  // namespace xref
