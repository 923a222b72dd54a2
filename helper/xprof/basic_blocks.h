// A function's basic blocks, from its instructions as Capstone decodes them
// (disassembly.h): a block starts at the function's start, at the target of
// a direct jump inside the function, and after every jump, ret or trap.
// Calls do not end a block (perf's and most profilers' convention: the
// callee returns there).
#pragma once

#include <cstdint>
#include <vector>

#include "disassembly.h"

namespace xref {

struct BasicBlock {
  uint64_t start = 0;
  uint64_t end = 0;  // one past its last instruction
  uint32_t instructions = 0;
};

// Sorted by start, covering every decoded instruction.
std::vector<BasicBlock> basic_blocks(const ElfImage& image, const FunctionCode& code);

// The block holding `address`, or nullptr.
const BasicBlock* block_containing(const std::vector<BasicBlock>& blocks, uint64_t address);

}  // namespace xref
