// One module's DWARF line table, read with elfutils' libdw: the source file
// and line of a static VA, as addr2line prints them.
//
// The lines come from the module's own DWARF, else from the separate debug
// file gdb would read: by build-id (DIR/.build-id/xx/rest.debug, the same
// build-id inside), else by .gnu_debuglink (the module's directory, its
// .debug/ subdirectory, then DIR + the module's directory; the debug file's
// CRC-32 must match the link's). DIR is /usr/lib/debug unless a caller
// (a test) names another.
//
// A module, or a debug file, is a file its owner may have written: every
// read is bounded (compile units, address ranges, the debuglink's name) and
// DWARF libdw cannot read counts as none.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "result.h"

namespace xref {

struct SourceLine {
  std::string file;  // as written in DWARF, joined with its directory: a full path when the compiler gave one
  uint32_t line = 0;
  uint32_t column = 0;  // 0 when DWARF gives none
};

class SourceLines {
 public:
  static constexpr const char* kDebugDirectory = "/usr/lib/debug";

  // Fails with file_error or permission_denied when elf_path cannot be
  // opened, elf_error when it is not an ELF file. A module without DWARF
  // lines anywhere gives a value whose at() always says nullopt.
  static Result<SourceLines> open(const std::string& elf_path);
  // The same, looking for separate debug files under debug_directory.
  static Result<SourceLines> open(const std::string& elf_path, const std::string& debug_directory);

  // The line-table row covering static_va (the last row at or before it in
  // its sequence), or nullopt when no compile unit covers it.
  std::optional<SourceLine> at(uint64_t static_va) const;
  // Where the lines come from (elf_path itself or its debug file), "" if none.
  const std::string& debug_file() const { return debug_file_; }

 private:
  struct Table;
  std::shared_ptr<Table> table_;  // null when there are no lines; shared by copies
  std::string debug_file_;
};

}  // namespace xref
