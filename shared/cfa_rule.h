// Where a frame's canonical frame address (CFA) is at a given instruction:
// the CFA row of the .eh_frame unwind table (DWARF call-frame information).
// The CFA is the value of rsp just before the call that entered the function,
// so return address = *(CFA - 8) on x86-64.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "eh_frame.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

// x86-64 DWARF register numbers (System V psABI, figure 3.36).
constexpr uint16_t kDwarfRbp = 6;
constexpr uint16_t kDwarfRsp = 7;

// CFA = value of the register + offset.
struct CfaRule {
  enum class Register { rsp, rbp, other };
  Register reg = Register::rsp;
  uint16_t dwarf_register = kDwarfRsp;
  int64_t offset = 8;

  friend bool operator==(const CfaRule&, const CfaRule&) = default;
};

// "rsp+8", "rbp+16", "r12-8", as readelf spells CFA rules; DWARF registers
// past 16 (rip) as "reg<N>".
std::string to_string(const CfaRule& rule);

// The CFA rule in effect at static VA `static_va` of `image`: the CIE's
// initial instructions, then those of the FDE covering va, run up to va.
// Fails with address_unmapped when no FDE covers va, unsupported when the CFA
// there is a DWARF expression (DW_CFA_def_cfa_expression, as in PLT stubs),
// and elf_error when .eh_frame is missing or damaged, or its instructions
// are. The FDE is ElfImage::fde_record's: found through .eh_frame_hdr when
// the image has one, without walking all of .eh_frame.
Result<CfaRule> cfa_rule_at(const ElfImage& image, uint64_t static_va);

// The same for a walked .eh_frame whose bytes are `section`.
Result<CfaRule> cfa_rule_at(std::span<const uint8_t> section, const EhFrame& frame,
                            uint64_t static_va);

}  // namespace xref
