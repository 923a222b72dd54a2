#include "x86_decoder.h"

#include <Zydis/Zydis.h>
#include <capstone/capstone.h>

#include <array>

#include "zydis_decode.h"

namespace xref {

const char* instruction_kind_name(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::other: return "other";
    case InstructionKind::call: return "call";
    case InstructionKind::jump: return "jump";
    case InstructionKind::conditional_jump: return "conditional_jump";
    case InstructionKind::ret: return "ret";
    case InstructionKind::trap: return "trap";
    case InstructionKind::endbr64: return "endbr64";
    case InstructionKind::nop: return "nop";
  }
  return "unknown";
}

const char* operand_kind_name(OperandKind kind) {
  switch (kind) {
    case OperandKind::direct: return "direct";
    case OperandKind::register_: return "register";
    case OperandKind::memory: return "memory";
    case OperandKind::rip_memory: return "rip_memory";
  }
  return "unknown";
}

namespace {

bool branches(InstructionKind kind) {
  return kind == InstructionKind::call || kind == InstructionKind::jump || kind == InstructionKind::conditional_jump;
}

}  // namespace

// ---- Capstone ----

struct CapstoneDecoder::State {
  csh handle = 0;
  bool opened = false;
  cs_insn* insn = nullptr;
};

CapstoneDecoder::CapstoneDecoder() : state_(std::make_unique<State>()) {
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &state_->handle) != CS_ERR_OK) {
    failure_ = std::string("cannot start Capstone: ") + cs_strerror(cs_errno(state_->handle));
    return;
  }
  state_->opened = true;
  if (cs_option(state_->handle, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
      (state_->insn = cs_malloc(state_->handle)) == nullptr) {
    failure_ = std::string("cannot start Capstone: ") + cs_strerror(cs_errno(state_->handle));
  }
}

CapstoneDecoder::~CapstoneDecoder() {
  if (state_->insn != nullptr) cs_free(state_->insn, 1);
  if (state_->opened) cs_close(&state_->handle);
}

namespace {

InstructionKind capstone_kind(csh handle, const cs_insn& insn) {
  switch (insn.id) {
    case X86_INS_CALL:
    case X86_INS_LCALL: return InstructionKind::call;
    case X86_INS_JMP:
    case X86_INS_LJMP: return InstructionKind::jump;
    case X86_INS_RET:
    case X86_INS_RETF:
    case X86_INS_RETFQ: return InstructionKind::ret;
    case X86_INS_UD0:
    case X86_INS_UD2:
    case X86_INS_UD2B:
    case X86_INS_HLT:
    case X86_INS_INT3: return InstructionKind::trap;
    case X86_INS_ENDBR64: return InstructionKind::endbr64;
    case X86_INS_NOP: return InstructionKind::nop;
    // Capstone 4 leaves loop* out of its jump group.
    case X86_INS_LOOP:
    case X86_INS_LOOPE:
    case X86_INS_LOOPNE: return InstructionKind::conditional_jump;
    default: break;
  }
  // jcc, jrcxz and xbegin are in the jump group; jmp was handled above.
  if (cs_insn_group(handle, &insn, X86_GRP_JUMP)) return InstructionKind::conditional_jump;
  return InstructionKind::other;
}

BranchTarget capstone_target(const cs_insn& insn) {
  BranchTarget target;
  target.operand = insn.op_str;
  const cs_x86& x86 = insn.detail->x86;
  if (x86.op_count == 0) {
    target.kind = OperandKind::memory;  // no operand to read: treat as unknown
    return target;
  }
  const cs_x86_op& operand = x86.operands[0];
  switch (operand.type) {
    case X86_OP_IMM:
      target.kind = OperandKind::direct;
      target.va = static_cast<uint64_t>(operand.imm);
      break;
    case X86_OP_REG:
      target.kind = OperandKind::register_;
      break;
    case X86_OP_MEM:
      if (operand.mem.base == X86_REG_RIP && operand.mem.index == X86_REG_INVALID) {
        // rip-relative operands count from the end of the instruction.
        target.kind = OperandKind::rip_memory;
        target.va = insn.address + insn.size + static_cast<uint64_t>(operand.mem.disp);
      } else {
        target.kind = OperandKind::memory;
      }
      break;
    default:
      target.kind = OperandKind::memory;
      break;
  }
  return target;
}

}  // namespace

std::optional<DecodedInstruction> CapstoneDecoder::decode(std::span<const uint8_t> bytes, uint64_t va) const {
  if (!failure_.empty() || bytes.empty()) return std::nullopt;
  const uint8_t* cursor = bytes.data();
  size_t remaining = bytes.size();
  uint64_t address = va;
  cs_insn* insn = state_->insn;
  if (!cs_disasm_iter(state_->handle, &cursor, &remaining, &address, insn)) return std::nullopt;
  DecodedInstruction decoded;
  decoded.size = static_cast<uint8_t>(insn->size);
  decoded.kind = capstone_kind(state_->handle, *insn);
  decoded.text = insn->mnemonic;
  if (insn->op_str[0] != '\0') decoded.text += std::string(" ") + insn->op_str;
  if (branches(decoded.kind)) decoded.target = capstone_target(*insn);
  return decoded;
}

