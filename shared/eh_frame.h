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
};

// Parses an .eh_frame section whose bytes are `section` and whose first byte
// sits at static VA `section_va`. Returns the FDE ranges sorted by start.
// Handles the pointer encodings GCC, Clang and rustc emit (absptr, udata/sdata
// 2/4/8, pcrel, datarel is rejected as unsupported for .eh_frame).
Result<std::vector<FdeRange>> parse_eh_frame(std::span<const uint8_t> section, uint64_t section_va);

}  // namespace xref
