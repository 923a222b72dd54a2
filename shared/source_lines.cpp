#include "source_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "elf_notes.h"
#include "unique_fd.h"

namespace xref {

namespace {

// Bounds on what a hostile file can make us hold: far above any real
// module (Chromium has about 100k compile units).
constexpr size_t kMostUnits = size_t{1} << 20;
constexpr size_t kMostRangesPerUnit = size_t{1} << 16;
constexpr size_t kMostRanges = size_t{1} << 22;
// A lookup whose nearest range does not hold the address looks this far
// back for an enclosing one (ranges of different units rarely overlap).
constexpr size_t kOverlapLookback = 16;
// gdb's debuglink names are file names: "NAME.debug".
constexpr size_t kLongestDebuglink = 255;

// A regular file opened for reading; a FIFO or device named as a module
// must not block or be read.
Result<UniqueFd> open_regular(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int error = errno;
    const ErrorCode code = error == EACCES || error == EPERM ? ErrorCode::permission_denied : ErrorCode::file_error;
    return make_error(code, "cannot open " + path + ": " + std::strerror(error),
                      code == ErrorCode::permission_denied ? "run xref as root or as the file's owner" : "");
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) {
    return make_error(ErrorCode::elf_error, path + " is not a regular file", "name an ELF executable or library");
  }
  return fd;
}

// An ELF file read through libelf, and the DWARF libdw finds in it.
struct ElfFile {
  std::string path;
  UniqueFd fd;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;

  ElfFile() = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() {
    if (dwarf != nullptr) dwarf_end(dwarf);
    if (elf != nullptr) elf_end(elf);
  }
};

Result<std::unique_ptr<ElfFile>> open_elf(const std::string& path) {
  auto fd = open_regular(path);
  if (!fd) return fd.error();
  auto file = std::make_unique<ElfFile>();
  file->path = path;
  file->fd = std::move(*fd);
  elf_version(EV_CURRENT);
  file->elf = elf_begin(file->fd.get(), ELF_C_READ_MMAP, nullptr);
  if (file->elf == nullptr || elf_kind(file->elf) != ELF_K_ELF) {
    return make_error(ErrorCode::elf_error, path + " is not an ELF file", "name an ELF executable or library");
  }
  return file;
}

// A section by name, when the section header string table can be read.
Elf_Scn* section_named(Elf* elf, const char* name, GElf_Shdr* header) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return nullptr;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    if (gelf_getshdr(section, header) == nullptr) continue;
    const char* section_name = elf_strptr(elf, names, header->sh_name);
    if (section_name != nullptr && std::strcmp(section_name, name) == 0) return section;
  }
  return nullptr;
}

bool has_section_bytes(Elf* elf, const char* name) {
  GElf_Shdr header;
  return section_named(elf, name, &header) != nullptr && header.sh_type != SHT_NOBITS && header.sh_size > 0;
}

// Line tables and units that say where code is; a stripped module has
// neither, its --only-keep-debug part both.
bool has_dwarf_lines(Elf* elf) { return has_section_bytes(elf, ".debug_info") && has_section_bytes(elf, ".debug_line"); }

std::string build_id_of(Elf* elf) {
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    std::string id = find_build_id({static_cast<const uint8_t*>(data->d_buf), data->d_size}, 0, data->d_size);
    if (!id.empty()) return id;
  }
  return {};
}

struct Debuglink {
  std::string name;
  uint32_t crc = 0;
};

