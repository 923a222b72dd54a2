// .eh_frame records: FDE ranges (function extents for images without a symbol
// table) and the call-frame instructions each CIE and FDE carries, decoded one
// by one for interpreters such as cfa_rule.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "result.h"

namespace xref {

struct FdeRange {
  uint64_t start = 0;  // static VA of the first instruction covered
  uint64_t size = 0;

  friend bool operator==(const FdeRange&, const FdeRange&) = default;
};

// What a CIE says about the FDEs that use it. Offsets are byte offsets in the
// section, so the record stays valid for any copy of the same bytes.
struct EhFrameCie {
  size_t offset = 0;  // of the record's length field
  uint64_t code_alignment = 1;
  int64_t data_alignment = 1;
  uint64_t return_address_register = 16;
  uint8_t fde_encoding = 0;            // DW_EH_PE_* from 'R'; absptr when the CIE has no 'R'
  bool has_augmentation_data = false;  // 'z': FDEs carry an augmentation length
  // 'S': a signal frame. Its FDEs start one byte before the code (glibc's
  // __restore_rt: the unwinder looks up pc - 1 for other frames, pc here),
  // so that byte is the tail of the instruction before, not code to decode.
  bool signal_frame = false;
  // 'L': its FDEs may point to an LSDA, so their code may have landing pads
  // that only the unwinder enters (no branch leads there).
  bool has_lsda = false;
  size_t instructions_begin = 0;       // the initial instructions: [begin, end)
  size_t instructions_end = 0;
};

struct EhFrameFde {
  size_t offset = 0;     // of the record's length field
  size_t cie_index = 0;  // into EhFrame::cies
  FdeRange range;
  size_t instructions_begin = 0;  // [begin, end), after the augmentation data
  size_t instructions_end = 0;
};

struct EhFrame {
  uint64_t section_va = 0;
  std::vector<EhFrameCie> cies;  // in section order
  std::vector<EhFrameFde> fdes;  // sorted by range start, then size; empty ranges included
};

// Walks an .eh_frame section whose bytes are `section` and whose first byte
// sits at static VA `section_va`, stopping at a zero terminator or the end.
// Handles the FDE pointer encodings GCC, Clang and rustc emit: absptr,
// udata/sdata 2/4/8, uleb128/sleb128, absolute or pcrel. Malformed input, an
// unknown CIE version or augmentation letter, and encodings that need a base
// .eh_frame cannot give (textrel, datarel, funcrel, aligned) or make no sense
// for a code address (indirect, omit) all fail with ErrorCode::elf_error and a
// message naming the byte offset in the section. Call-frame instructions are
// located, not decoded: see decode_call_frame_instructions.
Result<EhFrame> read_eh_frame(std::span<const uint8_t> section, uint64_t section_va);

// One FDE and the CIE it points to, read at byte offset `fde_offset` of the
// section without walking the rest (what a lookup through .eh_frame_hdr
// needs). The FDE's cie_index is 0: `cie` is its CIE. Fails like
// read_eh_frame, and when the record at the offset is not an FDE.
struct EhFrameRecord {
  EhFrameCie cie;
  EhFrameFde fde;
};
Result<EhFrameRecord> read_fde_at(std::span<const uint8_t> section, uint64_t section_va, size_t fde_offset);

// The non-empty FDE ranges of read_eh_frame, sorted by start (then size).
Result<std::vector<FdeRange>> parse_eh_frame(std::span<const uint8_t> section, uint64_t section_va);

// One DWARF call-frame instruction (DW_CFA_*), operands decoded and scaled by
// the CIE's alignment factors.
struct CallFrameInstruction {
  enum class Kind {
    advance_location,    // advance_loc, advance_loc1/2/4, set_loc: a new row starts at `location`
    def_cfa,             // def_cfa, def_cfa_sf: CFA = `reg` + `offset`
    def_cfa_register,    // CFA register becomes `reg`, the offset stays
    def_cfa_offset,      // def_cfa_offset, def_cfa_offset_sf: the offset becomes `offset`
    def_cfa_expression,  // the CFA is computed by a DWARF expression
    remember_state,
    restore_state,
    register_rule,  // a rule for register `reg` (offset, restore, undefined, expression, ...)
    other,          // nop, GNU_args_size: no effect on any rule
  };
  Kind kind = Kind::other;
  uint8_t opcode = 0;    // DW_CFA_*; for advance_loc, offset and restore only the top two bits
  size_t offset = 0;     // of the opcode byte in the section
  uint64_t location = 0;  // advance_location: static VA of the new row
  uint64_t reg = 0;       // def_cfa, def_cfa_register, register_rule: DWARF register number
  int64_t value = 0;      // def_cfa, def_cfa_offset: the CFA offset in bytes;
                          // offset-type register rules: the offset from the CFA
};

// Decodes the instructions in [begin, end) of `section` (an FDE's or a CIE's,
// interpreted with `cie`), tracking the row location from `location`, and
// calls `visit` with each until it returns false. Unknown opcodes, truncated
// operands and arithmetic overflow fail with ErrorCode::elf_error naming the
// offset, once the instructions before the bad one have been visited.
Result<void> decode_call_frame_instructions(std::span<const uint8_t> section, const EhFrame& frame,
                                            const EhFrameCie& cie, size_t begin, size_t end,
                                            uint64_t location,
                                            const std::function<bool(const CallFrameInstruction&)>& visit);

}  // namespace xref
