// The text of source lines, for `profile annotate --source`: read from the
// files DWARF names, each file once, bounded (a file over kMaxFileBytes is
// not read). A file that cannot be read is remembered, so it is reported
// once, not once per line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xref {

class SourceTexts {
 public:
  static constexpr uint64_t kMaxFileBytes = 16ull << 20;

  // Line `line` (1-based) of `file`, without its newline; nullopt when the
  // file cannot be read or is shorter.
  std::optional<std::string> line(const std::string& file, uint32_t line);
  // The files that could not be read, with why ("PATH: not found").
  const std::vector<std::string>& unreadable() const { return unreadable_; }

 private:
  std::map<std::string, std::optional<std::vector<std::string>>> files_;
  std::vector<std::string> unreadable_;
};

}  // namespace xref
