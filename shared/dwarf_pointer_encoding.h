// DW_EH_PE_* pointer encodings of .eh_frame and .eh_frame_hdr (LSB, "DWARF
// Extensions"): the low nibble is the value format, bits 4-6 the
// application, bit 7 "indirect", and 0xff "omitted".
#pragma once

#include <cstdint>

namespace xref {

constexpr uint8_t kPeAbsptr = 0x00;
constexpr uint8_t kPeUleb128 = 0x01;
constexpr uint8_t kPeUdata2 = 0x02;
constexpr uint8_t kPeUdata4 = 0x03;
constexpr uint8_t kPeUdata8 = 0x04;
constexpr uint8_t kPeSigned = 0x08;  // signed value of the address size
constexpr uint8_t kPeSleb128 = 0x09;
constexpr uint8_t kPeSdata2 = 0x0a;
constexpr uint8_t kPeSdata4 = 0x0b;
constexpr uint8_t kPeSdata8 = 0x0c;
constexpr uint8_t kPeFormatMask = 0x0f;
constexpr uint8_t kPeApplicationMask = 0x70;
constexpr uint8_t kPePcrel = 0x10;
constexpr uint8_t kPeDatarel = 0x30;
constexpr uint8_t kPeAligned = 0x50;
constexpr uint8_t kPeIndirect = 0x80;
constexpr uint8_t kPeOmit = 0xff;

}  // namespace xref
