#include "elf_image.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "demangle.h"
#include "eh_frame.h"
#include "hex.h"

namespace xref {

struct ElfImage::Mapping {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data != nullptr && size > 0) munmap(const_cast<uint8_t*>(data), size);
  }
};

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

constexpr uint32_t kNoteGnuBuildId = 3;
constexpr uint64_t kX86_64JumpSlot = 7;
constexpr uint64_t kX86_64GlobDat = 6;
constexpr uint64_t kX86_64IRelative = 37;
constexpr const char* kDebugDirectory = "/usr/lib/debug";

struct ElfHandle {
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf != nullptr) elf_end(elf);
  }
};

Error elf_failure(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::elf_error, path + ": " + what + ": " + elf_errmsg(-1),
                    "check that the file is a complete x86-64 ELF executable or shared object");
}

uint32_t read_u32(const uint8_t* p) {
  uint32_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// Walks ELF notes in [begin, begin+size) of the file for NT_GNU_BUILD_ID.
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
    if (type == kNoteGnuBuildId && name_size == 4 &&
        std::memcmp(file.data() + name_at, "GNU", 4) == 0) {
      return to_hex_bytes(file.subspan(desc_at, desc_size));
    }
    position = next;
  }
  return {};
}

struct SymbolCandidate {
  FunctionSymbol symbol;
  int rank = 0;  // lower wins among symbols at one address
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

void read_symbol_table(Elf* elf, Elf_Scn* section, const GElf_Shdr& header, SymbolSource source,
                       std::vector<SymbolCandidate>& out) {
  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || header.sh_entsize == 0) return;
  Elf_Data* versions = source == SymbolSource::dynsym ? version_table(elf, elf_ndxscn(section)) : nullptr;
  const auto version_name = versions != nullptr ? version_names(elf) : std::map<uint16_t, std::string>();
  const size_t count = header.sh_size / header.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) continue;
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0) continue;
    const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
    if (name == nullptr || *name == '\0') continue;
    SymbolCandidate candidate;
    candidate.symbol.name = name;
    GElf_Versym version = 0;
    if (versions != nullptr && gelf_getversym(versions, static_cast<int>(i), &version) != nullptr &&
        (version & 0x8000) != 0) {
      // A hidden, older version: named as nm -D names it, so that the
      // plain name means the default version.
      auto found = version_name.find(static_cast<uint16_t>(version & 0x7fff));
      if (found != version_name.end()) candidate.symbol.name += "@" + found->second;
    }
    candidate.symbol.demangled = demangle(candidate.symbol.name);
    candidate.symbol.start = symbol.st_value;
    candidate.symbol.size = symbol.st_size;
    candidate.symbol.source = source;
    candidate.symbol.ifunc = type == STT_GNU_IFUNC;
    const int binding = GELF_ST_BIND(symbol.st_info);
    candidate.rank = (source == SymbolSource::symtab ? 0 : 4) + (binding == STB_LOCAL ? 2 : 0) +
                     (symbol.st_size == 0 ? 1 : 0);
    out.push_back(std::move(candidate));
  }
}

// The slots of JUMP_SLOT, GLOB_DAT and IRELATIVE relocations.
// `with_dynamic`: also those of the non-PLT relocations (.rela.dyn); a large
// library has hundreds of thousands of those (libLLVM: 8 MB), so they are
// read only when needed: for .plt.got stubs, and for GOT lookups.
std::vector<GotSlot> read_got_slots(Elf* elf, bool with_dynamic) {
  std::vector<GotSlot> slots;
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

std::map<uint64_t, std::string> got_slot_names(const std::vector<GotSlot>& slots) {
  std::map<uint64_t, std::string> names;
  for (const GotSlot& slot : slots) {
    if (slot.kind != GotSlot::Kind::irelative) names[slot.va] = slot.symbol;
  }
  return names;
}

std::string read_soname(Elf* elf) {
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_DYNAMIC || header.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr) continue;
    for (size_t i = 0; i < header.sh_size / header.sh_entsize; ++i) {
      GElf_Dyn entry;
      if (gelf_getdyn(data, static_cast<int>(i), &entry) == nullptr || entry.d_tag == DT_NULL) break;
      if (entry.d_tag == DT_SONAME) {
        const char* name = elf_strptr(elf, header.sh_link, entry.d_un.d_val);
        return name != nullptr ? name : "";
      }
    }
  }
  return {};
}

