// One x86-64 instruction decoded: its length, what kind of control flow it
// is, where a call or jump goes, and its text. Two decoders give the same
// facts: Capstone (whose Intel text the rest of xref reads operands from)
// and Zydis, which decodes what Debian's Capstone 4 cannot (AVX-512 EVEX
// code, the mask registers, AMX), such as glibc's *_evex string functions.
// tests/unit/shared/decoder_agreement_test.cpp checks that both agree on
// every instruction of the system's libc, libm, libstdc++ and libcrypto.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace xref {

enum class InstructionKind : uint8_t {
  other,
  call,              // call, direct or indirect
  jump,              // unconditional jmp
  conditional_jump,  // jcc, jrcxz, loop*
  ret,               // ret, ret imm16, retf, repz/bnd ret
  trap,              // ud2, hlt, int3: execution does not fall through normally
  endbr64,
  nop,
};

const char* instruction_kind_name(InstructionKind kind);

enum class OperandKind : uint8_t {
  direct,      // a relative branch: the target is known
  register_,   // call/jmp through a register
  memory,      // through memory addressed by registers
  rip_memory,  // through a rip-relative memory slot whose VA is known
};

const char* operand_kind_name(OperandKind kind);

// Where a call or a jump goes.
struct BranchTarget {
  OperandKind kind = OperandKind::direct;
  // direct: the target VA; rip_memory: the VA of the pointer slot; else 0.
  uint64_t va = 0;
  std::string operand;  // the operand as disassembled: "0x1400", "rax", "qword ptr [rip + 0x2d86]"
  std::string name;     // the function starting at a direct target, when an ElfImage knows one

  bool indirect() const { return kind != OperandKind::direct; }
};

struct DecodedInstruction {
  uint8_t size = 0;
  InstructionKind kind = InstructionKind::other;
  std::string text;     // Intel syntax: "call 0x1400", "vpcmpb k1, ymm16, ymmword ptr [rdi], 0x0"
  BranchTarget target;  // call, jump and conditional_jump only
};

// Capstone 4 (Debian's libcapstone4), Intel syntax, operand details on.
class CapstoneDecoder {
 public:
  CapstoneDecoder();
  ~CapstoneDecoder();
  CapstoneDecoder(const CapstoneDecoder&) = delete;
  CapstoneDecoder& operator=(const CapstoneDecoder&) = delete;

  // Empty when the library could not be started; else why not.
  const std::string& failure() const { return failure_; }
  // The instruction at the start of `bytes`, whose first byte is at `va`;
  // nullopt when Capstone cannot decode it.
  std::optional<DecodedInstruction> decode(std::span<const uint8_t> bytes, uint64_t va) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string failure_;
};

// Zydis 4 (Debian's libzydis4.0), 64-bit mode, its Intel formatter.
class ZydisX86Decoder {
 public:
  ZydisX86Decoder();
  ~ZydisX86Decoder();
  ZydisX86Decoder(const ZydisX86Decoder&) = delete;
  ZydisX86Decoder& operator=(const ZydisX86Decoder&) = delete;

  const std::string& failure() const { return failure_; }
  std::optional<DecodedInstruction> decode(std::span<const uint8_t> bytes, uint64_t va) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string failure_;
};

}  // namespace xref
