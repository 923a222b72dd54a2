#include "disassembly.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "hex.h"

namespace xref {

const char* exit_kind_name(ExitKind kind) {
  switch (kind) {
    case ExitKind::candidate_tail: return "candidate_tail";
    case ExitKind::tail_call: return "tail_call";
    case ExitKind::cold_part: return "cold_part";
    case ExitKind::outside_jump: return "outside_jump";
    case ExitKind::indirect: return "indirect";
  }
  return "unknown";
}

namespace {

// A switch's jump table, as gcc and clang emit it: the jump indexes a table
// itself (`jmp qword ptr [8*rax + 0x4020]`), or jumps to a register that was
// just loaded from a table of offsets (`movsxd rax, dword ptr [rdx + 4*rax]`
// ... `add rax, rdx` ... `jmp rax`, with a `notrack` prefix under CET). A
// tail call through a function pointer has neither shape.
bool looks_like_jump_table(const std::vector<Instruction>& before, const Instruction& jump) {
  auto indexed = [](const std::string& text) {
    return text.find('[') != std::string::npos && text.find('*') != std::string::npos;
  };
  if (indexed(jump.text) || jump.text.rfind("notrack", 0) == 0) return true;
  const size_t look_back = std::min<size_t>(before.size(), 4);
  for (size_t i = before.size() - look_back; i < before.size(); ++i) {
    const std::string& text = before[i].text;
    if ((text.rfind("movsxd", 0) == 0 || text.rfind("mov ", 0) == 0) && indexed(text)) return true;
  }
  return false;
}

constexpr std::array<uint8_t, 4> kEndbr64 = {0xf3, 0x0f, 0x1e, 0xfa};
constexpr std::array<uint8_t, 5> kNop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};

bool has_bytes(std::span<const uint8_t> bytes, uint64_t offset, std::span<const uint8_t> pattern) {
  return offset <= bytes.size() && bytes.size() - offset >= pattern.size() &&
         std::memcmp(bytes.data() + offset, pattern.data(), pattern.size()) == 0;
}

void add_gap_byte(std::vector<ByteRange>& gaps, uint64_t va) {
  if (!gaps.empty() && gaps.back().end() == va) {
    ++gaps.back().size;
  } else {
    gaps.push_back(ByteRange{va, 1});
  }
}

// The entry shapes the kernel cares about: [endbr64] nop5.
void find_entry_nop(std::span<const uint8_t> bytes, FunctionCode& code) {
  if (code.instructions.empty() || code.instructions.front().address != code.start) return;
  uint64_t offset = 0;
  size_t index = 0;
  if (has_bytes(bytes, 0, kEndbr64) && code.instructions[0].size == kEndbr64.size()) {
    code.entry_endbr64 = true;
    offset = kEndbr64.size();
    index = 1;
  }
  if (index < code.instructions.size() && code.instructions[index].address == code.start + offset &&
      code.instructions[index].size == kNop5.size() && has_bytes(bytes, offset, kNop5)) {
    code.entry_nop_va = code.start + offset;
  }
}

std::string describe(const Instruction& instruction) {
  return std::to_string(instruction.size) + "-byte instruction at " + to_hex(instruction.address) + " (" +
         instruction.text + ")";
}

}  // namespace

