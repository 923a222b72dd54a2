// Where a --here window starts: the CFA of the debugger's stopped frame,
// checked against the .eh_frame rule at its pc. (`--start bp:N` places its
// breakpoint's locations with sites/breakpoints.h.)
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

struct PlanState;

// --here stopped at a breakpoint whose location the plan probes (a
// function whose first instruction is a tail jump, stopped on that jump):
// that breakpoint goes into breakpoints_to_disable (planning/starts.cpp).
void hand_over_here_breakpoint(PlanState& state, const std::vector<uint64_t>& probed_live_vas);

// The CFA a --here window opens on. A debugger's unwinder can be wrong (at
// the first instruction of a function with a .cold part, LLDB once gave a
// heap address), and a wrong CFA makes a garbage window: when the front end
// also sent the frame's sp (and bp), the .eh_frame rule at the pc gives the
// CFA too, and wins a disagreement; without a rule, a CFA that is not just
// above sp on the same stack mapping is refused.
struct HereCfa {
  uint64_t cfa = 0;
  std::string warning;  // set when the debugger's CFA was overruled
};

// The stack a frame's sp lies in: [start, end).
struct StackRange {
  uint64_t start = 0;
  uint64_t end = 0;
};

// Pure: the debugger's CFA against the unwind rule's (when known) and the
// stack range of sp (when known).
Result<HereCfa> choose_here_cfa(const HereFrame& frame, std::optional<uint64_t> rule_cfa,
                                std::optional<StackRange> stack, const std::string& rule_text);

// The same with the rule read from `site`'s image and the stack from the
// process's mappings.
Result<HereCfa> here_cfa(const Target& target, const HereFrame& frame, const CodeSite& site);

}  // namespace xref
