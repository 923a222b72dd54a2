#include "sites/probe_site_check.h"

#include <algorithm>

#include "hex.h"
#include "sites/function_names.h"

namespace xref {

Result<void> check_probe_site(const ElfImage& image, const FunctionCode& code, uint64_t va, const std::string& what) {
  auto instruction = check_instruction_start(code, va);
  if (!instruction) {
    Error error = instruction.error();
    error.message = what + ": " + error.message;
    return error;
  }
  auto bytes = image.bytes_at(va, 1);
  if (!bytes) {
    return make_error(ErrorCode::address_unmapped, what + ": " + to_hex(va) + " is not file-backed code");
  }
  if ((*bytes)[0] == 0xcc) {
    return make_error(ErrorCode::invalid_argument, what + ": the byte at " + to_hex(va) + " is already int3",
                      "pick another address; xref will not stack a uprobe on a breakpoint instruction");
  }
  return {};
}

std::optional<Error> data_not_code(const ElfImage& image, uint64_t va, const std::string& what) {
  constexpr uint64_t kSectionAllocated = 0x2;  // SHF_ALLOC
  const auto segment = std::find_if(image.segments().begin(), image.segments().end(),
                                    [va](const LoadSegment& each) { return each.contains_va(va); });
  if (segment == image.segments().end() || segment->executable()) return std::nullopt;
  std::string place = "a segment without execute permission";
  for (const SectionInfo& section : image.sections()) {
    if ((section.flags & kSectionAllocated) && va >= section.addr && va - section.addr < section.size) {
      place = section.name;
    }
  }
  return make_error(ErrorCode::not_an_instruction, what + " " + to_hex(va) + " is in " + place + ", not code",
                    "give a function's name or the static VA of its first instruction, as " + nm_command(image) +
                        " prints them");
}

bool kernel_refuses_uprobe(const ElfImage& image, uint64_t va) {
  // Legacy prefixes come first, in any order.
  auto bytes = image.bytes_at(va, 4);
  if (!bytes) return false;
  for (uint8_t byte : *bytes) {
    switch (byte) {
      case 0xf0: case 0x26: case 0x2e: case 0x36: case 0x3e: return true;
      // EVEX (AVX-512; 0x62 is no instruction of its own in 64-bit mode):
      // kernel 6.18 takes the uprobe, but the instruction run out of line
      // computes a wrong result (measured: every call of __strchr_evex,
      // whose first instruction is vpbroadcastb %esi,%ymm17, returned
      // wrong with a uprobe on it). Never put one there.
      case 0x62: return true;
      case 0x64: case 0x65: case 0x66: case 0x67: case 0xf2: case 0xf3: continue;  // other prefixes
      default: return false;
    }
  }
  return false;
}

bool on_five_byte_nop(const ElfImage& image, uint64_t va) {
  static constexpr uint8_t kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
  auto bytes = image.bytes_at(va, 5);
  return bytes && std::equal(bytes->begin(), bytes->end(), kNop5);
}

}  // namespace xref
