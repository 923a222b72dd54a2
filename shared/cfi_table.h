// A module's unwind table for the BPF unwinder of `xref profile --callers
// dwarf`: every row of its call-frame information (.eh_frame, else
// .debug_frame) as rules the program can follow without a DWARF
// interpreter (shared/profile_abi.h: CFA from rsp, rbp, a PLT stub's
// expression or a signal frame's ucontext; where rbp and the return address
// were saved). The rows are libdw's (dwarf_cfi_addrframe over each FDE's
// rows), so the rules are the ones elfutils' unwinder (perf's, eu-stack's)
// reads; the FDEs of .eh_frame are found by the project's own walker
// (eh_frame.h: it decodes every pointer encoding the toolchains emit), those
// of .debug_frame by libdw's dwarf_next_cfi.
//
// How each rule becomes a row:
//   CFA reg+off: rsp -> CFA_RSP, rbp -> CFA_RBP, any other register -> UNSUPPORTED;
//   CFA = the PLT expression (breg7 A; breg16 0; lit15; and; litN; ge; lit3;
//     shl; plus) -> CFA_PLT, cfa_offset A, rbp_offset N (11 in .plt, 9 in an
//     IBT .plt): rbp must be unchanged there;
//   a signal frame ('S' augmentation: glibc's __restore_rt) whose CFA is
//     *(rsp+A) and whose rip and rbp are at rsp+B, rsp+C -> CFA_SIGNAL with
//     cfa_offset A, ra_offset B, rbp_kind RBP_AT_CFA, rbp_offset C;
//   the return address undefined -> CFA_END (_start, a thread's clone start);
//   the return address at cfa+N -> ra_offset N; any other RA rule -> UNSUPPORTED;
//   rbp unchanged or undefined -> RBP_SAME, at cfa+N -> RBP_AT_CFA N, else RBP_UNSUPPORTED.
// END, NONE and UNSUPPORTED rows carry no offsets, so neighbours of one kind
// merge. Adjacent rows with the same rule are merged into one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf_image.h"
#include "profile_abi.h"
#include "result.h"

namespace xref {

// Far above any real module (libc: about 25 thousand rows; the BPF search
// takes XREF_PROFILE_ROW_SEARCH steps, enough for 2^24 rows).
constexpr uint64_t kMostCfiRows = uint64_t{1} << 24;

struct CfiTable {
  uint64_t origin = 0;  // static VA of row pc 0: the module's lowest executable address
  // Sorted by pc; a row holds from its pc up to the next row's. A gap after
  // an FDE starts with a CFA_NONE row; before the first row there is none
  // (cfi_row_at gives nullptr there: no CFI either).
  std::vector<xref_unwind_row> rows;
  // Rows by kind, for the capture's account of what it could not unwind.
  uint64_t unsupported_rows = 0;
  uint64_t signal_rows = 0;
  uint64_t plt_rows = 0;
  uint64_t end_rows = 0;
  uint64_t merged_rows = 0;   // rows libdw gave that repeated their neighbour's rule
  uint64_t fdes = 0;          // FDEs read (non-empty, inside the executable segments)
  uint64_t skipped_fdes = 0;  // non-empty FDEs outside the executable segments (a discarded function's)
  std::string source;  // ".eh_frame", ".debug_frame", or "" without CFI
};

// Fails with elf_error when the CFI is damaged, file_error when the file
// cannot be read, limit_exceeded past kMostCfiRows rows or an executable
// span over 4 GiB; a module without any CFI gives a table with no rows.
Result<CfiTable> compile_cfi_table(const std::string& elf_path);
// The same for an image already open (ElfImage::open_descriptor: a module
// opened through /proc/PID/map_files or with a sudo user's rights); errors
// name image.path().
Result<CfiTable> compile_cfi_table(const ElfImage& image);

// The row in effect at static VA `static_va` (nullptr: before the first).
const xref_unwind_row* cfi_row_at(const CfiTable& table, uint64_t static_va);

}  // namespace xref
