#include "symbol_table.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "elf_notes.h"

namespace xref {

const char* symbol_source_name(SymbolSource source) {
  switch (source) {
    case SymbolSource::symtab: return "symtab";
    case SymbolSource::dynsym: return "dynsym";
    case SymbolSource::plt: return "plt";
    case SymbolSource::eh_frame_fde: return "eh_frame_fde";
  }
  return "unknown";
}

namespace {

constexpr uint64_t kX86_64JumpSlot = 7;
constexpr uint64_t kX86_64GlobDat = 6;
constexpr uint64_t kX86_64IRelative = 37;
constexpr const char* kDebugDirectory = "/usr/lib/debug";
// SymbolEntry::rank: the keys that decide among the names of one start
// before their spelling does, as perf's choose_best_symbol orders them: a
// sized symbol over an unsized one, a non-weak over a weak one, a global
// over a non-global one; then, after the spelling (best_name), .symtab over
// .dynsym.
constexpr uint8_t kRankUnsized = 8;
constexpr uint8_t kRankWeak = 4;
constexpr uint8_t kRankNotGlobal = 2;
constexpr uint8_t kRankDynsym = 1;
constexpr uint8_t kRankPlt = 16;

uint8_t symbol_rank(const Elf64_Sym& symbol, bool symtab) {
  const int binding = ELF64_ST_BIND(symbol.st_info);
  uint8_t rank = symtab ? 0 : kRankDynsym;
  if (symbol.st_size == 0) rank |= kRankUnsized;
  if (binding == STB_WEAK) rank |= kRankWeak;
  if (binding != STB_GLOBAL) rank |= kRankNotGlobal;
  return rank;
}

size_t leading_underscores(std::string_view name) {
  const size_t first = name.find_first_not_of('_');
  return first == std::string_view::npos ? name.size() : first;
}

struct MemoryElf {
  Elf* elf = nullptr;
  explicit MemoryElf(std::span<const uint8_t> file) {
    elf_version(EV_CURRENT);
    elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(file.data())), file.size());
    if (elf != nullptr && elf_kind(elf) != ELF_K_ELF) {
      elf_end(elf);
      elf = nullptr;
    }
  }
  ~MemoryElf() {
    if (elf != nullptr) elf_end(elf);
  }
  MemoryElf(const MemoryElf&) = delete;
  MemoryElf& operator=(const MemoryElf&) = delete;
};

// Version names of .gnu.version_d by index, for the symbols of an older,
// non-default version ("memcpy@GLIBC_2.2.5" beside the default "memcpy").
std::map<uint16_t, std::string> version_names(Elf* elf) {
  std::map<uint16_t, std::string> names;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_GNU_verdef) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr) continue;
    size_t offset = 0;
    for (size_t count = 0; count < header.sh_info && count < 4096; ++count) {
      GElf_Verdef definition;
      GElf_Verdaux auxiliary;
      if (gelf_getverdef(data, static_cast<int>(offset), &definition) == nullptr) break;
      if (gelf_getverdaux(data, static_cast<int>(offset + definition.vd_aux), &auxiliary) != nullptr) {
        if (const char* name = elf_strptr(elf, header.sh_link, auxiliary.vda_name)) {
          names[definition.vd_ndx] = name;
        }
      }
      if (definition.vd_next == 0) break;
      offset += definition.vd_next;
    }
  }
  return names;
}

// The .gnu.version entries of the symbol table at `symbols_index`, or null.
Elf_Data* version_table(Elf* elf, size_t symbols_index) {
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) != nullptr && header.sh_type == SHT_GNU_versym &&
        header.sh_link == symbols_index) {
      return elf_getdata(section, nullptr);
    }
  }
  return nullptr;
}

std::map<uint64_t, std::string> got_slot_names(const std::vector<GotSlot>& slots) {
  std::map<uint64_t, std::string> names;
  for (const GotSlot& slot : slots) {
    if (slot.kind != GotSlot::Kind::irelative) names[slot.va] = slot.symbol;
  }
  return names;
}

