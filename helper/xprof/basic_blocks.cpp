#include "xprof/basic_blocks.h"

#include <algorithm>
#include <set>

#include "x86_decoder.h"

namespace xref {

std::vector<BasicBlock> basic_blocks(const ElfImage& image, const FunctionCode& code) {
  std::set<uint64_t> leaders{code.start};
  const CapstoneDecoder decoder;
  for (const Instruction& instruction : code.instructions) {
    const bool branch =
        instruction.kind == InstructionKind::jump || instruction.kind == InstructionKind::conditional_jump;
    if (branch || instruction.kind == InstructionKind::ret || instruction.kind == InstructionKind::trap) {
      leaders.insert(instruction.end());
    }
    if (!branch) continue;
    // The target is not kept in Instruction; decode the branch again.
    const auto bytes = image.bytes_at(instruction.address, instruction.size);
    if (!bytes) continue;
    const auto decoded = decoder.decode(*bytes, instruction.address);
    if (decoded && !decoded->target.indirect() && decoded->target.va >= code.start && decoded->target.va < code.end) {
      leaders.insert(decoded->target.va);
    }
  }
  std::vector<BasicBlock> blocks;
  for (const Instruction& instruction : code.instructions) {
    if (blocks.empty() || leaders.count(instruction.address) != 0 || blocks.back().end != instruction.address) {
      blocks.push_back({instruction.address, instruction.address, 0});
    }
    blocks.back().end = instruction.end();
    ++blocks.back().instructions;
  }
  return blocks;
}

const BasicBlock* block_containing(const std::vector<BasicBlock>& blocks, uint64_t address) {
  auto after = std::upper_bound(blocks.begin(), blocks.end(), address,
                                [](uint64_t va, const BasicBlock& block) { return va < block.start; });
  if (after == blocks.begin()) return nullptr;
  --after;
  return address < after->end ? &*after : nullptr;
}

}  // namespace xref
