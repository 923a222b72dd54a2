// Whether a uprobe may go at a static VA. A uprobe inside an instruction
// corrupts the target; one on an int3 hides a debugger's breakpoint or
// double-traps; the kernel refuses some instructions outright. Every probe
// command checks its sites here before anything is attached.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "disassembly.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

// `va` is the first byte of an instruction of `code` (a function of
// `image`, cleanly disassembled) and that byte is not already int3 in the
// file. `what` starts the error ("probe at 0x1234", "--stop at 0x1234").
Result<void> check_probe_site(const ElfImage& image, const FunctionCode& code, uint64_t va, const std::string& what);

// A static VA in the image but outside its executable segments is data, not
// code: the error (not_an_instruction) names its section (".data",
// ".rodata", ".bss") so the mistake is plain. nullopt when `va` is in an
// executable segment or in no segment at all.
std::optional<Error> data_not_code(const ElfImage& image, uint64_t va, const std::string& what);

// The kernel will not put a uprobe on an instruction with a LOCK prefix or
// an ES/CS/DS/SS segment override (DS is also CET's `notrack`): it cannot
// single-step those out of line (arch/x86/kernel/uprobes.c).
bool kernel_refuses_uprobe(const ElfImage& image, uint64_t va);

// The 5-byte nop (0f 1f 44 00 00) is at `va`: the kernel can turn a uprobe
// there into a call, ~10x cheaper than an int3 trap.
bool on_five_byte_nop(const ElfImage& image, uint64_t va);

}  // namespace xref
