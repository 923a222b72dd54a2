// The function symbols of one ELF image in compact form: .symtab, .dynsym
// (or the .symtab of the separate debug file), and PLT stubs named from their
// relocations. Names point into the mapped files, which the table keeps
// alive; nothing is demangled or copied here, so a library with 50,000
// symbols costs a few MB and a few milliseconds. ElfImage builds
// FunctionSymbols from it on demand.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mapped_file.h"

namespace xref {

enum class SymbolSource {
  symtab,        // .symtab STT_FUNC / STT_GNU_IFUNC
  dynsym,        // .dynsym, where .symtab has no entry at that address
  plt,           // a PLT stub, named "target@plt" from its relocation
  eh_frame_fde,  // an .eh_frame FDE range: code exists here, but it is not a proven source function
};

const char* symbol_source_name(SymbolSource source);

// A GOT slot the dynamic linker fills in the running process: with the
// address a symbol was bound to (JUMP_SLOT, GLOB_DAT), or with what an IFUNC
// resolver returned (IRELATIVE).
struct GotSlot {
  enum class Kind { jump_slot, glob_dat, irelative };
  Kind kind = Kind::jump_slot;
  uint64_t va = 0;        // static VA of the slot
  std::string symbol;     // JUMP_SLOT, GLOB_DAT: the symbol's name
  uint64_t resolver = 0;  // IRELATIVE: the resolver's static VA (the addend)
};

// JUMP_SLOT, GLOB_DAT and IRELATIVE relocations of the ELF file `file`;
// `with_dynamic` adds those of the non-PLT sections (.rela.dyn), which a
// large library has hundreds of thousands of.
std::vector<GotSlot> read_got_slots(std::span<const uint8_t> file, bool with_dynamic);

// The separate debug file of `build_id` (/usr/lib/debug/.build-id/xx/yyyy.debug,
// as Debian's -dbg and -dbgsym packages install them) when it exists, has a
// .symtab and carries the same build-id; "" otherwise.
std::string debug_file_of(const std::string& build_id);

// Where a symbol's name is: an offset into one of the table's string tables
// (a section of a mapped file), or an index into its own copies.
struct SymbolEntry {
  uint64_t start = 0;  // static VA
  uint64_t size = 0;
  uint32_t name = 0;     // offset in string table `strings`, or index into the copies (kCopiedNames)
  uint8_t strings = 0;   // which string table
  uint8_t rank = 0;      // lower first among the names of one start (size, binding, table; best_name)
  SymbolSource source = SymbolSource::symtab;
  bool ifunc = false;
};

// The names at one start address, ranked by size, binding and table (sized
// over unsized, non-weak over weak, global over the rest, .symtab over
// .dynsym); best_name chooses among the first ones by spelling.
struct SymbolGroup {
  uint64_t start = 0;
  uint64_t size = 0;  // the best-ranked non-zero size
  uint32_t first = 0;  // into entries()
  uint32_t count = 0;
  bool ifunc = false;

  uint64_t end() const { return start + size; }
};

class SymbolTable {
 public:
  static constexpr uint8_t kCopiedNames = 0xff;

  // Reads the symbol tables of the ELF file `file` and, when `debug_path` is
  // not empty, the .symtab of that file, and names the PLT stubs. The symbol
  // and string tables are streamed (pread), not mapped, so a library's
  // megabytes of names cost this process no resident pages. Never fails:
  // what cannot be read names nothing.
  static std::shared_ptr<const SymbolTable> read(std::shared_ptr<const MappedFile> file,
                                                 const std::string& debug_path);

  const std::vector<SymbolGroup>& groups() const { return groups_; }
  std::span<const SymbolEntry> names_of(const SymbolGroup& group) const {
    return std::span<const SymbolEntry>(entries_).subspan(group.first, group.count);
  }
  // Index into names_of(group) of the name a function goes by, the one perf
  // and gdb show among aliases: sized over unsized, non-weak over weak,
  // global over local, then fewer leading underscores, then the longer
  // name, then .symtab over .dynsym ("clone3" over "__clone3",
  // "__GI___libc_write" over the weak "write"). Reads only this group's names.
  size_t best_name(const SymbolGroup& group) const;
  // The stored name of an entry (read through the mapping: for the few
  // functions a caller looks at).
  std::string_view name_of(const SymbolEntry& entry) const;
  // Indexes into groups() of the functions with a name that contains `text`,
  // ascending; the string tables are streamed, not mapped.
  std::vector<size_t> groups_naming(std::string_view text) const;
  // Index into groups() of the function holding va (a sized one encloses a
  // later zero-sized label, so the nearest start is not always the owner).
  std::optional<size_t> group_containing(uint64_t va) const;
  std::optional<size_t> group_at(uint64_t start) const;
  // The first group starting after va, or groups().size().
  size_t first_group_after(uint64_t va) const;

  struct Strings {
    std::shared_ptr<const MappedFile> file;
    uint64_t offset = 0;  // of the string table section in the file
    uint64_t size = 0;
  };

 private:
  void read_tables(const std::shared_ptr<const MappedFile>& file, bool symtab_only);
  void add_copied(std::string name, SymbolEntry entry);
  void index();
  std::vector<SymbolEntry> entries_;     // by start, then rank
  std::vector<SymbolGroup> groups_;
  std::vector<uint64_t> max_end_;        // the highest end among groups_[0..i]
  std::vector<uint32_t> by_name_;        // entries_ indexes by (strings, name)
  std::vector<Strings> strings_;
  std::deque<std::string> copied_names_;  // versioned and PLT names
};

}  // namespace xref
