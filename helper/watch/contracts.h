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

// Adds the contract sites of the libc the process maps (none when it maps
// no libc.so.6) to `plan`; a writer not bound yet (lazy binding) is a
// warning: its writes can only show as unobserved changes.
void add_contract_sites(const Target& target, WatchPlan& plan);

}  // namespace xref
