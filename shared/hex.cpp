#include "hex.h"

namespace xref {

void append_hex(std::string& out, uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  char buffer[18];
  int position = 18;
  do {
    buffer[--position] = digits[value & 0xf];
    value >>= 4;
  } while (value != 0);
  buffer[--position] = 'x';
  buffer[--position] = '0';
  out.append(buffer + position, buffer + 18);
}

std::string to_hex(uint64_t value) {
  std::string text;
  append_hex(text, value);
  return text;
}

std::string to_hex_bytes(std::span<const uint8_t> bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t byte : bytes) {
    text.push_back(digits[byte >> 4]);
    text.push_back(digits[byte & 0xf]);
  }
  return text;
}

}  // namespace xref
