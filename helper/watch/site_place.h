// Where a watch uprobe may go: a static VA of a module with a file offset,
// not EVEX (the kernel runs a uprobe there wrongly here, issue 23), not an
// instruction the kernel refuses (lock prefix, segment override).
#pragma once

#include <cstdint>
#include <optional>

#include "elf_image.h"
#include "watch/plan.h"

namespace xref {

// EVEX-encoded at `va` (0x62 after the legacy prefixes), or not file-backed.
bool evex_at(const ElfImage& image, uint64_t va);

// A site of plan module `module` (load bias `bias`) at static `va`, its
// operand still empty; nullopt where no uprobe may go.
std::optional<WatchSite> placed_site(const ElfImage& image, uint32_t module, uint64_t bias, uint64_t va);

}  // namespace xref
