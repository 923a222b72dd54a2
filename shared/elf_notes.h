// ELF notes: the GNU build-id.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace xref {

// Walks the ELF notes in [begin, begin+size) of `file` for NT_GNU_BUILD_ID;
// its bytes as lowercase hex, or "" when there is none.
std::string find_build_id(std::span<const uint8_t> file, uint64_t begin, uint64_t size);

}  // namespace xref
