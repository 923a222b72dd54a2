// Where a window starts when a debugger says so: the stopped frame of
// `--here`, or the locations of breakpoint N for `--start bp:N`; and the
// check that no probe lands on an enabled breakpoint location (a uprobe at
// the same address swallows the debugger's breakpoint).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "address_space.h"
#include "elf_image.h"
#include "result.h"
#include "target.h"
#include "trace_request.h"

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