bool has_section(Elf* elf, std::string_view wanted) {
  size_t string_section = 0;
  if (elf_getshdrstrndx(elf, &string_section) != 0) return false;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    const char* name = elf_strptr(elf, string_section, header.sh_name);
    if (name != nullptr && wanted == name) return true;
  }
  return false;
}

}  // namespace

std::vector<GotSlot> read_got_slots(std::span<const uint8_t> file, bool with_dynamic) {
  std::vector<GotSlot> slots;
  MemoryElf handle(file);
  if (handle.elf == nullptr) return slots;
  Elf* elf = handle.elf;
  Elf_Scn* section = nullptr;
  size_t string_section = 0;
  elf_getshdrstrndx(elf, &string_section);
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_RELA) continue;
    const char* section_name = elf_strptr(elf, string_section, header.sh_name);
    const bool plt_relocations = section_name != nullptr && std::string_view(section_name) == ".rela.plt";
    if (!plt_relocations && !with_dynamic) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    Elf_Scn* symbols_section = elf_getscn(elf, header.sh_link);
    GElf_Shdr symbols_header;
    if (data == nullptr || symbols_section == nullptr ||
        gelf_getshdr(symbols_section, &symbols_header) == nullptr || header.sh_entsize == 0) {
      continue;
    }
    Elf_Data* symbols = elf_getdata(symbols_section, nullptr);
    if (symbols == nullptr) continue;
    const size_t count = header.sh_size / header.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela relocation;
      if (gelf_getrela(data, static_cast<int>(i), &relocation) == nullptr) continue;
      const uint64_t type = GELF_R_TYPE(relocation.r_info);
      if (type == kX86_64IRelative) {
        GotSlot slot;
        slot.kind = GotSlot::Kind::irelative;
        slot.va = relocation.r_offset;
        slot.resolver = static_cast<uint64_t>(relocation.r_addend);
        slots.push_back(std::move(slot));
        continue;
      }
      if (type != kX86_64JumpSlot && type != kX86_64GlobDat) continue;
      GElf_Sym symbol;
      if (gelf_getsym(symbols, static_cast<int>(GELF_R_SYM(relocation.r_info)), &symbol) == nullptr) {
        continue;
      }
      const char* name = elf_strptr(elf, symbols_header.sh_link, symbol.st_name);
      if (name == nullptr || *name == '\0') continue;
      GotSlot slot;
      slot.kind = type == kX86_64JumpSlot ? GotSlot::Kind::jump_slot : GotSlot::Kind::glob_dat;
      slot.va = relocation.r_offset;
      slot.symbol = name;
      slots.push_back(std::move(slot));
    }
  }
  return slots;
}

std::string debug_file_of(const std::string& build_id) {
  if (build_id.size() < 4) return {};
  const std::string path =
      std::string(kDebugDirectory) + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  auto file = MappedFile::open(path);
  if (!file) return {};
  MemoryElf handle((*file)->bytes());
  if (handle.elf == nullptr) return {};
  std::string debug_build_id;
  bool has_symtab = false;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(handle.elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    if (header.sh_type == SHT_NOTE && debug_build_id.empty()) {
      if (Elf_Data* data = elf_getdata(section, nullptr); data != nullptr && data->d_buf != nullptr) {
        debug_build_id = find_build_id({static_cast<const uint8_t*>(data->d_buf), data->d_size}, 0, data->d_size);
      }
    } else if (header.sh_type == SHT_SYMTAB) {
      has_symtab = true;
    }
  }
  return debug_build_id == build_id && has_symtab ? path : "";
}

namespace {

constexpr size_t kSymbolsPerRead = 4096;
constexpr size_t kStringChunk = 64 * 1024;
constexpr size_t kLongestName = 1 << 20;  // a longer "name" is cut there

}  // namespace

