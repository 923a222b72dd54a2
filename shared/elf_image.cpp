#include "elf_image.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "demangle.h"
#include "eh_frame_hdr.h"
#include "elf_notes.h"
#include "hex.h"

namespace xref {

// What an image learns on demand. Shared by the copies of one image, so a
// FunctionSymbol pointer stays valid while any copy lives.
struct ElfImage::Lazy {
  std::mutex mutex;
  std::shared_ptr<const SymbolTable> symbols;
  std::map<uint64_t, std::unique_ptr<FunctionSymbol>> functions;  // made so far, by start
  bool hdr_read = false;
  std::optional<EhFrameHdr> hdr;
  bool walked = false;
  std::shared_ptr<const EhFrame> eh_frame;
  std::string fde_error;
};

namespace {

constexpr size_t kEmptyFdesSkipped = 8;     // empty FDEs sharing a start with a real one
constexpr size_t kFdesScannedForNext = 64;  // FDEs looked at for the next function start

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

std::string fde_name(uint64_t start) { return "fde_" + to_hex(start).substr(2); }

// The start VA of an FDE range's name ("fde_4160"), if `name` is one.
std::optional<uint64_t> fde_name_start(std::string_view name) {
  if (!name.starts_with("fde_") || name.size() == 4 || name.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (char c : name.substr(4)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<uint64_t>(digit);
  }
  return value;
}

// The FunctionSymbol of one symbol group: the name it goes by
// (SymbolTable::best_name), demangled, and the other names at that start as
// aliases.
FunctionSymbol make_function(const SymbolTable& table, const SymbolGroup& group) {
  const auto names = table.names_of(group);
  const SymbolEntry& chosen = names[table.best_name(group)];
  FunctionSymbol function;
  function.name = table.name_of(chosen);
  function.source = chosen.source;
  function.start = group.start;
  function.size = group.size;
  function.ifunc = group.ifunc;
  if (function.source == SymbolSource::plt && function.name.ends_with("@plt")) {
    function.demangled = demangle(std::string_view(function.name).substr(0, function.name.size() - 4)) + "@plt";
  } else {
    function.demangled = demangle(function.name);
  }
  for (const SymbolEntry& entry : names) {
    const std::string_view alias = table.name_of(entry);
    if (alias != function.name &&
        std::find(function.aliases.begin(), function.aliases.end(), alias) == function.aliases.end()) {
      function.aliases.emplace_back(alias);
    }
  }
  return function;
}

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

Result<ElfImage> ElfImage::open(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  return from_file(std::move(*file), path);
}

Result<ElfImage> ElfImage::open_descriptor(UniqueFd fd, const std::string& path) {
  auto file = MappedFile::map(std::move(fd), path);
  if (!file) return file.error();
  return from_file(std::move(*file), path);
}

Result<ElfImage> ElfImage::from_file(std::shared_ptr<const MappedFile> file, const std::string& path) {
  const std::span<const uint8_t> bytes = file->bytes();

  elf_version(EV_CURRENT);
  ElfHandle handle;
  handle.elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
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
  image.file_ = std::move(file);
  image.lazy_ = std::make_shared<Lazy>();
  image.path_ = path;
  image.elf_type_ = header.e_type;
  image.entry_ = header.e_entry;

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
      image.build_id_ = find_build_id(bytes, program_header.p_offset, program_header.p_filesz);
    }
  }

  size_t string_section = 0;
  if (elf_getshdrstrndx(handle.elf, &string_section) != 0) return elf_failure(path, "bad section names");
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
    } else if (section_header.sh_type == SHT_NOTE && image.build_id_.empty()) {
      image.build_id_ = find_build_id(bytes, section_header.sh_offset, section_header.sh_size);
    }
  }

  image.soname_ = read_soname(handle.elf);
  image.symbols_path_ = path;
  if (!image.has_symtab_) {
    image.debug_path_ = debug_file_of(image.build_id_);
    if (!image.debug_path_.empty()) {
      image.has_symtab_ = true;
      image.symbols_path_ = image.debug_path_;
    }
  }
  return image;
}

std::shared_ptr<const SymbolTable> ElfImage::symbol_table_locked(Lazy& lazy) const {
  if (!lazy.symbols) lazy.symbols = SymbolTable::read(file_, debug_path_);
  return lazy.symbols;
}

