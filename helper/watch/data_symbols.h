// The data objects an ELF image names (STT_OBJECT in .symtab, else
// .dynsym): what `xref watch g_total` finds, and how a watched range is
// named ("g_config+0x10"). Kept small and apart so that a finder of the
// sites room can replace it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "elf_image.h"

namespace xref {

struct DataSymbol {
  std::string name;
  uint64_t static_va = 0;
  uint64_t size = 0;
};

// Every object symbol of `image` (static VA order, one per start and name).
std::vector<DataSymbol> data_symbols(const ElfImage& image);

// The objects named `name` (several when static objects of several files share it).
std::vector<DataSymbol> data_symbols_named(const std::vector<DataSymbol>& symbols, std::string_view name);

// The object holding `static_va`, or nullptr.
const DataSymbol* data_symbol_containing(const std::vector<DataSymbol>& symbols, uint64_t static_va);

}  // namespace xref