void SymbolTable::add_copied(std::string name, SymbolEntry entry) {
  entry.strings = kCopiedNames;
  entry.name = static_cast<uint32_t>(copied_names_.size());
  copied_names_.push_back(std::move(name));
  entries_.push_back(entry);
}

void SymbolTable::read_tables(const std::shared_ptr<const MappedFile>& file, bool symtab_only) {
  const std::span<const uint8_t> bytes = file->bytes();
  MemoryElf handle(bytes);
  if (handle.elf == nullptr) return;
  Elf* elf = handle.elf;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    const bool symtab = header.sh_type == SHT_SYMTAB;
    if (!symtab && (symtab_only || header.sh_type != SHT_DYNSYM)) continue;
    GElf_Shdr strings_header;
    Elf_Scn* strings_section = elf_getscn(elf, header.sh_link);
    if (header.sh_entsize != sizeof(Elf64_Sym) || strings_section == nullptr ||
        gelf_getshdr(strings_section, &strings_header) == nullptr || strings_header.sh_type != SHT_STRTAB ||
        strings_header.sh_offset > bytes.size() || strings_header.sh_size > bytes.size() - strings_header.sh_offset ||
        strings_header.sh_size > UINT32_MAX || header.sh_offset > bytes.size() ||
        header.sh_size > bytes.size() - header.sh_offset || strings_.size() >= kCopiedNames) {
      continue;
    }
    const auto strings_index = static_cast<uint8_t>(strings_.size());
    strings_.push_back(Strings{file, strings_header.sh_offset, strings_header.sh_size});
    const SymbolSource source = symtab ? SymbolSource::symtab : SymbolSource::dynsym;
    Elf_Data* versions = symtab ? nullptr : version_table(elf, elf_ndxscn(section));
    const auto version_name = versions != nullptr ? version_names(elf) : std::map<uint16_t, std::string>();
    const size_t count = header.sh_size / sizeof(Elf64_Sym);
    std::vector<Elf64_Sym> symbols(std::min(count, kSymbolsPerRead));
    for (size_t first = 0; first < count; first += symbols.size()) {
      const size_t batch = std::min(symbols.size(), count - first);
      const std::span<uint8_t> into(reinterpret_cast<uint8_t*>(symbols.data()), batch * sizeof(Elf64_Sym));
      if (file->read_at(header.sh_offset + first * sizeof(Elf64_Sym), into) != into.size()) break;
      for (size_t k = 0; k < batch; ++k) {
        const Elf64_Sym& symbol = symbols[k];
        const int type = ELF64_ST_TYPE(symbol.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
        if (symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0) continue;
        if (symbol.st_name == 0 || symbol.st_name >= strings_header.sh_size) continue;
        SymbolEntry entry;
        entry.start = symbol.st_value;
        entry.size = symbol.st_size;
        entry.source = source;
        entry.ifunc = type == STT_GNU_IFUNC;
        entry.strings = strings_index;
        entry.name = symbol.st_name;
        entry.rank = symbol_rank(symbol, symtab);
        GElf_Versym version = 0;
        const int i = static_cast<int>(first + k);
        if (versions != nullptr && gelf_getversym(versions, i, &version) != nullptr && (version & 0x8000) != 0) {
          // A hidden, older version: named as nm -D names it, so that the
          // plain name means the default version.
          auto found = version_name.find(static_cast<uint16_t>(version & 0x7fff));
          if (found != version_name.end()) {
            add_copied(std::string(name_of(entry)) + "@" + found->second, entry);
            continue;
          }
        }
        entries_.push_back(entry);
      }
    }
  }
}

std::string_view SymbolTable::name_of(const SymbolEntry& entry) const {
  if (entry.strings == kCopiedNames) return copied_names_[entry.name];
  const Strings& strings = strings_[entry.strings];
  const char* begin = reinterpret_cast<const char*>(strings.file->bytes().data() + strings.offset) + entry.name;
  return std::string_view(begin, strnlen(begin, strings.size - entry.name));
}

