// A read-only view of one ELF file: build-id, PT_LOAD geometry and the
// functions it names (symbol tables, PLT stubs, and for stripped images the
// ranges of .eh_frame FDEs). Static VAs throughout; see address_space.h for
// the live side.
//
// Opening reads only the headers. The symbol tables are read into a compact
// table (symbol_table.h) when a function is first asked for; a
// FunctionSymbol (names copied, demangled) is made only for a function that
// a lookup returns, and stays valid as long as any copy of the image; FDEs
// are found through .eh_frame_hdr one at a time. So a plan that needs five
// functions of a 129 MB library reads little more than those five.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eh_frame.h"
#include "mapped_file.h"
#include "result.h"
#include "symbol_table.h"

namespace xref {

class EhFrameHdr;

struct LoadSegment {
  uint64_t vaddr = 0;   // p_vaddr
  uint64_t memsz = 0;   // p_memsz
  uint64_t offset = 0;  // p_offset
  uint64_t filesz = 0;  // p_filesz: [vaddr, vaddr+filesz) is file-backed, the rest zero-filled
  uint64_t align = 0;
  uint32_t flags = 0;   // PF_R | PF_W | PF_X

  bool readable() const { return flags & 4u; }
  bool writable() const { return flags & 2u; }
  bool executable() const { return flags & 1u; }
  bool contains_va(uint64_t va) const { return va >= vaddr && va - vaddr < memsz; }
  bool va_is_file_backed(uint64_t va) const { return va >= vaddr && va - vaddr < filesz; }
  bool contains_offset(uint64_t file_offset) const {
    return file_offset >= offset && file_offset - offset < filesz;
  }
};

struct FunctionSymbol {
  std::string name;       // as stored (mangled); for FDE ranges "fde_<hex start>"
  std::string demangled;  // C++ and Rust demangled, Rust hash suffix removed; else == name
  uint64_t start = 0;     // static VA
  uint64_t size = 0;      // 0 when the symbol gives none
  SymbolSource source = SymbolSource::symtab;
  std::vector<std::string> aliases;  // other names at the same start ("__getpid" for "getpid")
  bool ifunc = false;     // STT_GNU_IFUNC: start is the resolver, not the code that runs

  uint64_t end() const { return start + size; }
  bool contains(uint64_t va) const { return va == start || (va > start && va - start < size); }
  // Whether `stored` is its name or one of its aliases, as stored.
  bool has_name(std::string_view stored) const {
    return name == stored || std::find(aliases.begin(), aliases.end(), stored) != aliases.end();
  }
  bool is_fde_range() const { return source == SymbolSource::eh_frame_fde; }
};

// How a query matched a function's name (ElfImage::match_functions).
enum class NameMatch {
  exact,         // the stored name, the demangled name, or it without parameters (or return type)
  scope_suffix,  // the trailing scopes of the name without parameters: "settle" for "svc::settle"
};

struct FunctionMatch {
  const FunctionSymbol* function = nullptr;
  std::string spelled;  // the stored name (the function's own or an alias) that matched
  NameMatch match = NameMatch::exact;
};

struct SectionInfo {
  std::string name;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t type = 0;
  uint64_t flags = 0;
};

class ElfImage {
 public:
  // Maps the file read-only. Fails with file_error or elf_error.
  static Result<ElfImage> open(const std::string& path);
  // The same for a file already open for reading, which the image then
  // owns (a file opened with a sudo user's rights, helper/user_files.h);
  // `path` names it.
  static Result<ElfImage> open_descriptor(UniqueFd fd, const std::string& path);

  const std::string& path() const { return path_; }
  bool is_pie() const { return elf_type_ == 3; }  // ET_DYN
  uint16_t elf_type() const { return elf_type_; }
  uint64_t entry() const { return entry_; }
  const std::string& build_id() const { return build_id_; }  // lowercase hex, empty when absent
  bool has_symtab() const { return has_symtab_; }
  std::span<const uint8_t> file_bytes() const;
  const MappedFile& file() const { return *file_; }

  const std::vector<LoadSegment>& segments() const { return segments_; }
  const std::vector<SectionInfo>& sections() const { return sections_; }
  const SectionInfo* section(std::string_view name) const;
  // The file bytes of a section; empty for SHT_NOBITS or a section that runs past the file.
  std::span<const uint8_t> section_bytes(const SectionInfo& section) const;

