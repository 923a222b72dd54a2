// libc's writers watched by their contract instead of instruction by
// instruction: their bound implementations here are *_evex/*_avx512 code,
// which no uprobe may go into (docs/watch.md). memcpy, memmove, mempcpy and
// memset write [rdi, rdi + rdx); strcpy and stpcpy strlen(rsi) + 1 bytes at
// rdi. An entry probe checks the destination against the ranges and keeps
// the old bytes; the implementation's ret sites read the new ones.
#pragma once

#include "process/target.h"
#include "result.h"
#include "watch/plan.h"

namespace xref {

// A module of the --in scope, by its index in WatchPlan::modules.
struct ScopedImage {
  uint32_t module = 0;
  std::shared_ptr<const ElfImage> image;
};

// Adds the contract sites of the libc the process maps (none when it maps
// no libc.so.6) to `plan`. The entry is the bound implementation's first
// instruction, or, where that is EVEX (no uprobe may go there:
// __memset_avx512_unaligned_erms starts with vpbroadcastb), the writer's
// PLT stubs in the scope's modules (calls through a pointer or -fno-plt are
// then seen only as unobserved changes: a warning says so). A writer not
// bound yet (lazy binding) is a warning too.
void add_contract_sites(const Target& target, WatchPlan& plan, const std::vector<ScopedImage>& scope);

}  // namespace xref