// The .symtab of the separate debug file of `build_id` (Debian's
// libc6-dbg and every -dbgsym package install them there), when its
// build-id is the same; the path read, or "" when there is none.
std::string read_debug_symbols(const std::string& build_id, std::vector<SymbolCandidate>& out) {
  if (build_id.size() < 4) return {};
  const std::string path =
      std::string(kDebugDirectory) + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ElfHandle handle;
  handle.elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::string read;
  if (handle.elf != nullptr && elf_kind(handle.elf) == ELF_K_ELF) {
    std::string debug_build_id;
    std::vector<std::pair<Elf_Scn*, GElf_Shdr>> symbol_tables;
    Elf_Scn* section = nullptr;
    while ((section = elf_nextscn(handle.elf, section)) != nullptr) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) == nullptr) continue;
      if (header.sh_type == SHT_NOTE && debug_build_id.empty()) {
        if (Elf_Data* data = elf_getdata(section, nullptr); data != nullptr && data->d_buf != nullptr) {
          debug_build_id = find_build_id({static_cast<const uint8_t*>(data->d_buf), data->d_size}, 0, data->d_size);
        }
      } else if (header.sh_type == SHT_SYMTAB) {
        symbol_tables.emplace_back(section, header);
      }
    }
    if (debug_build_id == build_id && !symbol_tables.empty()) {
      for (const auto& [table, header] : symbol_tables) {
        read_symbol_table(handle.elf, table, header, SymbolSource::symtab, out);
      }
      read = path;
    }
  }
  ::close(fd);
  return read;
}

// PLT stubs jump through a GOT slot with `jmp *disp32(%rip)` (ff 25), possibly
// after endbr64 or a bnd prefix; the slot's relocation names the target.
void read_plt_stubs(std::span<const uint8_t> file, const SectionInfo& plt,
                    const std::map<uint64_t, std::string>& slots, uint64_t entry_size,
                    std::vector<SymbolCandidate>& out) {
  if (plt.offset > file.size() || plt.size > file.size() - plt.offset || entry_size == 0) return;
  const uint8_t* bytes = file.data() + plt.offset;
  for (uint64_t entry = 0; entry + entry_size <= plt.size; entry += entry_size) {
    for (uint64_t i = entry; i + 6 <= entry + entry_size; ++i) {
      if (bytes[i] != 0xff || bytes[i + 1] != 0x25) continue;
      int32_t displacement;
      std::memcpy(&displacement, bytes + i + 2, sizeof displacement);
      const uint64_t slot = plt.addr + i + 6 + static_cast<uint64_t>(static_cast<int64_t>(displacement));
      auto found = slots.find(slot);
      if (found == slots.end()) break;
      SymbolCandidate candidate;
      candidate.symbol.name = found->second + "@plt";
      candidate.symbol.demangled = demangle(found->second) + "@plt";
      candidate.symbol.start = plt.addr + entry;
      candidate.symbol.size = entry_size;
      candidate.symbol.source = SymbolSource::plt;
      candidate.rank = 8;
      out.push_back(std::move(candidate));
      break;
    }
  }
}

std::vector<FunctionSymbol> fold_aliases(std::vector<SymbolCandidate> candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (a.symbol.start != b.symbol.start) return a.symbol.start < b.symbol.start;
    return a.rank < b.rank;
  });
  std::vector<FunctionSymbol> functions;
  for (auto& candidate : candidates) {
    if (!functions.empty() && functions.back().start == candidate.symbol.start) {
      // An alias: keep the best-ranked name, but learn a size it lacked.
      FunctionSymbol& kept = functions.back();
      if (kept.size == 0) kept.size = candidate.symbol.size;
      kept.ifunc = kept.ifunc || candidate.symbol.ifunc;
      if (candidate.symbol.name != kept.name &&
          std::find(kept.aliases.begin(), kept.aliases.end(), candidate.symbol.name) == kept.aliases.end()) {
        kept.aliases.push_back(candidate.symbol.name);
      }
      continue;
    }
    functions.push_back(std::move(candidate.symbol));
  }
  return functions;
}

}  // namespace