// ---- Zydis ----

struct ZydisX86Decoder::State {
  ZydisDecoder decoder{};
  ZydisFormatter formatter{};
};

ZydisX86Decoder::ZydisX86Decoder() : state_(std::make_unique<State>()) {
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&state_->decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
      !ZYAN_SUCCESS(ZydisFormatterInit(&state_->formatter, ZYDIS_FORMATTER_STYLE_INTEL))) {
    failure_ = "cannot start Zydis";
  }
}

ZydisX86Decoder::~ZydisX86Decoder() = default;

namespace {

InstructionKind zydis_kind(const ZydisDecodedInstruction& instruction) {
  switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_CALL: return InstructionKind::call;
    case ZYDIS_MNEMONIC_JMP: return InstructionKind::jump;
    case ZYDIS_MNEMONIC_RET: return InstructionKind::ret;  // near and far
    case ZYDIS_MNEMONIC_UD0:
    case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_HLT:
    case ZYDIS_MNEMONIC_INT3: return InstructionKind::trap;
    case ZYDIS_MNEMONIC_ENDBR64: return InstructionKind::endbr64;
    case ZYDIS_MNEMONIC_NOP: return InstructionKind::nop;
    default: break;
  }
  // jcc, jrcxz, loop* and xbegin (whose abort path is its target); xend,
  // which Zydis files with them, branches nowhere.
  if (instruction.meta.category == ZYDIS_CATEGORY_COND_BR && instruction.mnemonic != ZYDIS_MNEMONIC_XEND) {
    return InstructionKind::conditional_jump;
  }
  return InstructionKind::other;
}

std::string zydis_operand_text(const ZydisFormatter& formatter, const ZydisDecodedInstruction& instruction,
                               const ZydisDecodedOperand& operand, uint64_t va) {
  std::array<char, 128> text{};
  if (!ZYAN_SUCCESS(ZydisFormatterFormatOperand(&formatter, &instruction, &operand, text.data(), text.size(), va,
                                                nullptr))) {
    return "?";
  }
  return text.data();
}

BranchTarget zydis_target(const ZydisFormatter& formatter, const ZydisDecodedInstruction& instruction,
                          const ZydisDecodedOperand* operands, uint64_t va) {
  BranchTarget target;
  if (instruction.operand_count_visible == 0) {
    target.kind = OperandKind::memory;  // no operand to read: treat as unknown
    return target;
  }
  const ZydisDecodedOperand& operand = operands[0];
  target.operand = zydis_operand_text(formatter, instruction, operand, va);
  ZyanU64 absolute = 0;
  switch (operand.type) {
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
      if (operand.imm.is_relative && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&instruction, &operand, va, &absolute))) {
        target.kind = OperandKind::direct;
        target.va = absolute;
      } else {
        target.kind = OperandKind::memory;
      }
      break;
    case ZYDIS_OPERAND_TYPE_REGISTER:
      target.kind = OperandKind::register_;
      break;
    case ZYDIS_OPERAND_TYPE_MEMORY:
      if (operand.mem.base == ZYDIS_REGISTER_RIP && operand.mem.index == ZYDIS_REGISTER_NONE &&
          ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&instruction, &operand, va, &absolute))) {
        target.kind = OperandKind::rip_memory;
        target.va = absolute;
      } else {
        target.kind = OperandKind::memory;
      }
      break;
    default:
      target.kind = OperandKind::memory;  // a far pointer
      break;
  }
  return target;
}

}  // namespace

std::optional<DecodedInstruction> ZydisX86Decoder::decode(std::span<const uint8_t> bytes, uint64_t va) const {
  if (!failure_.empty() || bytes.empty()) return std::nullopt;
  ZydisFull full;
  if (!zydis_decode_full(state_->decoder, bytes, full)) return std::nullopt;
  const ZydisDecodedInstruction& instruction = full.instruction;
  const auto& operands = full.operands;
  DecodedInstruction decoded;
  decoded.size = instruction.length;
  decoded.kind = zydis_kind(instruction);
  std::array<char, 256> text{};
  if (ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&state_->formatter, &instruction, operands.data(),
                                                   instruction.operand_count_visible, text.data(), text.size(), va,
                                                   nullptr))) {
    decoded.text = text.data();
  } else {
    decoded.text = ZydisMnemonicGetString(instruction.mnemonic);
  }
  if (branches(decoded.kind)) decoded.target = zydis_target(state_->formatter, instruction, operands.data(), va);
  return decoded;
}

}  // namespace xref
