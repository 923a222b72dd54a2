// The bytes of a target's probed instructions, read from its memory and
// from the file it maps: while a uprobe is in, the instruction reads back
// as int3 (or a call, on a 5-byte nop); once it is out, as the file has it.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

struct CodeBytes {
  std::vector<int> in_memory;
  std::vector<int> in_file;
};

// The byte at each of `offsets` in `path`, through the target's mapping of
// that file (0 where none maps it), and from the file itself.
inline CodeBytes code_bytes(pid_t target, const std::string& path, const std::vector<uint64_t>& offsets) {
  struct Mapping {
    uint64_t start, end, offset;
  };
  std::vector<Mapping> mappings;
  for (const auto& line : command_lines("cat /proc/" + std::to_string(target) + "/maps")) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, mapped;
    if (!(fields >> range >> perms >> offset >> dev >> inode >> mapped) || mapped != path) continue;
    const size_t dash = range.find('-');
    mappings.push_back({std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16),
                        std::stoull(offset, nullptr, 16)});
  }
  CodeBytes bytes;
  const int memory = open(("/proc/" + std::to_string(target) + "/mem").c_str(), O_RDONLY);
  const int file = open(path.c_str(), O_RDONLY);
  for (uint64_t offset : offsets) {
    unsigned char in_memory = 0, in_file = 0;
    for (const Mapping& mapping : mappings) {
      if (offset >= mapping.offset && offset < mapping.offset + (mapping.end - mapping.start)) {
        const uint64_t live = mapping.start + (offset - mapping.offset);
        if (pread(memory, &in_memory, 1, static_cast<off_t>(live)) != 1) in_memory = 0;
      }
    }
    if (pread(file, &in_file, 1, static_cast<off_t>(offset)) != 1) in_file = 0;
    bytes.in_memory.push_back(in_memory);
    bytes.in_file.push_back(in_file);
  }
  close(memory);
  close(file);
  return bytes;
}

}  // namespace xref::test
