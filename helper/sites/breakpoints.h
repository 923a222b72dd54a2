// A debugger's breakpoints as probe commands meet them: `bp:N` names the
// locations of breakpoint N (where a window opens, where a probe counts),
// and no probe may sit on an enabled location of another breakpoint: a
// uprobe at the same address swallows the debugger's breakpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sites/code_site.h"
#include "sites/debugger_context.h"
#include "process/target.h"
#include "result.h"

namespace xref {

// "bp:N" -> N; nullopt when `text` is not a breakpoint reference.
std::optional<uint32_t> breakpoint_reference(const std::string& text);

// The locations of debugger breakpoint `id`, placed. `what` is the option
// that named it ("--start"): errors read "--start bp:3: ...".
Result<std::vector<CodeSite>> breakpoint_sites(const Target& target, const DebuggerContext& debugger, uint32_t id,
                                               const std::string& what);

// A probe's live address and what it is, for collision messages.
struct LiveProbe {
  uint64_t live_va = 0;
  std::string label;  // "entry of validate", "call site in handle_request+0x2a"
};

// Fails with breakpoint_collision when a probe sits on an enabled location
// of an enabled breakpoint other than those in `exempt`.
Result<void> check_breakpoint_collisions(const std::vector<LiveProbe>& probes, const DebuggerContext& debugger,
                                         const std::vector<uint32_t>& exempt);

}  // namespace xref
