#include "x86_registers.h"

#include <array>

namespace xref {
namespace {

// struct pt_regs (arch/x86/include/asm/ptrace.h) is, in 8-byte slots:
// r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss.
// orig_ax, cs and ss are not fetchable, so they have no Register.
constexpr uint16_t slot(int index) { return static_cast<uint16_t>(index * 8); }

struct RegisterInfo {
  Register reg;
  std::string_view kernel_name;
  std::string_view alias;
  uint16_t pt_regs_offset;
};

// Indexed by Register.
constexpr std::array<RegisterInfo, 18> register_table{{
    {Register::ax, "ax", "rax", slot(10)},
    {Register::bx, "bx", "rbx", slot(5)},
    {Register::cx, "cx", "rcx", slot(11)},
    {Register::dx, "dx", "rdx", slot(12)},
    {Register::si, "si", "rsi", slot(13)},
    {Register::di, "di", "rdi", slot(14)},
    {Register::bp, "bp", "rbp", slot(4)},
    {Register::sp, "sp", "rsp", slot(19)},
    {Register::ip, "ip", "rip", slot(16)},
    {Register::flags, "flags", "eflags", slot(18)},
    {Register::r8, "r8", "r8", slot(9)},
    {Register::r9, "r9", "r9", slot(8)},
    {Register::r10, "r10", "r10", slot(7)},
    {Register::r11, "r11", "r11", slot(6)},
    {Register::r12, "r12", "r12", slot(3)},
    {Register::r13, "r13", "r13", slot(2)},
    {Register::r14, "r14", "r14", slot(1)},
    {Register::r15, "r15", "r15", slot(0)},
}};

constexpr bool table_is_indexed_by_register() {
  for (size_t i = 0; i < register_table.size(); ++i) {
    if (static_cast<size_t>(register_table[i].reg) != i) return false;
  }
  return true;
}
static_assert(table_is_indexed_by_register());

constexpr std::array<Register, register_table.size()> make_register_list() {
  std::array<Register, register_table.size()> list{};
  for (size_t i = 0; i < list.size(); ++i) list[i] = register_table[i].reg;
  return list;
}
constexpr auto register_list = make_register_list();

const RegisterInfo& info(Register reg) { return register_table[static_cast<size_t>(reg)]; }

}  // namespace

std::span<const Register> all_registers() { return register_list; }

std::optional<Register> register_from_name(std::string_view name) {
  for (const RegisterInfo& entry : register_table) {
    if (name == entry.kernel_name || name == entry.alias) return entry.reg;
  }
  return std::nullopt;
}

std::string_view register_kernel_name(Register reg) { return info(reg).kernel_name; }

std::string_view register_alias(Register reg) { return info(reg).alias; }

uint16_t register_pt_regs_offset(Register reg) { return info(reg).pt_regs_offset; }

}  // namespace xref
