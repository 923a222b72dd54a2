// The x86-64 general registers a fetch spec can name, as the kernel's uprobe
// fetch args spell them ("%dx"), and where each one lives in the kernel's
// struct pt_regs, which is what a BPF uprobe program receives.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace xref {

enum class Register : uint8_t {
  ax,
  bx,
  cx,
  dx,
  si,
  di,
  bp,
  sp,
  ip,
  flags,
  r8,
  r9,
  r10,
  r11,
  r12,
  r13,
  r14,
  r15,
};

// Every Register, in enum order.
std::span<const Register> all_registers();

// Accepts the kernel spelling ("dx", "flags", "r8") and the assembler alias
// ("rdx", "eflags"); case-sensitive, like the kernel.
std::optional<Register> register_from_name(std::string_view name);

// The spelling tracefs uprobe_events accepts after '%': "dx", "flags", "r8".
std::string_view register_kernel_name(Register reg);

// The assembler spelling: "rdx", "eflags", "r8".
std::string_view register_alias(Register reg);

// Byte offset of the register in x86-64 struct pt_regs.
uint16_t register_pt_regs_offset(Register reg);

}  // namespace xref