const FunctionSymbol* ElfImage::group_function_locked(Lazy& lazy, const SymbolTable& table, size_t group) const {
  const SymbolGroup& symbols = table.groups()[group];
  auto& made = lazy.functions[symbols.start];
  if (!made) made = std::make_unique<FunctionSymbol>(make_function(table, symbols));
  return made.get();
}

const FunctionSymbol* ElfImage::fde_function_locked(Lazy& lazy, const FdeRange& range) const {
  auto& made = lazy.functions[range.start];
  if (!made) {
    made = std::make_unique<FunctionSymbol>();
    made->name = fde_name(range.start);
    made->demangled = made->name;
    made->start = range.start;
    made->size = range.size;
    made->source = SymbolSource::eh_frame_fde;
  }
  return made.get();
}

const EhFrame* ElfImage::eh_frame_locked(Lazy& lazy) const {
  if (lazy.walked) return lazy.eh_frame.get();
  lazy.walked = true;
  const SectionInfo* eh_frame = section(".eh_frame");
  if (eh_frame == nullptr) return nullptr;
  const std::span<const uint8_t> bytes = section_bytes(*eh_frame);
  if (bytes.empty()) return nullptr;
  auto frame = read_eh_frame(bytes, eh_frame->addr);
  if (!frame) {
    lazy.fde_error = frame.error().message;
    return nullptr;
  }
  lazy.eh_frame = std::make_shared<const EhFrame>(std::move(*frame));
  return lazy.eh_frame.get();
}

// The binary-search table, when the image has one that points at its .eh_frame.
const EhFrameHdr* ElfImage::eh_frame_hdr_locked(Lazy& lazy) const {
  if (!lazy.hdr_read) {
    lazy.hdr_read = true;
    const SectionInfo* hdr = section(".eh_frame_hdr");
    const SectionInfo* eh_frame = section(".eh_frame");
    if (hdr != nullptr && eh_frame != nullptr) {
      auto table = EhFrameHdr::read(section_bytes(*hdr), hdr->addr);
      if (table && table->eh_frame_va() == eh_frame->addr) lazy.hdr = *table;
    }
  }
  return lazy.hdr ? &*lazy.hdr : nullptr;
}

// The FDE with the greatest start at or before va (the non-empty one when
// empty FDEs share its start), or none.
Result<std::optional<EhFrameRecord>> ElfImage::fde_at_or_before_locked(Lazy& lazy, uint64_t va) const {
  const SectionInfo* eh_frame = section(".eh_frame");
  if (eh_frame == nullptr) {
    return make_error(ErrorCode::elf_error, path_ + " has no .eh_frame section",
                      "the image carries no unwind information");
  }
  const std::span<const uint8_t> bytes = section_bytes(*eh_frame);
  if (const EhFrameHdr* hdr = eh_frame_hdr_locked(lazy); hdr != nullptr && !bytes.empty()) {
    const size_t at_or_before = hdr->count_at_or_before(va);
    for (size_t i = at_or_before; i > 0 && at_or_before - i < kEmptyFdesSkipped;) {
      --i;
      const uint64_t fde_va = hdr->fde_va(i);
      if (fde_va < eh_frame->addr || fde_va - eh_frame->addr >= bytes.size()) {
        return make_error(ErrorCode::elf_error,
                          path_ + ": .eh_frame_hdr entry " + std::to_string(i) + " points outside .eh_frame",
                          "the image's unwind tables are damaged");
      }
      auto record = read_fde_at(bytes, eh_frame->addr, static_cast<size_t>(fde_va - eh_frame->addr));
      if (!record) return record.error();
      if (record->fde.range.size != 0 || i == 0 || hdr->start(i - 1) != hdr->start(i)) {
        return std::optional<EhFrameRecord>(*record);
      }
    }
    return std::optional<EhFrameRecord>();
  }
  const EhFrame* frame = eh_frame_locked(lazy);
  if (frame == nullptr) {
    const std::string why = lazy.fde_error.empty() ? "it is empty or not in the file" : lazy.fde_error;
    return make_error(ErrorCode::elf_error, path_ + ": cannot read .eh_frame: " + why,
                      "the image's unwind tables are damaged or use an unsupported layout");
  }
  auto after = std::upper_bound(frame->fdes.begin(), frame->fdes.end(), va,
                                [](uint64_t value, const EhFrameFde& fde) { return value < fde.range.start; });
  if (after == frame->fdes.begin()) return std::optional<EhFrameRecord>();
  const EhFrameFde& fde = *std::prev(after);
  if (fde.cie_index >= frame->cies.size()) {
    return make_error(ErrorCode::elf_error, path_ + ": .eh_frame: FDE at " + to_hex(fde.offset) + " has no CIE");
  }
  return std::optional<EhFrameRecord>(EhFrameRecord{frame->cies[fde.cie_index], fde});
}