size_t SymbolTable::best_name(const SymbolGroup& group) const {
  const auto names = names_of(group);
  size_t best = 0;
  // Entries are sorted by rank, so the candidates are the first ones whose
  // rank differs from the best only in the table it comes from.
  auto before_spelling = [](uint8_t rank) { return rank & static_cast<uint8_t>(~kRankDynsym); };
  for (size_t i = 1; i < names.size() && before_spelling(names[i].rank) == before_spelling(names[0].rank); ++i) {
    const std::string_view candidate = name_of(names[i]);
    const std::string_view chosen = name_of(names[best]);
    const size_t candidate_underscores = leading_underscores(candidate);
    const size_t chosen_underscores = leading_underscores(chosen);
    if (candidate_underscores != chosen_underscores) {
      if (candidate_underscores < chosen_underscores) best = i;
      continue;
    }
    if (candidate.size() != chosen.size()) {
      if (candidate.size() > chosen.size()) best = i;
      continue;
    }
    if (names[i].rank < names[best].rank) best = i;
  }
  return best;
}

std::shared_ptr<const SymbolTable> SymbolTable::read(std::shared_ptr<const MappedFile> file,
                                                     const std::string& debug_path) {
  auto table = std::make_shared<SymbolTable>();
  table->read_tables(file, false);
  if (!debug_path.empty()) {
    if (auto debug = MappedFile::open(debug_path)) table->read_tables(*debug, true);
  }

  // PLT stubs jump through a GOT slot with `jmp *disp32(%rip)` (ff 25),
  // possibly after endbr64 or a bnd prefix; the slot's relocation names the target.
  MemoryElf handle(file->bytes());
  if (handle.elf != nullptr) {
    const auto slots = got_slot_names(read_got_slots(file->bytes(), has_section(handle.elf, ".plt.got")));
    size_t string_section = 0;
    elf_getshdrstrndx(handle.elf, &string_section);
    Elf_Scn* section = nullptr;
    const std::span<const uint8_t> bytes = file->bytes();
    while ((section = elf_nextscn(handle.elf, section)) != nullptr) {
      GElf_Shdr plt;
      if (gelf_getshdr(section, &plt) == nullptr || plt.sh_type == SHT_NOBITS) continue;
      const char* name = elf_strptr(handle.elf, string_section, plt.sh_name);
      if (name == nullptr) continue;
      const std::string_view plt_name = name;
      if (plt_name != ".plt" && plt_name != ".plt.sec" && plt_name != ".plt.got") continue;
      const uint64_t entry_size = plt_name == ".plt.got" ? 8 : 16;
      if (plt.sh_offset > bytes.size() || plt.sh_size > bytes.size() - plt.sh_offset) continue;
      const uint8_t* code = bytes.data() + plt.sh_offset;
      for (uint64_t entry = 0; entry + entry_size <= plt.sh_size; entry += entry_size) {
        for (uint64_t i = entry; i + 6 <= entry + entry_size; ++i) {
          if (code[i] != 0xff || code[i + 1] != 0x25) continue;
          int32_t displacement;
          std::memcpy(&displacement, code + i + 2, sizeof displacement);
          const uint64_t slot = plt.sh_addr + i + 6 + static_cast<uint64_t>(static_cast<int64_t>(displacement));
          auto found = slots.find(slot);
          if (found == slots.end()) break;
          SymbolEntry stub;
          stub.start = plt.sh_addr + entry;
          stub.size = entry_size;
          stub.source = SymbolSource::plt;
          stub.rank = kRankPlt;
          table->add_copied(found->second + "@plt", stub);
          break;
        }
      }
    }
  }
  table->index();
  return table;
}

