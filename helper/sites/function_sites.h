// Where a function's own probes go: its entry, and every way it leaves -
// its rets and the jumps that hand its frame to another function (tail
// jumps) - in its own code and in the split-off parts its compiler moved
// out of line (".cold", or in a stripped image an FDE range of its own).
// Returns are seen at the ret sites, found by disassembly: no uretprobes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "disassembly.h"
#include "elf_image.h"

namespace xref {

// After a leading endbr64, a 5-byte nop is the better entry probe: the
// kernel turns a uprobe there into a call (~10x cheaper than int3), and the
// stack pointer is the same as at the first byte. Else the first byte.
uint64_t entry_probe_va(const FunctionCode& code);

// Which functions are split-off parts of which (is_split_part in
// callee_tree.h), remembered: a planner asks again for every jump, and the
// answer may need a disassembly. Module indices are those of ProbeModules.
class SplitParts {
 public:
  bool is_split_part(uint32_t module_index, const ElfImage& image, const FunctionCode& caller, uint64_t target_va);

  // A function's code and that of its split-off parts reached by direct
  // jumps ([0] is `code`); a part that does not disassemble cleanly is left
  // out.
  std::vector<FunctionCode> code_parts(uint32_t module_index, const ElfImage& image, const FunctionCode& code);

 private:
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, bool> known_;
};

// `va` lies in one of the parts.
bool in_parts(const std::vector<FunctionCode>& parts, uint64_t va);

enum class FunctionExitKind : uint8_t {
  ret,                    // the function returns
  tail_jump,              // an unconditional direct jump to another function: the frame becomes the target's
  conditional_tail_jump,  // a jcc to another function: a probe on it fires whether or not it is taken
  pointer_tail_jump,      // an indirect jump that reads no jump table: a tail call through a pointer
  outside_jump,           // a direct jump out of the function to an address that starts no known function
};

struct FunctionExit {
  FunctionExitKind kind = FunctionExitKind::ret;
  uint64_t va = 0;         // the ret or jump instruction
  size_t part = 0;         // the index into the parts of the code holding it
  uint64_t target_va = 0;  // jumps but pointer_tail_jump: where to
  std::string operand;     // pointer_tail_jump: what it jumps through ("qword ptr [rax + 8]")
};

// Every exit of the function whose code_parts are `parts`: per part, its
// rets, then its jumps out in address order. Jumps that stay in the
// function (into its parts, through a switch's jump table) are not exits.
std::vector<FunctionExit> function_exits(SplitParts& split, uint32_t module_index, const ElfImage& image,
                                         const std::vector<FunctionCode>& parts);

}  // namespace xref
