#include "x86_registers.h"

#include <asm/ptrace.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>

namespace xref {
namespace {

struct RegisterCase {
  const char* kernel_name;
  const char* alias;
  Register reg;
  size_t pt_regs_offset;  // from the UAPI struct pt_regs, not from our table
};

const RegisterCase register_cases[] = {
    {"ax", "rax", Register::ax, offsetof(pt_regs, rax)},
    {"bx", "rbx", Register::bx, offsetof(pt_regs, rbx)},
    {"cx", "rcx", Register::cx, offsetof(pt_regs, rcx)},
    {"dx", "rdx", Register::dx, offsetof(pt_regs, rdx)},
    {"si", "rsi", Register::si, offsetof(pt_regs, rsi)},
    {"di", "rdi", Register::di, offsetof(pt_regs, rdi)},
    {"bp", "rbp", Register::bp, offsetof(pt_regs, rbp)},
    {"sp", "rsp", Register::sp, offsetof(pt_regs, rsp)},
    {"ip", "rip", Register::ip, offsetof(pt_regs, rip)},
    {"flags", "eflags", Register::flags, offsetof(pt_regs, eflags)},
    {"r8", "r8", Register::r8, offsetof(pt_regs, r8)},
    {"r9", "r9", Register::r9, offsetof(pt_regs, r9)},
    {"r10", "r10", Register::r10, offsetof(pt_regs, r10)},
    {"r11", "r11", Register::r11, offsetof(pt_regs, r11)},
    {"r12", "r12", Register::r12, offsetof(pt_regs, r12)},
    {"r13", "r13", Register::r13, offsetof(pt_regs, r13)},
    {"r14", "r14", Register::r14, offsetof(pt_regs, r14)},
    {"r15", "r15", Register::r15, offsetof(pt_regs, r15)},
};

TEST(X86Registers, KernelNamesAliasesAndPtRegsOffsets) {
  for (const RegisterCase& expected : register_cases) {
    SCOPED_TRACE(expected.kernel_name);
    EXPECT_EQ(register_from_name(expected.kernel_name), expected.reg);
    EXPECT_EQ(register_from_name(expected.alias), expected.reg);
    EXPECT_EQ(register_kernel_name(expected.reg), expected.kernel_name);
    EXPECT_EQ(register_alias(expected.reg), expected.alias);
    EXPECT_EQ(register_pt_regs_offset(expected.reg), expected.pt_regs_offset);
  }
}

TEST(X86Registers, AllRegistersListsEachOnceWithDistinctOffsets) {
  EXPECT_EQ(all_registers().size(), std::size(register_cases));
  std::set<Register> seen;
  std::set<uint16_t> offsets;
  for (Register reg : all_registers()) {
    seen.insert(reg);
    offsets.insert(register_pt_regs_offset(reg));
  }
  EXPECT_EQ(seen.size(), std::size(register_cases));
  EXPECT_EQ(offsets.size(), std::size(register_cases));
}

TEST(X86Registers, RejectsUnknownAndNonKernelSpellings) {
  for (const char* name :
       {"", "q8", "RAX", "Ax", "eax", "r16", "orig_ax", "cs", "ss", "rflags", "r8d"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(register_from_name(name).has_value());
  }
}

}  // namespace
}  // namespace xref