// .gnu_debuglink: a file name, NUL, padding to 4 bytes, the CRC-32 of the
// debug file (little-endian on x86-64). A name with a '/' would reach
// outside the directories gdb searches: refused.
std::optional<Debuglink> debuglink_of(Elf* elf) {
  GElf_Shdr header;
  Elf_Scn* section = section_named(elf, ".gnu_debuglink", &header);
  if (section == nullptr || header.sh_type == SHT_NOBITS) return std::nullopt;
  Elf_Data* data = elf_getdata(section, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return std::nullopt;
  const auto* bytes = static_cast<const char*>(data->d_buf);
  const size_t length = strnlen(bytes, std::min(data->d_size, kLongestDebuglink + 1));
  if (length == 0 || length > kLongestDebuglink) return std::nullopt;
  const size_t crc_at = (length + 1 + 3) & ~size_t{3};
  if (crc_at + 4 > data->d_size) return std::nullopt;
  Debuglink link{std::string(bytes, length), 0};
  if (link.name.find('/') != std::string::npos || link.name == "." || link.name == "..") return std::nullopt;
  std::memcpy(&link.crc, bytes + crc_at, 4);
  return link;
}

std::optional<uint32_t> file_crc32(int fd) {
  std::array<unsigned char, 64 * 1024> buffer;
  uLong crc = crc32(0, nullptr, 0);
  for (off_t offset = 0;;) {
    const ssize_t count = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return std::nullopt;
    if (count == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(count));
    offset += count;
  }
  return static_cast<uint32_t>(crc);
}

bool same_file(int a, int b) {
  struct stat first {}, second {};
  return ::fstat(a, &first) == 0 && ::fstat(b, &second) == 0 && first.st_dev == second.st_dev &&
         first.st_ino == second.st_ino;
}

// A candidate debug file, kept when `accept` says it belongs to the module
// and it has line tables.
template <typename Accept>
std::unique_ptr<ElfFile> debug_candidate(const std::string& path, const ElfFile& module, Accept accept) {
  auto file = open_elf(path);
  if (!file || same_file((*file)->fd.get(), module.fd.get())) return nullptr;
  if (!has_dwarf_lines((*file)->elf) || !accept(**file)) return nullptr;
  return std::move(*file);
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string joined(const std::string& directory, const std::string& name) {
  return directory.ends_with('/') ? directory + name : directory + "/" + name;
}

// The separate debug file gdb would read for `module`, or null.
std::unique_ptr<ElfFile> find_debug_file(const ElfFile& module, const std::string& debug_directory) {
  const std::string id = build_id_of(module.elf);
  if (id.size() >= 4) {
    const std::string path = joined(debug_directory, ".build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
    if (auto file = debug_candidate(path, module, [&](const ElfFile& debug) { return build_id_of(debug.elf) == id; })) {
      return file;
    }
  }
  const std::optional<Debuglink> link = debuglink_of(module.elf);
  if (!link) return nullptr;
  std::vector<std::string> directories{directory_of(module.path)};
  if (char* real = ::realpath(module.path.c_str(), nullptr)) {
    const std::string real_directory = directory_of(real);
    std::free(real);
    if (real_directory != directories[0]) directories.push_back(real_directory);
  }
  const auto crc_matches = [&](const ElfFile& debug) { return file_crc32(debug.fd.get()) == link->crc; };
  for (const std::string& directory : directories) {
    for (const std::string& path : {joined(directory, link->name), joined(directory, ".debug/" + link->name),
                                    joined(debug_directory, (directory.starts_with('/') ? directory.substr(1) : directory) +
                                                                "/" + link->name)}) {
      if (auto file = debug_candidate(path, module, crc_matches)) return file;
    }
  }
  return nullptr;
}

}  // namespace

// The lines' file, and where each compile unit's code is: [start, end)
// sorted by start, with the unit whose line table covers it.
struct SourceLines::Table {
  std::unique_ptr<ElfFile> file;
  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;
    Dwarf_Die unit{};
  };
  std::vector<Range> ranges;
  // libdw reads a unit's line table on first use and caches it in the unit.
  mutable std::mutex mutex;

  void read_ranges() {
    Dwarf_CU* unit = nullptr;
    Dwarf_CU* next = nullptr;
    size_t units = 0;
    for (; units < kMostUnits && ranges.size() < kMostRanges; ++units, unit = next) {
      Dwarf_Half version = 0;
      uint8_t unit_type = 0;
      Dwarf_Die die;
      if (dwarf_get_units(file->dwarf, unit, &next, &version, &unit_type, &die, nullptr) != 0) break;
      if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton) continue;
      add_unit_ranges(die);
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  }

  void add_unit_ranges(Dwarf_Die& die) {
    Dwarf_Addr base = 0, start = 0, end = 0;
    ptrdiff_t offset = 0;
    for (size_t count = 0; count < kMostRangesPerUnit && ranges.size() < kMostRanges; ++count) {
      offset = dwarf_ranges(&die, offset, &base, &start, &end);
      if (offset <= 0) break;
      // Start 0 is the linker's mark for code it dropped (--gc-sections), and
      // no x86-64 executable or library has code there.
      if (start == 0 || start >= end) continue;
      ranges.push_back(Range{start, end, die});
    }
  }

  // The unit whose range holds va.
  const Range* range_of(uint64_t va) const {
    auto after = std::upper_bound(ranges.begin(), ranges.end(), va,
                                  [](uint64_t value, const Range& range) { return value < range.start; });
    for (size_t step = 0; step < kOverlapLookback && after != ranges.begin(); ++step) {
      --after;
      if (va < after->end) return &*after;
    }
    return nullptr;
  }
};

Result<SourceLines> SourceLines::open(const std::string& elf_path) { return open(elf_path, kDebugDirectory); }

Result<SourceLines> SourceLines::open(const std::string& elf_path, const std::string& debug_directory) {
  auto module = open_elf(elf_path);
  if (!module) return module.error();
  std::unique_ptr<ElfFile> file =
      has_dwarf_lines((*module)->elf) ? std::move(*module) : find_debug_file(**module, debug_directory);
  SourceLines lines;
  if (file == nullptr) return lines;
  file->dwarf = dwarf_begin_elf(file->elf, DWARF_C_READ, nullptr);
  if (file->dwarf == nullptr) return lines;
  auto table = std::make_shared<Table>();
  table->file = std::move(file);
  table->read_ranges();
  if (table->ranges.empty()) return lines;
  lines.debug_file_ = table->file->path;
  lines.table_ = std::move(table);
  return lines;
}

std::optional<SourceLine> SourceLines::at(uint64_t static_va) const {
  if (table_ == nullptr) return std::nullopt;
  const std::lock_guard lock(table_->mutex);
  const Table::Range* range = table_->range_of(static_va);
  if (range == nullptr) return std::nullopt;
  Dwarf_Die unit = range->unit;
  Dwarf_Line* row = dwarf_getsrc_die(&unit, static_va);
  if (row == nullptr) return std::nullopt;
  const char* file = dwarf_linesrc(row, nullptr, nullptr);
  int line = 0, column = 0;
  if (file == nullptr || dwarf_lineno(row, &line) != 0 || line <= 0) return std::nullopt;
  if (dwarf_linecol(row, &column) != 0 || column < 0) column = 0;
  SourceLine found{file, static_cast<uint32_t>(line), static_cast<uint32_t>(column)};
  // libdw joins a file with its line table's directory; a directory that is
  // itself relative (a build with -fdebug-prefix-map=DIR=.) is joined with
  // the unit's DW_AT_comp_dir, as addr2line and eu-addr2line print it.
  Dwarf_Attribute attribute;
  const char* unit_directory = dwarf_formstring(dwarf_attr(&unit, DW_AT_comp_dir, &attribute));
  if (!found.file.starts_with('/') && unit_directory != nullptr && *unit_directory != '\0') {
    found.file = joined(unit_directory, found.file);
  }
  return found;
}

}  // namespace xref
