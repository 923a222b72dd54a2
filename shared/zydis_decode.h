// One instruction fully decoded by Zydis (operands, hidden ones included):
// what x86_decoder.cpp and x86_store.cpp both start from. Only .cpp files
// include it, so Zydis's types stay out of the headers.
#pragma once

#include <Zydis/Zydis.h>

#include <array>
#include <cstdint>
#include <span>

namespace xref {

struct ZydisFull {
  ZydisDecodedInstruction instruction;
  std::array<ZydisDecodedOperand, ZYDIS_MAX_OPERAND_COUNT> operands;
};

// False when Zydis cannot decode the bytes at their start.
inline bool zydis_decode_full(const ZydisDecoder& decoder, std::span<const uint8_t> bytes, ZydisFull& out) {
  return ZYAN_SUCCESS(
      ZydisDecoderDecodeFull(&decoder, bytes.data(), bytes.size(), &out.instruction, out.operands.data()));
}

}  // namespace xref
