// Function ranges from .eh_frame FDEs, for images without a symbol table.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "result.h"

namespace xref {

struct FdeRange {
  uint64_t start = 0;  // static VA of the first instruction covered
  uint64_t size = 0;

  friend bool operator==(const FdeRange&, const FdeRange&) = default;
};

// Parses an .eh_frame section whose bytes are `section` and whose first byte
// sits at static VA `section_va`. Returns the non-empty FDE ranges sorted by
// start. Handles the FDE pointer encodings GCC, Clang and rustc emit: absptr,
// udata/sdata 2/4/8, uleb128/sleb128, absolute or pcrel. Malformed input, an
// unknown CIE version or augmentation letter, and encodings that need a base
// .eh_frame cannot give (textrel, datarel, funcrel, aligned) or make no sense
// for a code address (indirect, omit) all fail with ErrorCode::elf_error and a
// message naming the byte offset in the section.
Result<std::vector<FdeRange>> parse_eh_frame(std::span<const uint8_t> section, uint64_t section_va);

}  // namespace xref
