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

void read_symbol_table(Elf* elf, Elf_Scn* section, const GElf_Shdr& header, SymbolSource source,
                       std::vector<SymbolCandidate>& out) {
  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || header.sh_entsize == 0) return;
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
    candidate.symbol.demangled = demangle(name);
    candidate.symbol.start = symbol.st_value;
    candidate.symbol.size = symbol.st_size;
    candidate.symbol.source = source;
    const int binding = GELF_ST_BIND(symbol.st_info);
    candidate.rank = (source == SymbolSource::symtab ? 0 : 4) + (binding == STB_LOCAL ? 2 : 0) +
                     (symbol.st_size == 0 ? 1 : 0);
    out.push_back(std::move(candidate));
  }
}

// GOT slot VA -> dynamic symbol name, from JUMP_SLOT and GLOB_DAT relocations.
// `with_dynamic`: also the GLOB_DAT slots of the non-PLT relocations, which
// only .plt.got stubs jump through; a large library has hundreds of
// thousands of those (libLLVM: 8 MB), so they are read only when needed.
std::map<uint64_t, std::string> got_slot_names(Elf* elf, bool with_dynamic) {
  std::map<uint64_t, std::string> names;
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
      if (type != kX86_64JumpSlot && type != kX86_64GlobDat) continue;
      GElf_Sym symbol;
      if (gelf_getsym(symbols, static_cast<int>(GELF_R_SYM(relocation.r_info)), &symbol) == nullptr) {
        continue;
      }
      const char* name = elf_strptr(elf, symbols_header.sh_link, symbol.st_name);
      if (name != nullptr && *name != '\0') names[relocation.r_offset] = name;
    }
  }
  return names;
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

std::string strip_parameters(const std::string& demangled) {
  const size_t paren = demangled.find('(');
  return paren == std::string::npos ? demangled : demangled.substr(0, paren);
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

  const auto slots = got_slot_names(handle.elf, image.section(".plt.got") != nullptr);
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

std::vector<const FunctionSymbol*> ElfImage::find_functions(std::string_view name) const {
  std::vector<const FunctionSymbol*> found;
  for (const auto& function : functions_) {
    const bool alias = std::find(function.aliases.begin(), function.aliases.end(), name) != function.aliases.end();
    if (alias || function.name == name || function.demangled == name || strip_parameters(function.demangled) == name) {
      found.push_back(&function);
    }
  }
  // "f" means f itself, not the compiler's split-off parts of it
  // ("f [clone .cold]", "f.cold"), unless only those match.
  auto is_clone = [](const FunctionSymbol* function) {
    return function->demangled.find(" [clone ") != std::string::npos ||
           function->name.find(".cold") != std::string::npos;
  };
  const bool any_original = std::any_of(found.begin(), found.end(), [&](auto* f) { return !is_clone(f); });
  if (any_original && found.size() > 1) {
    found.erase(std::remove_if(found.begin(), found.end(), is_clone), found.end());
  }
  return found;
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
