// What to fetch at an indirect call to learn where it goes: the register it
// calls through, or the pointer it reads from memory ([rip + disp], [base +
// disp], a table [base + index*scale + disp]). Read at the call
// instruction, the value is the callee's live address.
#pragma once

#include <cstdint>
#include <optional>

#include "disassembly.h"
#include "fetch_spec.h"

namespace xref {

struct CallTargetFetch {
  std::optional<FetchItem> item;  // named "target"; nullopt when it cannot be read
  // The operand uses an index register: only BPF backends read that (the
  // kernel's fetch syntax has no index).
  bool indexed = false;
  // The operand has a form xref does not read (a warning's matter); a form
  // it reads whose register has no fetch name yields no item, silently.
  bool understood = true;
};

// `target` is the operand of the indirect call at `site_va`.
CallTargetFetch call_target_fetch(const BranchTarget& target, uint64_t site_va);

}  // namespace xref
