#include "watch/data_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

namespace xref {
namespace {

template <typename T>
bool read_at(std::span<const uint8_t> file, uint64_t offset, T& out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, file.data() + offset, sizeof(T));
  return true;
}

// The objects of one symbol table section (SHT_SYMTAB or SHT_DYNSYM).
void read_objects(std::span<const uint8_t> file, const Elf64_Ehdr& header, uint32_t type,
                  std::vector<DataSymbol>& out) {
  for (uint32_t index = 0; index < header.e_shnum; ++index) {
    Elf64_Shdr section;
    if (!read_at(file, header.e_shoff + uint64_t{index} * header.e_shentsize, section)) return;
    if (section.sh_type != type || section.sh_entsize != sizeof(Elf64_Sym)) continue;
    Elf64_Shdr strings;
    if (!read_at(file, header.e_shoff + uint64_t{section.sh_link} * header.e_shentsize, strings)) continue;
    const uint64_t count = section.sh_size / sizeof(Elf64_Sym);
    for (uint64_t at = 1; at < count; ++at) {
      Elf64_Sym symbol;
      if (!read_at(file, section.sh_offset + at * sizeof(Elf64_Sym), symbol)) break;
      if (ELF64_ST_TYPE(symbol.st_info) != STT_OBJECT || symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0) continue;
      const uint64_t name_at = strings.sh_offset + symbol.st_name;
      if (symbol.st_name >= strings.sh_size || name_at >= file.size()) continue;
      const char* name = reinterpret_cast<const char*>(file.data() + name_at);
      const size_t limit = std::min<uint64_t>(strings.sh_size - symbol.st_name, file.size() - name_at);
      out.push_back({std::string(name, strnlen(name, limit)), symbol.st_value, symbol.st_size});
    }
  }
}

}  // namespace

std::vector<DataSymbol> data_symbols(const ElfImage& image) {
  std::vector<DataSymbol> symbols;
  const std::span<const uint8_t> file = image.file_bytes();
  Elf64_Ehdr header;
  if (!read_at(file, 0, header) || header.e_shentsize != sizeof(Elf64_Shdr)) return symbols;
  read_objects(file, header, SHT_SYMTAB, symbols);
  read_objects(file, header, SHT_DYNSYM, symbols);
  std::sort(symbols.begin(), symbols.end(), [](const DataSymbol& a, const DataSymbol& b) {
    return std::tie(a.static_va, a.name) < std::tie(b.static_va, b.name);
  });
  symbols.erase(std::unique(symbols.begin(), symbols.end(),
                            [](const DataSymbol& a, const DataSymbol& b) {
                              return a.static_va == b.static_va && a.name == b.name;
                            }),
                symbols.end());
  return symbols;
}

std::vector<DataSymbol> data_symbols_named(const std::vector<DataSymbol>& symbols, std::string_view name) {
  std::vector<DataSymbol> named;
  for (const DataSymbol& symbol : symbols) {
    if (symbol.name == name) named.push_back(symbol);
  }
  return named;
}

const DataSymbol* data_symbol_containing(const std::vector<DataSymbol>& symbols, uint64_t static_va) {
  const DataSymbol* best = nullptr;
  for (const DataSymbol& symbol : symbols) {
    if (symbol.static_va > static_va) break;
    if (static_va - symbol.static_va < std::max<uint64_t>(symbol.size, 1)) best = &symbol;
  }
  return best;
}

}  // namespace xref