Result<ElfImage> ElfImage::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int saved = errno;
    return make_error(saved == EACCES ? ErrorCode::permission_denied : ErrorCode::file_error,
                      path + ": " + std::strerror(saved), "check the path and its permissions");
  }
  struct stat status;
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_size < 64) {
    ::close(fd);
    return make_error(ErrorCode::elf_error, path + ": not a regular ELF file",
                      "pass an ELF executable or shared object");
  }
  auto mapping = std::make_shared<Mapping>();
  // Shared, not private: the kernel installs the int3 of every uprobe
  // registered on this file into each private mapping of it (uprobe_mmap),
  // so with tracefs uprobe events (or any tracer's system-wide uprobes) a
  // private mapping would show breakpoints instead of the file's bytes.
  // Shared mappings are left alone, and read-only they read the same.
  void* data = mmap(nullptr, static_cast<size_t>(status.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) {
    return make_error(ErrorCode::file_error, path + ": cannot map: " + std::strerror(errno));
  }
  mapping->data = static_cast<const uint8_t*>(data);
  mapping->size = static_cast<size_t>(status.st_size);

  elf_version(EV_CURRENT);
  ElfHandle handle;
  handle.elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(mapping->data)), mapping->size);
  if (handle.elf == nullptr || elf_kind(handle.elf) != ELF_K_ELF) {
    return make_error(ErrorCode::elf_error, path + ": not an ELF file",
                      "pass an ELF executable or shared object");
  }
  GElf_Ehdr header;
  if (gelf_getehdr(handle.elf, &header) == nullptr) return elf_failure(path, "bad ELF header");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_X86_64) {
    return make_error(ErrorCode::elf_error, path + ": not an x86-64 ELF image",
                      "xref traces 64-bit x86 processes only");
  }

  ElfImage image;
  image.mapping_ = mapping;
  image.path_ = path;
  image.elf_type_ = header.e_type;
  image.entry_ = header.e_entry;
  const std::span<const uint8_t> file = image.file_bytes();

  size_t program_header_count = 0;
  if (elf_getphdrnum(handle.elf, &program_header_count) != 0) {
    return elf_failure(path, "bad program headers");
  }
  for (size_t i = 0; i < program_header_count; ++i) {
    GElf_Phdr program_header;
    if (gelf_getphdr(handle.elf, static_cast<int>(i), &program_header) == nullptr) continue;
    if (program_header.p_type == PT_LOAD) {
      image.segments_.push_back(LoadSegment{program_header.p_vaddr, program_header.p_memsz,
                                            program_header.p_offset, program_header.p_filesz,
                                            program_header.p_align, program_header.p_flags});
    } else if (program_header.p_type == PT_NOTE && image.build_id_.empty()) {
      image.build_id_ = find_build_id(file, program_header.p_offset, program_header.p_filesz);
    }
  }

  size_t string_section = 0;
  if (elf_getshdrstrndx(handle.elf, &string_section) != 0) return elf_failure(path, "bad section names");
  std::vector<SymbolCandidate> candidates;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(handle.elf, section)) != nullptr) {
    GElf_Shdr section_header;
    if (gelf_getshdr(section, &section_header) == nullptr) continue;
    const char* name = elf_strptr(handle.elf, string_section, section_header.sh_name);
    image.sections_.push_back(SectionInfo{name ? name : "", section_header.sh_addr,
                                          section_header.sh_offset, section_header.sh_size,
                                          section_header.sh_type, section_header.sh_flags});
    if (section_header.sh_type == SHT_SYMTAB) {
      image.has_symtab_ = true;
      read_symbol_table(handle.elf, section, section_header, SymbolSource::symtab, candidates);
    } else if (section_header.sh_type == SHT_DYNSYM) {
      read_symbol_table(handle.elf, section, section_header, SymbolSource::dynsym, candidates);
    } else if (section_header.sh_type == SHT_NOTE && image.build_id_.empty()) {
      image.build_id_ = find_build_id(file, section_header.sh_offset, section_header.sh_size);
    }
  }

  image.soname_ = read_soname(handle.elf);
  image.symbols_path_ = path;
  if (!image.has_symtab_) {
    const std::string debug_file = read_debug_symbols(image.build_id_, candidates);
    if (!debug_file.empty()) {
      image.has_symtab_ = true;
      image.symbols_path_ = debug_file;
    }
  }
  const auto slots = got_slot_names(read_got_slots(handle.elf, image.section(".plt.got") != nullptr));
  for (const char* plt_name : {".plt", ".plt.sec", ".plt.got"}) {
    if (const SectionInfo* plt = image.section(plt_name)) {
      const uint64_t entry_size = std::string_view(plt_name) == ".plt.got" ? 8 : 16;
      read_plt_stubs(file, *plt, slots, entry_size, candidates);
    }
  }
  image.functions_ = fold_aliases(std::move(candidates));
  image.index_ends();
  image.add_fde_ranges();
  return image;
}

