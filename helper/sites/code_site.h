// A live code address of the process, placed in the file that maps it: the
// module, the static VA and the function holding it. Debugger addresses (a
// breakpoint's locations, a stopped frame's pc) arrive live; probes are
// defined on files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "address_space.h"
#include "elf_image.h"
#include "process/target.h"
#include "result.h"

namespace xref {

struct CodeSite {
  const Module* module = nullptr;
  std::shared_ptr<const ElfImage> image;
  uint64_t live_va = 0;
  uint64_t static_va = 0;
  FunctionSymbol function;
  bool at_entry = false;  // the function's first instruction (or the nop after its endbr64)
};

// A live address of the process's code -> its module, static VA and the
// function holding it. `what` names it in errors ("--here: the frame's pc").
// JIT and anonymous code are refused: uprobes need a file.
Result<CodeSite> place_code_address(const Target& target, uint64_t live_va, const std::string& what);

}  // namespace xref
