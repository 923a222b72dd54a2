// Where a window starts when a debugger says so: the stopped frame of
// `--here`, or the locations of breakpoint N for `--start bp:N`; and the
// check that no probe lands on an enabled breakpoint location (a uprobe at
// the same address swallows the debugger's breakpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "address_space.h"
#include "elf_image.h"
#include "process/target.h"
#include "result.h"
#include "trace/request.h"

namespace xref {

// A live code address, placed: its module, static VA and function.
struct CodeSite {
  const Module* module = nullptr;
  std::shared_ptr<const ElfImage> image;
  uint64_t live_va = 0;
  uint64_t static_va = 0;
  FunctionSymbol function;
  bool at_entry = false;  // the function's first instruction (or the nop after its endbr64)
};

// A live address of the process's code -> its module, static VA and the
// function holding it. `what` names it in errors ("--here pc").
Result<CodeSite> place_code_address(const Target& target, uint64_t live_va, const std::string& what);

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

// "bp:N" -> N; nullopt when `text` is not a breakpoint reference.
std::optional<uint32_t> breakpoint_reference(const std::string& text);

// The locations of debugger breakpoint `id`, placed.
Result<std::vector<CodeSite>> breakpoint_sites(const Target& target, const DebuggerContext& debugger, uint32_t id);

// A probe's live address and what it is, for collision messages.
struct ProbeAddress {
  uint64_t live_va = 0;
  std::string label;  // "entry of validate", "call site in handle_request+0x2a"
};

// Fails with breakpoint_collision when a probe sits on an enabled location
// of an enabled breakpoint other than those in `exempt`.
Result<void> check_breakpoint_collisions(const std::vector<ProbeAddress>& probes, const DebuggerContext& debugger,
                                         const std::vector<uint32_t>& exempt);

}  // namespace xref