  // DT_SONAME, empty when the image has none.
  const std::string& soname() const { return soname_; }
  // The file the function names come from: this one, the separate debug
  // file of its build-id (/usr/lib/debug/.build-id/xx/yyyy.debug) when this
  // one has no .symtab, or the twin of with_symbols_of.
  const std::string& symbols_path() const { return symbols_path_; }
  // This image (its bytes, segments, FDEs) with the function names of
  // `twin`, another file of the same build (e.g. the unstripped copy of a
  // stripped executable); kept as it is when the twin has no .symtab.
  ElfImage with_symbols_of(const ElfImage& twin) const;
  // JUMP_SLOT, GLOB_DAT and IRELATIVE relocations, read from the file on
  // each call (a large library has hundreds of thousands; only IFUNC
  // binding needs them).
  std::vector<GotSlot> got_slots() const;

  // The function holding va: a symbol (a sized one may enclose a later
  // zero-sized label), else the non-empty FDE range with the greatest start
  // at or before va when no symbol covers that start.
  const FunctionSymbol* function_containing(uint64_t va) const;
  // The function that starts at `start`, by the same rules.
  const FunctionSymbol* function_at(uint64_t start) const;
  // The start of the first function after va, if any.
  std::optional<uint64_t> next_function_start(uint64_t va) const;
  // Every function, sorted by start; reads all of .eh_frame for a stripped
  // image. For listings and tests: lookups above cost far less.
  std::vector<const FunctionSymbol*> all_functions() const;
  // The symbol functions (not FDE ranges) with a stored name, or an alias,
  // that `stored_name` accepts, sorted by start.
  std::vector<const FunctionSymbol*> functions_named_if(
      const std::function<bool(std::string_view)>& stored_name) const;
  // The functions a name given by a user means, exact matches only when
  // there are some: the stored name or an alias, the demangled name as nm -C
  // prints it, or that without its parameter list (demangle.h,
  // without_parameters) or a template's return type; else the functions whose
  // name without parameters ends in "::" + name at nesting depth 0. The
  // compiler's split-off parts ("f [clone .cold]") only when nothing else.
  // An FDE range answers to its own name, "fde_<hex start>".
  std::vector<FunctionMatch> match_functions(std::string_view name) const;
  std::vector<const FunctionSymbol*> find_functions(std::string_view name) const;

  // The segment whose file-backed extent holds va, or nullptr.
  const LoadSegment* segment_for_va(uint64_t va) const;
  // Static VA -> file offset through the owning PT_LOAD; address_unmapped when
  // va is not in a file-backed extent (e.g. .bss).
  Result<uint64_t> file_offset_of(uint64_t va) const;
  // File offset -> every static VA whose PT_LOAD file extent holds it.
  std::vector<uint64_t> vas_of_file_offset(uint64_t file_offset) const;
  // The file bytes of [va, va+size) when all of it is file-backed in one segment.
  std::optional<std::span<const uint8_t>> bytes_at(uint64_t va, uint64_t size) const;
  // The FDE covering va and its CIE, found like the runtime unwinder finds
  // it (only the FDE with the greatest start at or before va). Fails with
  // elf_error when the image has no .eh_frame or it cannot be read, and with
  // address_unmapped when no FDE covers va. Offsets in the record index
  // section_bytes(*section(".eh_frame")).
  Result<EhFrameRecord> fde_record(uint64_t va) const;
  // Every CIE and FDE of .eh_frame, walked on the first call; nullptr when
  // the image has none or it could not be read (fde_error() then says why).
  const EhFrame* eh_frame() const;
  const std::string& fde_error() const;

 private:
  struct Lazy;
  static Result<ElfImage> from_file(std::shared_ptr<const MappedFile> file, const std::string& path);
  std::shared_ptr<const SymbolTable> symbol_table_locked(Lazy& lazy) const;
  const FunctionSymbol* group_function_locked(Lazy& lazy, const SymbolTable& table, size_t group) const;
  const FunctionSymbol* fde_function_locked(Lazy& lazy, const FdeRange& range) const;
  const EhFrame* eh_frame_locked(Lazy& lazy) const;
  const EhFrameHdr* eh_frame_hdr_locked(Lazy& lazy) const;
  std::optional<FdeRange> fde_function_range_locked(Lazy& lazy, uint64_t va, bool exact_start) const;
  Result<std::optional<EhFrameRecord>> fde_at_or_before_locked(Lazy& lazy, uint64_t va) const;

  std::shared_ptr<const MappedFile> file_;
  std::string path_;
  uint16_t elf_type_ = 0;
  uint64_t entry_ = 0;
  std::string build_id_;
  std::string soname_;
  std::string symbols_path_;
  std::string debug_path_;  // the separate debug file read for names, or ""
  bool has_symtab_ = false;
  std::vector<LoadSegment> segments_;
  std::vector<SectionInfo> sections_;
  std::shared_ptr<Lazy> lazy_;  // shared by copies: the same file, the same answers
};

}  // namespace xref
