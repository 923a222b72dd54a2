// What one x86-64 instruction writes to memory: the destination operand
// {base, index, scale, disp, segment, size}, where the new value comes from
// (a register, an immediate, or only known after it ran), and its prefixes.
// The store-site finder of `xref watch --backend stores`
// (helper/sites/store_sites.h) is built on it.
//
// The operands come from Zydis, whose operand actions are exact; Capstone
// 4's are not (measured on Debian 12's libc: it marks 902 `test m, r` as
// writes and misses 443 `lock cmpxchg m, r`, 897 `movups m, x` and every
// setcc m8). The text is Capstone's where it decodes, as in the rest of xref
// (x86_decoder.h), and Zydis's where it cannot.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "x86_decoder.h"
#include "x86_registers.h"

namespace xref {

// The memory an instruction writes.
struct MemoryDestination {
  std::optional<Register> base;   // none for an absolute or rip-relative address
  std::optional<Register> index;
  uint8_t scale = 0;              // 1, 2, 4, 8 with an index, else 0
  int64_t disp = 0;               // push, call, pushf, enter: -width (they write below rsp);
                                  // pop m with an rsp base: +width (its address uses rsp after the pop)
  bool rip_relative = false;      // then `target` is the VA written
  uint64_t target = 0;
  enum class Segment : uint8_t { none, fs, gs } segment = Segment::none;  // cs/ds/es/ss are flat in 64-bit mode
  bool address32 = false;         // 0x67 prefix: registers and the sum are 32-bit (wraps at 4 GiB)
  uint32_t width = 0;             // bytes written (an element of movs/stos); 0 when Zydis gives no size
};

// Where the written value comes from, when it is known before the store runs.
struct StoreValue {
  enum class Kind : uint8_t {
    after,      // read-modify-write, xchg/cmpxchg/xadd, setcc, vector, x87, movs, ...: known only after
    register_,  // mov m, r; movnti; stos (rax); push r: `reg`, shifted right by `shift` (8 for ah/bh/ch/dh)
    immediate,  // mov m, imm; push imm: `immediate`, sign-extended to 8 bytes (only `width` bytes are written)
                // call: the return address, the VA of the next instruction (`return_address`)
  } kind = Kind::after;
  Register reg = Register::ax;
  uint8_t shift = 0;
  uint64_t immediate = 0;
  bool return_address = false;  // a call's: `immediate` is a VA in the numbering of the `va` decoded at
};

// Where execution goes after an instruction, for reachability.
enum class Flow : uint8_t {
  next,              // the next instruction (calls included)
  jump,              // only to `branch_target`
  conditional_jump,  // to `branch_target` or the next (jcc, loop*, jrcxz, xbegin)
  indirect_jump,     // through a register or memory: a jump table or a tail call
  stop,              // ret, ud2, hlt, int3: nowhere in this function
};

struct StoreInstruction {
  uint8_t size = 0;               // instruction length
  Flow flow = Flow::next;
  uint64_t branch_target = 0;     // a direct jump, conditional jump or call: the target VA
  bool writes_memory = false;     // the rest is meaningful only when true (evex always is)
  bool evex = false;              // EVEX-encoded (AVX-512), store or not
  bool rep = false;               // rep movs / rep stos
  bool lock = false;
  bool string_store = false;      // movs* / stos*: destination [rdi]
  bool stos = false;              // of those, stos (value rax)
  bool stack_push = false;        // push, call, pushf, enter: writes below rsp
  // Writes memory the operand does not bound: xsave/fxsave/fnsave and other
  // saves over 32 bytes, movdir64b, and bt[s|r|c] m, r (the bit offset in the
  // register reaches any byte: [m + (r >> 3)]).
  bool unbounded = false;
  MemoryDestination destination;
  StoreValue value;
};

// Decodes one instruction for its memory write; owns a Zydis decoder and,
// for text, a Capstone and a Zydis formatter (x86_decoder.h).
class X86StoreDecoder {
 public:
  X86StoreDecoder();
  ~X86StoreDecoder();
  X86StoreDecoder(const X86StoreDecoder&) = delete;
  X86StoreDecoder& operator=(const X86StoreDecoder&) = delete;

  // Empty when the decoders started; else why not.
  const std::string& failure() const { return failure_; }
  // The instruction at the start of `bytes`, whose first byte is at `va`;
  // nullopt when Zydis cannot decode it.
  std::optional<StoreInstruction> decode(std::span<const uint8_t> bytes, uint64_t va) const;
  // The length Capstone decodes there (it knows no instruction Zydis does
  // not, but a sweep resynchronises as disassembly.cpp does); nullopt if none.
  std::optional<uint8_t> capstone_length(std::span<const uint8_t> bytes, uint64_t va) const;
  // Intel text, Capstone's spelling ("mov dword ptr [rbx + 8], eax"), Zydis's
  // where Capstone cannot decode; "" when neither can.
  std::string text(std::span<const uint8_t> bytes, uint64_t va) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string failure_;
};

}  // namespace xref