Result<FunctionCode> disassemble_function(std::span<const uint8_t> bytes, uint64_t start_va) {
  if (bytes.empty()) {
    return make_error(ErrorCode::invalid_argument, "no bytes to disassemble at " + to_hex(start_va));
  }
  if (bytes.size() > UINT64_MAX - start_va) {
    return make_error(ErrorCode::invalid_argument, "the range at " + to_hex(start_va) + " wraps around");
  }
  // Capstone first: its text is what call_target_fetch and the jump-table
  // check read. Zydis where Capstone 4 cannot decode (AVX-512, mask registers).
  const CapstoneDecoder capstone;
  if (!capstone.failure().empty()) return make_error(ErrorCode::internal, capstone.failure());
  const ZydisX86Decoder zydis;
  if (!zydis.failure().empty()) return make_error(ErrorCode::internal, zydis.failure());

  FunctionCode code;
  code.start = start_va;
  code.end = start_va + bytes.size();
  std::vector<uint64_t> inner_targets;  // direct branch targets inside the range, checked after the sweep

  size_t offset = 0;
  while (offset < bytes.size()) {
    const uint64_t address = start_va + offset;
    const auto rest = bytes.subspan(offset);
    std::optional<DecodedInstruction> decoded = capstone.decode(rest, address);
    if (!decoded) decoded = zydis.decode(rest, address);
    if (!decoded) {
      // Not an instruction start: record the byte and resynchronise on the next.
      add_gap_byte(code.decode_gaps, address);
      ++offset;
      continue;
    }
    offset += decoded->size;
    Instruction instruction;
    instruction.address = address;
    instruction.size = decoded->size;
    instruction.kind = decoded->kind;
    instruction.text = std::move(decoded->text);

    switch (instruction.kind) {
      case InstructionKind::call: {
        CallSite call;
        call.va = instruction.address;
        call.size = instruction.size;
        call.return_va = instruction.end();
        call.target = std::move(decoded->target);
        if (!call.target.indirect() && call.target.va >= code.start && call.target.va < code.end) {
          inner_targets.push_back(call.target.va);
        }
        code.calls.push_back(std::move(call));
        break;
      }
      case InstructionKind::jump:
      case InstructionKind::conditional_jump: {
        BranchTarget target = std::move(decoded->target);
        const bool inside = !target.indirect() && target.va >= code.start && target.va < code.end;
        if (inside) {
          inner_targets.push_back(target.va);
          break;
        }
        ExitJump exit;
        exit.va = instruction.address;
        exit.size = instruction.size;
        exit.conditional = instruction.kind == InstructionKind::conditional_jump;
        exit.kind = target.indirect() ? ExitKind::indirect : ExitKind::candidate_tail;
        exit.jump_table = exit.kind == ExitKind::indirect && looks_like_jump_table(code.instructions, instruction);
        exit.target = std::move(target);
        code.exits.push_back(std::move(exit));
        break;
      }
      case InstructionKind::ret: code.rets.push_back(instruction.address); break;
      case InstructionKind::trap: code.traps.push_back(instruction.address); break;
      default: break;
    }
    code.instructions.push_back(std::move(instruction));
  }

  for (auto& call : code.calls) call.return_in_function = is_instruction_start(code, call.return_va);
  for (uint64_t target : inner_targets) {
    if (!is_instruction_start(code, target)) code.misaligned_branch_targets.push_back(target);
  }
  std::sort(code.misaligned_branch_targets.begin(), code.misaligned_branch_targets.end());
  code.misaligned_branch_targets.erase(
      std::unique(code.misaligned_branch_targets.begin(), code.misaligned_branch_targets.end()),
      code.misaligned_branch_targets.end());
  find_entry_nop(bytes, code);
  return code;
}

namespace {

constexpr uint64_t kShfExecinstr = 0x4;  // SHF_EXECINSTR
constexpr uint32_t kShtNobits = 8;      // SHT_NOBITS

// The end of a size-0 symbol: the next function start or the end of its
// executable section, whichever is first. Padding before the next function
// may be included; it decodes as nops and is harmless to list.
Result<uint64_t> inferred_end(const ElfImage& image, const FunctionSymbol& function) {
  std::optional<uint64_t> end = image.next_function_start(function.start);
  for (const auto& section : image.sections()) {
    if ((section.flags & kShfExecinstr) == 0 || section.type == kShtNobits) continue;
    if (function.start >= section.addr && function.start - section.addr < section.size) {
      const uint64_t section_end = section.addr + section.size;
      end = end ? std::min(*end, section_end) : section_end;
      break;
    }
  }
  if (!end) {
    return make_error(ErrorCode::elf_error,
                      function.name + " at " + to_hex(function.start) +
                          " has no size, and no following function or section bounds it",
                      "the image lacks the information to find where this function ends");
  }
  return *end;
}

bool is_cold_part_of(const FunctionSymbol& function, const FunctionSymbol& target) {
  // gcc names the split-off unlikely part "<name>.cold" or "<name>.cold.N".
  const std::string prefix = function.name + ".cold";
  return target.name.size() >= prefix.size() && target.name.compare(0, prefix.size(), prefix) == 0 &&
         (target.name.size() == prefix.size() || target.name[prefix.size()] == '.');
}

}  // namespace