// The FDE range that is a function of its own at va (holding it, or starting
// there when `exact_start`): non-empty, and no symbol covers its start.
std::optional<FdeRange> ElfImage::fde_function_range_locked(Lazy& lazy, uint64_t va, bool exact_start) const {
  auto record = fde_at_or_before_locked(lazy, va);
  if (!record || !*record) return std::nullopt;
  const FdeRange range = (*record)->fde.range;
  if (range.size == 0 || va - range.start >= range.size || (exact_start && range.start != va)) return std::nullopt;
  if (symbol_table_locked(lazy)->group_containing(range.start)) return std::nullopt;
  return range;
}

const FunctionSymbol* ElfImage::function_containing(uint64_t va) const {
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  if (auto group = table->group_containing(va)) return group_function_locked(*lazy_, *table, *group);
  if (auto range = fde_function_range_locked(*lazy_, va, false)) return fde_function_locked(*lazy_, *range);
  return nullptr;
}

const FunctionSymbol* ElfImage::function_at(uint64_t start) const {
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  if (auto group = table->group_at(start)) return group_function_locked(*lazy_, *table, *group);
  if (auto range = fde_function_range_locked(*lazy_, start, true)) return fde_function_locked(*lazy_, *range);
  return nullptr;
}

std::optional<uint64_t> ElfImage::next_function_start(uint64_t va) const {
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  std::optional<uint64_t> next;
  if (const size_t after = table->first_group_after(va); after < table->groups().size()) {
    next = table->groups()[after].start;
  }
  // The first FDE range after va that is a function of its own, if earlier.
  auto is_function = [&](const FdeRange& range) {
    return range.size != 0 && !table->group_containing(range.start);
  };
  const SectionInfo* eh_frame = section(".eh_frame");
  if (eh_frame == nullptr) return next;
  const std::span<const uint8_t> bytes = section_bytes(*eh_frame);
  if (const EhFrameHdr* hdr = eh_frame_hdr_locked(*lazy_); hdr != nullptr && !bytes.empty()) {
    const size_t first = hdr->count_at_or_before(va);
    for (size_t i = first; i < hdr->size() && i - first < kFdesScannedForNext; ++i) {
      if (next && hdr->start(i) >= *next) break;
      const uint64_t fde_va = hdr->fde_va(i);
      if (fde_va < eh_frame->addr || fde_va - eh_frame->addr >= bytes.size()) break;
      auto record = read_fde_at(bytes, eh_frame->addr, static_cast<size_t>(fde_va - eh_frame->addr));
      if (!record) break;
      if (is_function(record->fde.range)) return record->fde.range.start;
    }
    return next;
  }
  if (const EhFrame* frame = eh_frame_locked(*lazy_)) {
    auto it = std::upper_bound(frame->fdes.begin(), frame->fdes.end(), va,
                               [](uint64_t value, const EhFrameFde& fde) { return value < fde.range.start; });
    for (; it != frame->fdes.end() && (!next || it->range.start < *next); ++it) {
      if (is_function(it->range)) return it->range.start;
    }
  }
  return next;
}

std::vector<const FunctionSymbol*> ElfImage::all_functions() const {
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  for (size_t group = 0; group < table->groups().size(); ++group) group_function_locked(*lazy_, *table, group);
  if (const EhFrame* frame = eh_frame_locked(*lazy_)) {
    for (const EhFrameFde& fde : frame->fdes) {
      if (fde.range.size != 0 && !table->group_containing(fde.range.start)) fde_function_locked(*lazy_, fde.range);
    }
  }
  std::vector<const FunctionSymbol*> functions;
  functions.reserve(lazy_->functions.size());
  for (const auto& [start, function] : lazy_->functions) functions.push_back(function.get());
  return functions;
}