std::vector<size_t> SymbolTable::groups_naming(std::string_view text) const {
  std::vector<size_t> found;
  auto take = [&](uint32_t entry) {
    const uint64_t start = entries_[entry].start;
    found.push_back(first_group_after(start) - 1);
  };
  std::vector<uint8_t> buffer;
  uint8_t current = kCopiedNames;
  uint64_t buffer_begin = 0;
  uint64_t buffer_end = 0;  // [begin, end) of the current string table in `buffer`
  for (const uint32_t index : by_name_) {
    const SymbolEntry& entry = entries_[index];
    if (entry.strings == kCopiedNames) {
      if (copied_names_[entry.name].find(text) != std::string::npos) take(index);
      continue;
    }
    const Strings& strings = strings_[entry.strings];
    if (entry.strings != current) {
      current = entry.strings;
      buffer_begin = buffer_end = 0;
    }
    const uint64_t at = entry.name;
    std::string_view name;
    for (size_t want = kStringChunk;; want *= 2) {
      if (at >= buffer_begin && at < buffer_end) {
        const uint8_t* p = buffer.data() + (at - buffer_begin);
        const void* nul = std::memchr(p, 0, buffer_end - at);
        if (nul != nullptr || buffer_end == strings.size || buffer_end - at >= kLongestName) {
          const size_t length = nul != nullptr ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - p)
                                               : static_cast<size_t>(buffer_end - at);
          name = std::string_view(reinterpret_cast<const char*>(p), length);
          break;
        }
      }
      buffer.resize(std::max(want, buffer.size()));
      const size_t length = static_cast<size_t>(std::min<uint64_t>(buffer.size(), strings.size - at));
      const size_t got = strings.file->read_at(strings.offset + at, std::span<uint8_t>(buffer.data(), length));
      buffer_begin = at;
      buffer_end = at + got;
      if (got == 0) break;
    }
    if (!name.empty() && name.find(text) != std::string_view::npos) take(index);
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

void SymbolTable::index() {
  std::stable_sort(entries_.begin(), entries_.end(), [](const SymbolEntry& a, const SymbolEntry& b) {
    return a.start != b.start ? a.start < b.start : a.rank < b.rank;
  });
  groups_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const SymbolEntry& entry = entries_[i];
    if (groups_.empty() || groups_.back().start != entry.start) {
      groups_.push_back(SymbolGroup{entry.start, entry.size, static_cast<uint32_t>(i), 0, false});
    }
    SymbolGroup& group = groups_.back();
    ++group.count;
    if (group.size == 0) group.size = entry.size;  // an alias may know the size the best name lacks
    group.ifunc = group.ifunc || entry.ifunc;
  }
  by_name_.resize(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) by_name_[i] = static_cast<uint32_t>(i);
  std::sort(by_name_.begin(), by_name_.end(), [&](uint32_t a, uint32_t b) {
    return entries_[a].strings != entries_[b].strings ? entries_[a].strings < entries_[b].strings
                                                      : entries_[a].name < entries_[b].name;
  });
  max_end_.resize(groups_.size());
  uint64_t highest = 0;
  for (size_t i = 0; i < groups_.size(); ++i) {
    highest = std::max(highest, groups_[i].start + std::max<uint64_t>(groups_[i].size, 1));
    max_end_[i] = highest;
  }
}

size_t SymbolTable::first_group_after(uint64_t va) const {
  return static_cast<size_t>(
      std::upper_bound(groups_.begin(), groups_.end(), va,
                       [](uint64_t value, const SymbolGroup& group) { return value < group.start; }) -
      groups_.begin());
}

std::optional<size_t> SymbolTable::group_containing(uint64_t va) const {
  // Walk back over earlier starts; nothing at or before an index whose
  // max_end_ is at or below va can hold it.
  for (size_t i = first_group_after(va); i > 0;) {
    --i;
    if (max_end_[i] <= va) break;
    const SymbolGroup& group = groups_[i];
    if (va == group.start || (va > group.start && va - group.start < group.size)) return i;
  }
  return std::nullopt;
}

std::optional<size_t> SymbolTable::group_at(uint64_t start) const {
  const size_t after = first_group_after(start);
  if (after > 0 && groups_[after - 1].start == start) return after - 1;
  return std::nullopt;
}

}  // namespace xref
