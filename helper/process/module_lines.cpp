#include "process/module_lines.h"

namespace xref {

std::optional<SourceLine> ModuleLines::at(const Module& module, uint64_t static_va) {
  auto found = lines_.find(&module);
  if (found == lines_.end()) {
    // Opened as the process maps it (/proc/PID/map_files/...): the same file
    // even when its path was replaced since; source_lines follows that link
    // to the module's directory for a .gnu_debuglink.
    auto lines = SourceLines::open(module.open_path.empty() ? module.path : module.open_path);
    found = lines_.emplace(&module, lines ? std::make_shared<const SourceLines>(std::move(*lines)) : nullptr).first;
  }
  if (found->second == nullptr) return std::nullopt;
  return found->second->at(static_va);
}

}  // namespace xref
