#include "elf_notes.h"

#include <cstring>

#include "hex.h"

namespace xref {
namespace {

constexpr uint32_t kNoteGnuBuildId = 3;

uint32_t read_u32(const uint8_t* p) {
  uint32_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace

std::string find_build_id(std::span<const uint8_t> file, uint64_t begin, uint64_t size) {
  if (begin > file.size() || size > file.size() - begin) return {};
  uint64_t position = begin;
  const uint64_t end = begin + size;
  while (end - position >= 12) {
    const uint32_t name_size = read_u32(file.data() + position);
    const uint32_t desc_size = read_u32(file.data() + position + 4);
    const uint32_t type = read_u32(file.data() + position + 8);
    const uint64_t name_at = position + 12;
    const uint64_t desc_at = name_at + ((name_size + 3u) & ~3u);
    const uint64_t next = desc_at + ((desc_size + 3u) & ~3u);
    if (next > end) break;
    if (type == kNoteGnuBuildId && name_size == 4 && std::memcmp(file.data() + name_at, "GNU", 4) == 0) {
      return to_hex_bytes(file.subspan(desc_at, desc_size));
    }
    position = next;
  }
  return {};
}

}  // namespace xref
