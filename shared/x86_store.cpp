#include "x86_store.h"

#include "zydis_decode.h"

namespace xref {
namespace {

constexpr uint32_t kMaxBoundedWidth = 32;  // a ymm store; wider (xsave, fxsave, zmm) is unbounded

std::optional<Register> general_register(ZydisRegister reg) {
  switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg)) {
    case ZYDIS_REGISTER_RAX: return Register::ax;
    case ZYDIS_REGISTER_RBX: return Register::bx;
    case ZYDIS_REGISTER_RCX: return Register::cx;
    case ZYDIS_REGISTER_RDX: return Register::dx;
    case ZYDIS_REGISTER_RSI: return Register::si;
    case ZYDIS_REGISTER_RDI: return Register::di;
    case ZYDIS_REGISTER_RBP: return Register::bp;
    case ZYDIS_REGISTER_RSP: return Register::sp;
    case ZYDIS_REGISTER_R8: return Register::r8;
    case ZYDIS_REGISTER_R9: return Register::r9;
    case ZYDIS_REGISTER_R10: return Register::r10;
    case ZYDIS_REGISTER_R11: return Register::r11;
    case ZYDIS_REGISTER_R12: return Register::r12;
    case ZYDIS_REGISTER_R13: return Register::r13;
    case ZYDIS_REGISTER_R14: return Register::r14;
    case ZYDIS_REGISTER_R15: return Register::r15;
    default: return std::nullopt;
  }
}

bool is_high_byte(ZydisRegister reg) {
  return reg == ZYDIS_REGISTER_AH || reg == ZYDIS_REGISTER_BH || reg == ZYDIS_REGISTER_CH ||
         reg == ZYDIS_REGISTER_DH;
}

bool writes(const ZydisDecodedOperand& operand) {
  return operand.type == ZYDIS_OPERAND_TYPE_MEMORY && operand.mem.type == ZYDIS_MEMOP_TYPE_MEM &&
         (operand.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
}

bool is_stack_push(ZydisMnemonic mnemonic) {
  switch (mnemonic) {
    case ZYDIS_MNEMONIC_PUSH:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFD:
    case ZYDIS_MNEMONIC_PUSHFQ:
    case ZYDIS_MNEMONIC_CALL:
    case ZYDIS_MNEMONIC_ENTER: return true;
    default: return false;
  }
}

bool is_bit_string(ZydisMnemonic mnemonic) {
  return mnemonic == ZYDIS_MNEMONIC_BTS || mnemonic == ZYDIS_MNEMONIC_BTR || mnemonic == ZYDIS_MNEMONIC_BTC;
}

MemoryDestination destination_of(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand& operand,
                                 uint64_t va) {
  MemoryDestination destination;
  const auto& mem = operand.mem;
  destination.width = operand.size / 8;
  destination.address32 = instruction.address_width == 32;
  if (mem.segment == ZYDIS_REGISTER_FS) destination.segment = MemoryDestination::Segment::fs;
  if (mem.segment == ZYDIS_REGISTER_GS) destination.segment = MemoryDestination::Segment::gs;
  destination.disp = mem.disp.has_displacement ? mem.disp.value : 0;
  if (mem.base == ZYDIS_REGISTER_RIP || mem.base == ZYDIS_REGISTER_EIP) {
    destination.rip_relative = true;
    destination.target = va + instruction.length + static_cast<uint64_t>(destination.disp);
  } else if (mem.base != ZYDIS_REGISTER_NONE) {
    destination.base = general_register(mem.base);
  }
  if (mem.index != ZYDIS_REGISTER_NONE) {
    destination.index = general_register(mem.index);
    destination.scale = mem.scale == 0 ? 1 : mem.scale;
  }
  return destination;
}

// The value a mov, movnti or push writes, when its operand holds it.
StoreValue value_of(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands,
                    uint32_t width, uint64_t va) {
  StoreValue value;
  if (instruction.mnemonic == ZYDIS_MNEMONIC_CALL) {
    value.kind = StoreValue::Kind::immediate;
    value.immediate = va + instruction.length;
    value.return_address = true;
    return value;
  }
  const bool moves = instruction.mnemonic == ZYDIS_MNEMONIC_MOV || instruction.mnemonic == ZYDIS_MNEMONIC_MOVNTI ||
                     instruction.mnemonic == ZYDIS_MNEMONIC_PUSH;
  if (!moves) return value;
  for (uint8_t i = 0; i < instruction.operand_count_visible; ++i) {
    const ZydisDecodedOperand& operand = operands[i];
    if (operand.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      const auto reg = general_register(operand.reg.value);
      if (!reg) return value;  // a segment register: known after
      value.kind = StoreValue::Kind::register_;
      value.reg = *reg;
      value.shift = is_high_byte(operand.reg.value) ? 8 : 0;
      return value;
    }
    if (operand.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      // Zydis sign-extends a signed immediate to 64 bits: what an 8-byte
      // store of imm32 writes. Narrower stores keep their own bytes only.
      value.kind = StoreValue::Kind::immediate;
      value.immediate = operand.imm.value.u;
      if (width < 8) value.immediate &= (uint64_t{1} << (8 * width)) - 1;
      return value;
    }
  }
  return value;
}

void set_flow(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands, uint64_t va,
              StoreInstruction& store) {
  switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_RET:
    case ZYDIS_MNEMONIC_IRET:
    case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ:
    case ZYDIS_MNEMONIC_UD0:
    case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_HLT:
    case ZYDIS_MNEMONIC_INT3: store.flow = Flow::stop; return;
    default: break;
  }
  const bool call = instruction.mnemonic == ZYDIS_MNEMONIC_CALL;
  const bool jump = instruction.mnemonic == ZYDIS_MNEMONIC_JMP;
  const bool conditional = instruction.meta.category == ZYDIS_CATEGORY_COND_BR &&
                           instruction.mnemonic != ZYDIS_MNEMONIC_XEND;
  if (!call && !jump && !conditional) return;
  ZyanU64 target = 0;
  if (instruction.operand_count_visible > 0 && operands[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
      operands[0].imm.is_relative && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&instruction, &operands[0], va, &target))) {
    store.flow = call ? Flow::next : jump ? Flow::jump : Flow::conditional_jump;
    store.branch_target = target;
  } else if (!call) {
    store.flow = jump ? Flow::indirect_jump : Flow::next;  // a conditional branch always may fall through
  }
}

}  // namespace

