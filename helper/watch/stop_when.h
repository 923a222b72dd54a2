// --stop-when in a debugger: the condition over `value` (the bytes a write
// left) and `old` (the bytes before it), lowered for the engines' BPF
// (bpf/watch_stop.bpf.h), and the write that made it hold read back.
#pragma once

#include <optional>

struct bpf_map;

#include "bpf_abi.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"
#include "watch_stop_abi.h"

namespace xref {

// nullopt without --stop-when; an error naming the option when the
// condition does not parse or names anything but value and old.
Result<std::optional<xref_filter_program>> compile_watch_stop(const WatchRequest& request);

// The lowered condition into the engine's `stop_filter` map (nothing
// without --stop-when).
Result<void> fill_watch_stop_map(const WatchPlan& plan, bpf_map* stop_filter);

// The stop the BPF program noted (its .bss), once it fired.
std::optional<WatchStop> read_watch_stop(const xref_watch_stop& noted);

}  // namespace xref