// Without a symbol table, .eh_frame still says where code lives: FDE ranges
// that no symbol covers become functions, marked as FDE ranges. The walk is
// kept for cfa_rule.h, so unwinding questions need no second parse.
void ElfImage::add_fde_ranges() {
  const SectionInfo* eh_frame = section(".eh_frame");
  if (eh_frame == nullptr) return;
  const std::span<const uint8_t> bytes = section_bytes(*eh_frame);
  if (bytes.empty()) return;
  auto frame = read_eh_frame(bytes, eh_frame->addr);
  if (!frame) {
    fde_error_ = frame.error().message;
    return;
  }
  eh_frame_ = std::make_shared<const EhFrame>(std::move(*frame));
  std::vector<FunctionSymbol> added;
  for (const EhFrameFde& fde : eh_frame_->fdes) {
    const FdeRange& range = fde.range;
    if (range.size == 0) continue;  // empty FDEs describe no code
    if (function_containing(range.start) != nullptr) continue;
    FunctionSymbol symbol;
    symbol.name = "fde_" + to_hex(range.start).substr(2);
    symbol.demangled = symbol.name;
    symbol.start = range.start;
    symbol.size = range.size;
    symbol.source = SymbolSource::eh_frame_fde;
    added.push_back(std::move(symbol));
  }
  // Both runs are sorted by start (FDEs come sorted): a merge, not a sort.
  const auto middle = static_cast<std::ptrdiff_t>(functions_.size());
  functions_.insert(functions_.end(), std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
  std::inplace_merge(functions_.begin(), functions_.begin() + middle, functions_.end(),
                     [](const auto& a, const auto& b) { return a.start < b.start; });
  index_ends();
}

// max_end_[i]: the highest end among functions_[0..i] (a zero-sized symbol
// covers its own start), so a lookup walking back from an address can stop
// as soon as nothing at or before that index reaches it.
void ElfImage::index_ends() {
  max_end_.resize(functions_.size());
  uint64_t highest = 0;
  for (size_t i = 0; i < functions_.size(); ++i) {
    const FunctionSymbol& function = functions_[i];
    highest = std::max(highest, function.start + std::max<uint64_t>(function.size, 1));
    max_end_[i] = highest;
  }
}

std::span<const uint8_t> ElfImage::file_bytes() const {
  return {mapping_->data, mapping_->size};
}

std::span<const uint8_t> ElfImage::section_bytes(const SectionInfo& info) const {
  const std::span<const uint8_t> file = file_bytes();
  if (info.type == SHT_NOBITS || info.offset > file.size() || info.size > file.size() - info.offset) {
    return {};
  }
  return file.subspan(info.offset, info.size);
}

const SectionInfo* ElfImage::section(std::string_view name) const {
  for (const auto& section : sections_) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

const FunctionSymbol* ElfImage::function_containing(uint64_t va) const {
  auto after = std::upper_bound(functions_.begin(), functions_.end(), va,
                                [](uint64_t value, const FunctionSymbol& f) { return value < f.start; });
  // Walk back over earlier starts: a sized function may enclose a later
  // zero-sized label, so the nearest start is not always the owner. Nothing
  // at or before an index whose max_end_ is at or below va can hold it.
  for (auto it = after; it != functions_.begin();) {
    --it;
    if (max_end_.size() == functions_.size() && max_end_[static_cast<size_t>(it - functions_.begin())] <= va) break;
    if (it->contains(va)) return &*it;
  }
  return nullptr;
}

const FunctionSymbol* ElfImage::function_at(uint64_t start) const {
  auto it = std::lower_bound(functions_.begin(), functions_.end(), start,
                             [](const FunctionSymbol& f, uint64_t value) { return f.start < value; });
  return it != functions_.end() && it->start == start ? &*it : nullptr;
}

namespace {

// "svc::settle" ends in the scope "settle"; "lam_f(int)::{lambda(int)#1}::operator()"
// in "{lambda(int)#1}::operator()", but not in "int)::{lambda(int)#1}::operator()".
bool ends_in_scope(std::string_view name, std::string_view query) {
  if (query.empty() || name.size() < query.size() + 2 || !name.ends_with(query)) return false;
  const size_t separator = name.size() - query.size() - 2;
  if (name.substr(separator, 2) != "::") return false;
  int depth = 0;
  for (size_t i = 0; i < separator; ++i) {
    const char c = name[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == '>' || c == ']' || c == '}') --depth;
  }
  return depth == 0;
}

std::optional<NameMatch> match_name(std::string_view stored, const std::string& demangled, std::string_view query) {
  if (stored == query || demangled == query) return NameMatch::exact;
  const std::string bare = without_parameters(demangled);
  const std::string untyped = without_return_type(bare);
  if (bare == query || (!untyped.empty() && untyped == query)) return NameMatch::exact;
  if (ends_in_scope(bare, query) || ends_in_scope(untyped, query)) return NameMatch::scope_suffix;
  return std::nullopt;
}

}  // namespace

std::vector<FunctionMatch> ElfImage::match_functions(std::string_view name) const {
  std::vector<FunctionMatch> found;
  for (const auto& function : functions_) {
    std::optional<FunctionMatch> best;
    auto consider = [&](const std::string& stored, const std::string& demangled) {
      const auto match = match_name(stored, demangled, name);
      if (match && (!best || (*match == NameMatch::exact && best->match != NameMatch::exact))) {
        best = FunctionMatch{&function, stored, *match};
      }
    };
    consider(function.name, function.demangled);
    for (const std::string& alias : function.aliases) consider(alias, demangle(alias));
    if (best) found.push_back(std::move(*best));
  }
  // An exact name wins over a nested one: "lam_f" is lam_f(int), not some
  // "ns::lam_f".
  if (std::any_of(found.begin(), found.end(), [](const auto& m) { return m.match == NameMatch::exact; })) {
    std::erase_if(found, [](const auto& m) { return m.match != NameMatch::exact; });
  }
  // "f" means f itself, not the compiler's split-off parts of it
  // ("f [clone .cold]", "f.cold"), unless only those match.
  auto is_clone = [](const FunctionMatch& match) {
    return match.function->demangled.find(" [clone ") != std::string::npos ||
           match.function->name.find(".cold") != std::string::npos;
  };
  const bool any_original = std::any_of(found.begin(), found.end(), [&](const auto& m) { return !is_clone(m); });
  if (any_original && found.size() > 1) std::erase_if(found, is_clone);
  return found;
}

std::vector<const FunctionSymbol*> ElfImage::find_functions(std::string_view name) const {
  std::vector<const FunctionSymbol*> found;
  for (const FunctionMatch& match : match_functions(name)) found.push_back(match.function);
  return found;
}

std::vector<GotSlot> ElfImage::got_slots() const {
  elf_version(EV_CURRENT);
  ElfHandle handle;
  handle.elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(mapping_->data)), mapping_->size);
  if (handle.elf == nullptr) return {};
  return read_got_slots(handle.elf, true);
}

