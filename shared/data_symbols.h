// The data objects an ELF image names (STT_OBJECT and STT_TLS symbols of
// .symtab and .dynsym, and of the separate debug file's .symtab), for `xref
// watch ADDR`: a name to its static VA and size ("g_total"), and a static VA
// to the object holding it ("g_config+0x10"). Static VAs: add the load bias
// for a live address. A TLS symbol's start is its offset in the module's TLS
// block, not an address.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "elf_image.h"
#include "symbol_table.h"

namespace xref {

struct DataSymbol {
  std::string name;     // as stored (mangled for C++), without a "@VERSION"
  uint64_t start = 0;   // static VA; STT_TLS: offset in the TLS block
  uint64_t size = 0;    // 0 when the symbol gives none
  std::string section;  // ".bss", ".data", ".rodata", ".tbss", ...
  bool tls = false;
  bool local = false;   // STB_LOCAL (a file's static)
  SymbolSource source = SymbolSource::symtab;  // symtab or dynsym

  uint64_t end() const { return start + size; }
  bool contains(uint64_t va) const { return va == start || (va > start && va - start < size); }
};

class DataSymbols {
 public:
  // Every defined STT_OBJECT and STT_TLS symbol of the image in a loaded
  // (SHF_ALLOC) section, sorted by start; one entry per name, start and
  // size (.symtab's where both tables have it).
  static DataSymbols read(const ElfImage& image);

  const std::vector<DataSymbol>& symbols() const { return symbols_; }
  // The objects a user's name means: the stored name, or the demangled one
  // of a C++ object ("ns::g_total"). Globals before locals, then the
  // larger; several when files define statics of one name or an object has
  // old versions.
  std::vector<const DataSymbol*> named(std::string_view name) const;
  // The object (not TLS) holding static VA `va`, or nullptr; among several
  // (aliases) a global one, then .symtab's, then the first by name.
  const DataSymbol* containing(uint64_t va) const;

 private:
  std::vector<DataSymbol> symbols_;  // by start, then preference
  std::vector<uint64_t> max_end_;    // the highest end among symbols_[0..i] (TLS left out)
};

// "g_config+0x10", or the name alone at the object's start.
std::string data_symbol_place(const DataSymbol& symbol, uint64_t va);

}  // namespace xref