std::vector<const FunctionSymbol*> ElfImage::functions_named_if(
    const std::function<bool(std::string_view)>& stored_name) const {
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  std::vector<const FunctionSymbol*> found;
  for (size_t group = 0; group < table->groups().size(); ++group) {
    const auto names = table->names_of(table->groups()[group]);
    if (std::any_of(names.begin(), names.end(),
                    [&](const SymbolEntry& entry) { return stored_name(table->name_of(entry)); })) {
      found.push_back(group_function_locked(*lazy_, *table, group));
    }
  }
  return found;
}

std::span<const uint8_t> ElfImage::file_bytes() const { return file_->bytes(); }

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

std::vector<FunctionMatch> ElfImage::match_functions(std::string_view name) const {
  std::vector<FunctionMatch> found;
  if (const auto start = fde_name_start(name)) {
    const FunctionSymbol* function = function_at(*start);
    if (function != nullptr && function->is_fde_range() && function->name == name) {
      found.push_back(FunctionMatch{function, function->name, NameMatch::exact});
    }
    return found;
  }
  // Only the names that contain the query's own identifier can match; the
  // rest are not demangled.
  const std::string key = literal_identifier(name);
  std::lock_guard lock(lazy_->mutex);
  const auto table = symbol_table_locked(*lazy_);
  std::vector<size_t> groups;
  if (key.empty()) {
    groups.resize(table->groups().size());
    for (size_t group = 0; group < groups.size(); ++group) groups[group] = group;
  } else {
    groups = table->groups_naming(key);
  }
  for (const size_t group : groups) {
    const auto made = lazy_->functions.find(table->groups()[group].start);
    const FunctionSymbol candidate = made != lazy_->functions.end() ? *made->second
                                                                     : make_function(*table, table->groups()[group]);
    std::optional<std::pair<std::string, NameMatch>> best;
    auto consider = [&](const std::string& stored, const std::string& demangled) {
      const auto match = match_name(stored, demangled, name);
      if (match && (!best || (*match == NameMatch::exact && best->second != NameMatch::exact))) {
        best = std::make_pair(stored, *match);
      }
    };
    consider(candidate.name, candidate.demangled);
    for (const std::string& alias : candidate.aliases) consider(alias, demangle(alias));
    if (best) found.push_back(FunctionMatch{group_function_locked(*lazy_, *table, group), best->first, best->second});
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

std::vector<GotSlot> ElfImage::got_slots() const { return read_got_slots(file_bytes(), true); }

ElfImage ElfImage::with_symbols_of(const ElfImage& twin) const {
  ElfImage image = *this;
  if (!twin.has_symtab()) return image;
  std::shared_ptr<const SymbolTable> names;
  {
    std::lock_guard lock(twin.lazy_->mutex);
    names = twin.symbol_table_locked(*twin.lazy_);
  }
  image.lazy_ = std::make_shared<Lazy>();
  image.lazy_->symbols = std::move(names);
  image.has_symtab_ = true;
  image.symbols_path_ = twin.symbols_path();
  return image;
}

Result<EhFrameRecord> ElfImage::fde_record(uint64_t va) const {
  std::lock_guard lock(lazy_->mutex);
  auto record = fde_at_or_before_locked(*lazy_, va);
  if (!record) return record.error();
  if (!*record || va - (*record)->fde.range.start >= (*record)->fde.range.size) {
    return make_error(ErrorCode::address_unmapped, "no .eh_frame FDE covers static VA " + to_hex(va),
                      "the address is outside every function with unwind information");
  }
  return **record;
}

const EhFrame* ElfImage::eh_frame() const {
  std::lock_guard lock(lazy_->mutex);
  return eh_frame_locked(*lazy_);
}

const std::string& ElfImage::fde_error() const {
  std::lock_guard lock(lazy_->mutex);
  return lazy_->fde_error;
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
  const std::span<const uint8_t> file = file_bytes();
  if (offset > file.size() || size > file.size() - offset) return std::nullopt;
  return file.subspan(offset, size);
}

}  // namespace xref