ElfImage ElfImage::with_symbols_of(const ElfImage& twin) const {
  ElfImage image = *this;
  if (!twin.has_symtab()) return image;
  image.functions_.clear();
  for (const FunctionSymbol& function : twin.functions()) {
    if (!function.is_fde_range()) image.functions_.push_back(function);
  }
  image.has_symtab_ = true;
  image.symbols_path_ = twin.symbols_path();
  image.index_ends();  // the twin's functions, before add_fde_ranges looks through them
  image.fde_error_.clear();
  image.eh_frame_.reset();
  image.add_fde_ranges();
  return image;
}

const LoadSegment* ElfImage::segment_for_va(uint64_t va) const {
  for (const auto& segment : segments_) {
    if (segment.va_is_file_backed(va)) return &segment;
  }
  return nullptr;
}

Result<uint64_t> ElfImage::file_offset_of(uint64_t va) const {
  const LoadSegment* segment = segment_for_va(va);
  if (segment == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      "static VA " + to_hex(va) + " is not in a file-backed part of any PT_LOAD of " + path_);
  }
  return segment->offset + (va - segment->vaddr);
}

std::vector<uint64_t> ElfImage::vas_of_file_offset(uint64_t file_offset) const {
  std::vector<uint64_t> vas;
  for (const auto& segment : segments_) {
    if (segment.contains_offset(file_offset)) vas.push_back(segment.vaddr + (file_offset - segment.offset));
  }
  return vas;
}

std::optional<std::span<const uint8_t>> ElfImage::bytes_at(uint64_t va, uint64_t size) const {
  const LoadSegment* segment = segment_for_va(va);
  if (segment == nullptr) return std::nullopt;
  const uint64_t within = va - segment->vaddr;
  if (size > segment->filesz - within) return std::nullopt;
  const uint64_t offset = segment->offset + within;
  if (offset > mapping_->size || size > mapping_->size - offset) return std::nullopt;
  return std::span<const uint8_t>(mapping_->data + offset, size);
}

}  // namespace xref
