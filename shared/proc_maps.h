// /proc/PID/maps, parsed without trusting paths: they are labels (spaces,
// "\012" escapes and " (deleted)" suffixes kept as reported), never a
// licence to open an arbitrary file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace xref {

struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string perms;    // "r-xp"
  uint64_t offset = 0;  // pgoff in bytes: the file offset mapped at `start`
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;     // as reported, without the " (deleted)" suffix
  bool deleted = false; // the kernel appended " (deleted)"

  bool readable() const { return perms.size() > 0 && perms[0] == 'r'; }
  bool writable() const { return perms.size() > 1 && perms[1] == 'w'; }
  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool shared() const { return perms.size() > 3 && perms[3] == 's'; }
  bool file_backed() const { return inode != 0; }
  // "[heap]", "[stack]", "[vdso]", "[vvar]", "[vsyscall]", "[anon:name]" ...
  bool pseudo() const { return inode == 0 && !path.empty() && path.front() == '['; }
  bool contains(uint64_t va) const { return va >= start && va < end; }
  uint64_t size() const { return end - start; }
  // Label for messages: the path, "[anonymous]" when there is none.
  std::string label() const;
  // The path with the kernel's "\012" newline escape decoded.
  std::string unescaped_path() const;
};

Result<std::vector<MapEntry>> parse_maps(std::string_view text);
Result<std::vector<MapEntry>> read_maps(pid_t pid);

// The entry containing va, or nullptr.
const MapEntry* find_mapping(const std::vector<MapEntry>& maps, uint64_t va);

}  // namespace xref
