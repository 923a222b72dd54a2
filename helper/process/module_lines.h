// The DWARF source lines of a process's modules (shared/source_lines.h),
// each module's table opened once, on its first question.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "address_space.h"
#include "source_lines.h"

namespace xref {

class ModuleLines {
 public:
  // The line of a static VA of `module`; nullopt when the module has no
  // DWARF lines (its own or a separate debug file's) or none covers the VA.
  std::optional<SourceLine> at(const Module& module, uint64_t static_va);

 private:
  // A module whose file cannot be read has no lines: nullptr.
  std::map<const Module*, std::shared_ptr<const SourceLines>> lines_;
};

}  // namespace xref