struct X86StoreDecoder::State {
  ZydisDecoder decoder{};
  CapstoneDecoder capstone;
  ZydisX86Decoder zydis;
};

X86StoreDecoder::X86StoreDecoder() : state_(std::make_unique<State>()) {
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&state_->decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    failure_ = "cannot start Zydis";
  } else if (!state_->capstone.failure().empty()) {
    failure_ = state_->capstone.failure();
  } else if (!state_->zydis.failure().empty()) {
    failure_ = state_->zydis.failure();
  }
}

X86StoreDecoder::~X86StoreDecoder() = default;

std::optional<StoreInstruction> X86StoreDecoder::decode(std::span<const uint8_t> bytes, uint64_t va) const {
  if (!failure_.empty() || bytes.empty()) return std::nullopt;
  ZydisFull full;
  if (!zydis_decode_full(state_->decoder, bytes, full)) return std::nullopt;
  const ZydisDecodedInstruction& instruction = full.instruction;
  const auto& operands = full.operands;
  StoreInstruction store;
  store.size = instruction.length;
  set_flow(instruction, operands.data(), va, store);
  store.evex = instruction.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX ||
               instruction.encoding == ZYDIS_INSTRUCTION_ENCODING_MVEX;
  // The first written memory operand, visible or hidden (movs, stos, push,
  // call and maskmovdqu write through a hidden one).
  const ZydisDecodedOperand* written = nullptr;
  for (uint8_t i = 0; i < instruction.operand_count && written == nullptr; ++i) {
    if (writes(operands[i])) written = &operands[i];
  }
  if (written == nullptr) return store;
  store.writes_memory = true;
  store.lock = (instruction.attributes & ZYDIS_ATTRIB_HAS_LOCK) != 0;
  store.destination = destination_of(instruction, *written, va);
  const ZydisMnemonic mnemonic = instruction.mnemonic;
  store.stos = mnemonic == ZYDIS_MNEMONIC_STOSB || mnemonic == ZYDIS_MNEMONIC_STOSW ||
               mnemonic == ZYDIS_MNEMONIC_STOSD || mnemonic == ZYDIS_MNEMONIC_STOSQ;
  store.string_store = store.stos || mnemonic == ZYDIS_MNEMONIC_MOVSB || mnemonic == ZYDIS_MNEMONIC_MOVSW ||
                       mnemonic == ZYDIS_MNEMONIC_MOVSD || mnemonic == ZYDIS_MNEMONIC_MOVSQ;
  // movsd is also the SSE scalar move (movsd m64, xmm), which has a visible operand.
  if (store.string_store && instruction.operand_count_visible != 0) store.string_store = store.stos = false;
  store.rep = store.string_store && (instruction.attributes & ZYDIS_ATTRIB_HAS_REP) != 0;
  store.stack_push = is_stack_push(mnemonic) && store.destination.base == Register::sp;
  if (store.stack_push) store.destination.disp = -static_cast<int64_t>(store.destination.width);
  if (mnemonic == ZYDIS_MNEMONIC_POP && store.destination.base == Register::sp) {
    store.destination.disp += store.destination.width;
  }
  const bool bit_offset_in_register = is_bit_string(mnemonic) && instruction.operand_count_visible > 1 &&
                                      operands[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
  store.unbounded = store.destination.width == 0 || store.destination.width > kMaxBoundedWidth ||
                    bit_offset_in_register;
  if (store.stos) {
    store.value.kind = StoreValue::Kind::register_;
    store.value.reg = Register::ax;
  } else {
    store.value = value_of(instruction, operands.data(), store.destination.width, va);
  }
  return store;
}

std::optional<uint8_t> X86StoreDecoder::capstone_length(std::span<const uint8_t> bytes, uint64_t va) const {
  auto decoded = state_->capstone.decode(bytes, va);
  if (!decoded) return std::nullopt;
  return decoded->size;
}

std::string X86StoreDecoder::text(std::span<const uint8_t> bytes, uint64_t va) const {
  auto decoded = state_->capstone.decode(bytes, va);
  if (!decoded) decoded = state_->zydis.decode(bytes, va);
  return decoded ? std::move(decoded->text) : std::string();
}

}  // namespace xref
