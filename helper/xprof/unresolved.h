// Samples a report could not place (no file, another build, no DWARF line,
// no decoded instruction), counted by why: reported apart, never dropped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xref {

struct UnresolvedSamples {
  std::string reason;
  uint64_t samples = 0;
};

// Most samples first.
std::vector<UnresolvedSamples> unresolved_rows(const std::map<std::string, uint64_t>& by_reason);

}  // namespace xref
