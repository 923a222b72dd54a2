// A module's unwind table for the BPF unwinder of `xref profile --callers
// dwarf`: every row of its call-frame information (.eh_frame, else
// .debug_frame) as rules the program can follow without a DWARF
// interpreter (shared/profile_abi.h: CFA from rsp, rbp, a PLT stub's
// expression or a signal frame's ucontext; where rbp and the return address
// were saved). Read with elfutils' libdw (dwarf_cfi_addrframe over each
// FDE's rows), so the rules are the ones gdb's and perf's unwinders read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile_abi.h"
#include "result.h"

namespace xref {

struct CfiTable {
  uint64_t origin = 0;  // static VA of row pc 0: the module's lowest executable address
  std::vector<xref_unwind_row> rows;  // sorted by pc; gaps between FDEs are CFA_NONE rows
  // Rows by kind, for the capture's account of what it could not unwind.
  uint64_t unsupported_rows = 0;
  uint64_t signal_rows = 0;
  uint64_t plt_rows = 0;
  std::string source;  // ".eh_frame" or ".debug_frame"
};

// Fails with elf_error when the CFI is damaged, file_error when the file
// cannot be read; a module without any CFI gives a table with no rows.
Result<CfiTable> compile_cfi_table(const std::string& elf_path);

// The row in effect at static VA `static_va` (nullptr: before the first).
const xref_unwind_row* cfi_row_at(const CfiTable& table, uint64_t static_va);

}  // namespace xref
