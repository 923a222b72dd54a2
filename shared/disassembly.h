// Instruction-level view of one function: exact instruction boundaries (a
// uprobe must sit on the first byte of an instruction, or it corrupts the
// target), the call sites with their return sites, the rets, and the jumps
// that leave the function. The tracer observes returns by probing rets and
// return sites rather than with uretprobes, so these lists must be complete;
// anything the linear sweep could not decode is reported, never guessed.
// Each instruction is Capstone's (x86_decoder.h), or Zydis's where Capstone
// 4 cannot decode it (AVX-512).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "elf_image.h"
#include "result.h"
#include "x86_decoder.h"

namespace xref {

struct Instruction {
  uint64_t address = 0;
  uint8_t size = 0;
  InstructionKind kind = InstructionKind::other;
  std::string text;  // Intel syntax as Capstone prints it: "call 0x1400" (Zydis's where Capstone cannot)

  uint64_t end() const { return address + size; }
};

struct CallSite {
  uint64_t va = 0;  // the call instruction
  uint8_t size = 0;
  // Where the callee returns to: the next instruction. A call to a noreturn
  // function can be the function's last instruction, so the return site may
  // lie outside it; return_in_function says whether it is a real instruction
  // of this function (safe to probe).
  uint64_t return_va = 0;
  bool return_in_function = false;
  BranchTarget target;
};

enum class ExitKind : uint8_t {
  candidate_tail,  // direct jump out of [start, end); no function list was consulted
  tail_call,       // direct jump to the start of another known function
  cold_part,       // direct jump to this function's own "<name>.cold" split-off part
  outside_jump,    // direct jump out of the function to an address that starts no known function
  indirect,        // indirect jump: a jump table or a tail call through a pointer; target unknown
};

const char* exit_kind_name(ExitKind kind);

// A jump that leaves the function (direct, target outside) or may leave it
// (every indirect jump).
struct ExitJump {
  uint64_t va = 0;
  uint8_t size = 0;
  bool conditional = false;  // a jcc: the function may also fall through
  ExitKind kind = ExitKind::candidate_tail;
  // indirect: the jump reads a switch's jump table (its targets are inside
  // the function), not a function pointer.
  bool jump_table = false;
  BranchTarget target;
};

struct ByteRange {
  uint64_t va = 0;
  uint64_t size = 0;

  uint64_t end() const { return va + size; }
  bool contains(uint64_t address) const { return address >= va && address - va < size; }
};

struct FunctionCode {
  uint64_t start = 0;
  uint64_t end = 0;  // one past the last byte
  std::vector<Instruction> instructions;  // sorted by address, non-overlapping
  std::vector<CallSite> calls;
  std::vector<uint64_t> rets;   // VAs of ret instructions
  std::vector<ExitJump> exits;
  std::vector<uint64_t> traps;  // VAs of ud2, hlt, int3
  // Bytes neither Capstone nor Zydis could decode. None of them is an
  // instruction start; the sweep resumes at the next byte that decodes, so
  // boundaries right after a gap are the decoders' best guess.
  std::vector<ByteRange> decode_gaps;
  // Direct branches whose target lies inside the function but not on an
  // instruction start: a sign that the sweep decoded data or overlapping code.
  std::vector<uint64_t> misaligned_branch_targets;
  // A 5-byte nop (0f 1f 44 00 00) at the function start or right after a
  // leading endbr64: kernels can turn a uprobe on it into a fast call.
  std::optional<uint64_t> entry_nop_va;
  bool entry_endbr64 = false;
  // The symbol had no size and the end was taken from the next function
  // start (or the end of the section); see disassemble(ElfImage, ...).
  bool end_inferred = false;

  // True when every byte decoded and no branch contradicts the boundaries:
  // only then are the lists above known to be exact.
  bool complete() const { return decode_gaps.empty() && misaligned_branch_targets.empty(); }
};

// Linear sweep over `bytes`, whose first byte is at `start_va`. Direct jumps
// out of the range come back as ExitKind::candidate_tail.
Result<FunctionCode> disassemble_function(std::span<const uint8_t> bytes, uint64_t start_va);

// The function's bytes from the image, with jumps out of it classified
// against the image's functions and direct targets named (PLT stubs as
// "name@plt"). A symbol without a size is bounded by the next function start
// and by the end of its executable section, whichever comes first, and
// end_inferred is set; with neither bound it is an elf_error.
Result<FunctionCode> disassemble(const ElfImage& image, const FunctionSymbol& function);

// Where the function's code ends: start + size, or for a symbol without a
// size the bound disassemble() infers (the next function start or the end of
// its executable section); elf_error when there is neither.
Result<uint64_t> function_code_end(const ElfImage& image, const FunctionSymbol& function);

// Whether `va` is the first byte of a decoded instruction.
bool is_instruction_start(const FunctionCode& code, uint64_t va);
// The instruction starting exactly at `va`, or nullptr.
const Instruction* instruction_at(const FunctionCode& code, uint64_t va);
// The instruction whose bytes include `va`, or nullptr (outside the function
// or in a decode gap).
const Instruction* instruction_containing(const FunctionCode& code, uint64_t va);
// The instruction at `va`, or not_an_instruction with a message such as
// "0x1235 is inside the 5-byte instruction at 0x1233 (call 0x1400)"; an
// address outside the function is invalid_argument.
Result<const Instruction*> check_instruction_start(const FunctionCode& code, uint64_t va);

}  // namespace xref
