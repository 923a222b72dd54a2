// Which instructions of a function execution can reach, by fallthrough and
// direct branches from its entry and from the addresses other code jumps or
// calls to. Bytes after a ret or jmp that nothing branches to are dead code
// or data the linear sweep read as instructions (OpenSSL's assembly keeps
// strings inside its functions): a uprobe there would write an int3 into
// bytes the program may read.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "x86_store.h"

namespace xref {

struct FlowStep {
  uint64_t va = 0;
  Flow flow = Flow::next;
  uint64_t target = 0;  // jump, conditional_jump
};

// reachable[i] for steps[i] (sorted by va, one per instruction, steps[0] the
// entry). `entries`: sorted VAs branched or called to from anywhere.
std::vector<bool> reachable_steps(std::span<const FlowStep> steps, std::span<const uint64_t> entries);

}  // namespace xref
