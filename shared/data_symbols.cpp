#include "data_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "demangle.h"

namespace xref {
namespace {

template <typename T>
bool read_struct(std::span<const uint8_t> file, uint64_t offset, T& out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, file.data() + offset, sizeof(T));
  return true;
}

std::string_view string_at(std::span<const uint8_t> file, const Elf64_Shdr& strings, uint64_t index) {
  if (strings.sh_offset > file.size() || strings.sh_size > file.size() - strings.sh_offset ||
      index >= strings.sh_size) {
    return {};
  }
  const char* begin = reinterpret_cast<const char*>(file.data() + strings.sh_offset) + index;
  return std::string_view(begin, strnlen(begin, strings.sh_size - index));
}

// The data objects of one ELF file's .symtab (and .dynsym unless
// symtab_only), read from its bytes.
void read_data_objects(std::span<const uint8_t> file, bool symtab_only, std::vector<DataSymbol>& out) {
  Elf64_Ehdr header;
  if (!read_struct(file, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!read_struct(file, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return;
  }
  auto section_name = [&](size_t index) -> std::string {
    if (index >= sections.size() || header.e_shstrndx >= sections.size()) return {};
    return std::string(string_at(file, sections[header.e_shstrndx], sections[index].sh_name));
  };
  for (const Elf64_Shdr& table : sections) {
    const bool symtab = table.sh_type == SHT_SYMTAB;
    if (!symtab && (symtab_only || table.sh_type != SHT_DYNSYM)) continue;
    if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      if (!read_struct(file, table.sh_offset + at, symbol)) break;
      const int type = ELF64_ST_TYPE(symbol.st_info);
      if (type != STT_OBJECT && type != STT_TLS) continue;
      if (symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= SHN_LORESERVE) continue;  // undefined, abs, common
      // Not loaded (.gnu.warning's link-time messages): no address to watch.
      if (symbol.st_shndx >= sections.size() || (sections[symbol.st_shndx].sh_flags & SHF_ALLOC) == 0) continue;
      // An executable's .symtab spells a copy-relocated object with its
      // version ("stdout@GLIBC_2.2.5"); users name it without.
      std::string_view name = string_at(file, strings, symbol.st_name);
      name = name.substr(0, name.find('@'));
      if (name.empty()) continue;
      DataSymbol data;
      data.name = std::string(name);
      data.start = symbol.st_value;
      data.size = symbol.st_size;
      data.section = section_name(symbol.st_shndx);
      data.tls = type == STT_TLS;
      data.local = ELF64_ST_BIND(symbol.st_info) == STB_LOCAL;
      data.source = symtab ? SymbolSource::symtab : SymbolSource::dynsym;
      out.push_back(std::move(data));
    }
  }
}

// Which of two symbols at one start names it: a global, then .symtab's,
// then the larger (an object's default version is its newest, largest one).
auto preference(const DataSymbol& symbol) {
  return std::make_tuple(symbol.start, symbol.local, symbol.source != SymbolSource::symtab, std::string_view(symbol.name),
                         ~symbol.size);
}

}  // namespace

DataSymbols DataSymbols::read(const ElfImage& image) {
  DataSymbols result;
  auto& symbols = result.symbols_;
  read_data_objects(image.file_bytes(), false, symbols);
  if (!image.symbols_path().empty() && image.symbols_path() != image.path()) {
    if (auto debug = MappedFile::open(image.symbols_path())) read_data_objects((*debug)->bytes(), true, symbols);
  }
  // One entry per name, start and size: .symtab's where both tables have
  // it. Old versions of one object keep theirs (libc's sys_errlist@GLIBC_2.2.5
  // has 1000 bytes, its default version 1080).
  std::sort(symbols.begin(), symbols.end(), [](const DataSymbol& a, const DataSymbol& b) {
    return std::tie(a.start, a.name, a.size, a.source) < std::tie(b.start, b.name, b.size, b.source);
  });
  symbols.erase(std::unique(symbols.begin(), symbols.end(),
                            [](const DataSymbol& a, const DataSymbol& b) {
                              return a.start == b.start && a.name == b.name && a.size == b.size;
                            }),
                symbols.end());
  std::sort(symbols.begin(), symbols.end(),
            [](const DataSymbol& a, const DataSymbol& b) { return preference(a) < preference(b); });
  result.max_end_.reserve(symbols.size());
  uint64_t max_end = 0;
  for (const DataSymbol& symbol : symbols) {
    if (!symbol.tls) max_end = std::max(max_end, symbol.end());
    result.max_end_.push_back(max_end);
  }
  return result;
}

std::vector<const DataSymbol*> DataSymbols::named(std::string_view name) const {
  std::vector<const DataSymbol*> found;
  const std::string identifier = literal_identifier(name);
  for (const DataSymbol& symbol : symbols_) {
    if (symbol.name == name) {
      found.push_back(&symbol);
    } else if (symbol.name.rfind("_Z", 0) == 0 && !identifier.empty() &&
               symbol.name.find(identifier) != std::string::npos && demangle(symbol.name) == name) {
      found.push_back(&symbol);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const DataSymbol* a, const DataSymbol* b) {
    return std::make_tuple(a->local, a->source != SymbolSource::symtab, ~a->size) <
           std::make_tuple(b->local, b->source != SymbolSource::symtab, ~b->size);
  });
  return found;
}

const DataSymbol* DataSymbols::containing(uint64_t va) const {
  // Objects do not nest, but a sized one may precede later zero-sized
  // labels: the nearest start at or before va whose object holds va wins,
  // and the first symbol at a start is the preferred name.
  auto after = std::upper_bound(symbols_.begin(), symbols_.end(), va,
                                [](uint64_t value, const DataSymbol& symbol) { return value < symbol.start; });
  for (size_t i = static_cast<size_t>(after - symbols_.begin()); i > 0;) {
    --i;
    const DataSymbol& symbol = symbols_[i];
    if (symbol.start < va && max_end_[i] <= va) break;  // nothing at or before i reaches va
    if (symbol.tls || !symbol.contains(va)) continue;
    while (i > 0 && symbols_[i - 1].start == symbol.start && !symbols_[i - 1].tls &&
           symbols_[i - 1].contains(va)) {
      --i;
    }
    return &symbols_[i];
  }
  return nullptr;
}

std::string data_symbol_place(const DataSymbol& symbol, uint64_t va) {
  if (va == symbol.start) return symbol.name;
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(va - symbol.start));
  return symbol.name + offset;
}

}  // namespace xref
