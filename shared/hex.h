// Hex spelling of addresses and bytes, one way everywhere.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace xref {

std::string to_hex(uint64_t value);                     // "0x2c5e3c0"
void append_hex(std::string& out, uint64_t value);       // the same, appended
std::string to_hex_bytes(std::span<const uint8_t> bytes);  // "a1b2..." lowercase, no prefix

}  // namespace xref