Result<uint64_t> function_code_end(const ElfImage& image, const FunctionSymbol& function) {
  if (function.size != 0) return function.end();
  return inferred_end(image, function);
}

Result<FunctionCode> disassemble(const ElfImage& image, const FunctionSymbol& function) {
  const bool inferred = function.size == 0;
  auto bound = function_code_end(image, function);
  if (!bound) return bound.error();
  const uint64_t end = *bound;
  const auto bytes = image.bytes_at(function.start, end - function.start);
  if (!bytes) {
    return make_error(ErrorCode::address_unmapped,
                      function.name + " [" + to_hex(function.start) + ", " + to_hex(end) +
                          ") is not file-backed in one PT_LOAD of " + image.path());
  }
  auto code = disassemble_function(*bytes, function.start);
  if (!code) return code;
  code->end_inferred = inferred;

  for (auto& call : code->calls) {
    if (call.target.indirect()) continue;
    if (const FunctionSymbol* callee = image.function_at(call.target.va)) call.target.name = callee->name;
  }
  for (auto& exit : code->exits) {
    if (exit.kind != ExitKind::candidate_tail) continue;
    const FunctionSymbol* target = image.function_at(exit.target.va);
    if (target == nullptr) {
      exit.kind = ExitKind::outside_jump;
      continue;
    }
    exit.target.name = target->name;
    exit.kind = is_cold_part_of(function, *target) ? ExitKind::cold_part : ExitKind::tail_call;
  }
  return code;
}

bool is_instruction_start(const FunctionCode& code, uint64_t va) { return instruction_at(code, va) != nullptr; }

const Instruction* instruction_at(const FunctionCode& code, uint64_t va) {
  auto it = std::lower_bound(code.instructions.begin(), code.instructions.end(), va,
                             [](const Instruction& i, uint64_t value) { return i.address < value; });
  return it != code.instructions.end() && it->address == va ? &*it : nullptr;
}

const Instruction* instruction_containing(const FunctionCode& code, uint64_t va) {
  auto after = std::upper_bound(code.instructions.begin(), code.instructions.end(), va,
                                [](uint64_t value, const Instruction& i) { return value < i.address; });
  if (after == code.instructions.begin()) return nullptr;
  const Instruction& candidate = *std::prev(after);
  return va < candidate.end() ? &candidate : nullptr;
}

Result<const Instruction*> check_instruction_start(const FunctionCode& code, uint64_t va) {
  if (va < code.start || va >= code.end) {
    return make_error(ErrorCode::invalid_argument,
                      to_hex(va) + " is outside the function [" + to_hex(code.start) + ", " + to_hex(code.end) + ")");
  }
  const Instruction* containing = instruction_containing(code, va);
  if (containing != nullptr && containing->address == va) return containing;
  if (containing != nullptr) {
    const Instruction* next = instruction_at(code, containing->end());
    std::string hint = "use the instruction start " + to_hex(containing->address);
    if (next != nullptr) hint += " or the next instruction " + to_hex(next->address);
    return make_error(ErrorCode::not_an_instruction, to_hex(va) + " is inside the " + describe(*containing),
                      hint);
  }
  for (const auto& gap : code.decode_gaps) {
    if (gap.contains(va)) {
      return make_error(ErrorCode::not_an_instruction,
                        to_hex(va) + " is inside " + std::to_string(gap.size) + " undecodable byte(s) at " +
                            to_hex(gap.va),
                        "these bytes are data or code the disassembler cannot decode; no probe can go there");
    }
  }
  return make_error(ErrorCode::internal, to_hex(va) + " is neither an instruction nor a decode gap");
}

}  // namespace xref
